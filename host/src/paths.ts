// Where the built firmware and the example boards are: in the repo, its build output and
// boards/; in an installed package (npm pack), the copies the package ships in assets/.
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

/** host/ (from host/src in tests, host/dist in the bin, or the installed package's root). */
export const PKG_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
export const REPO_ROOT = resolve(PKG_ROOT, '..');
/** True in a clone of the repo (the firmware can be built here), false in an installed package. */
export const IN_REPO = existsSync(resolve(REPO_ROOT, 'firmware', 'package.json'));
const ASSETS = resolve(PKG_ROOT, 'assets');

/**
 * The host's own folder (journal, MCP tokens, the journals of stdio hosts that clients start): `.proofrig/`
 * in a clone (where `npm start` runs); for an installed package the user's state folder
 * ($XDG_STATE_HOME/proofrig, else ~/.local/state/proofrig); PROOFRIG_HOME overrides both.
 */
export const STATE_HOME = process.env.PROOFRIG_HOME
  ? resolve(process.env.PROOFRIG_HOME)
  : IN_REPO
    ? resolve(REPO_ROOT, '.proofrig')
    : resolve(process.env.XDG_STATE_HOME || resolve(homedir(), '.local', 'state'), 'proofrig');
/** The journal every command defaults to (`--db`). */
export const DEFAULT_DB = resolve(STATE_HOME, 'journal.db');

export const FIRMWARE_FILE = IN_REPO ? resolve(REPO_ROOT, 'firmware', 'dist', 'proofrig.js') : resolve(ASSETS, 'proofrig.js');
/** The same firmware with the MQTT device link (src/mqtt.ts in place of src/ws.ts). */
export const FIRMWARE_MQTT_FILE = IN_REPO ? resolve(REPO_ROOT, 'firmware', 'dist', 'proofrig-mqtt.js') : resolve(ASSETS, 'proofrig-mqtt.js');
export const BOARDS_DIR = IN_REPO ? resolve(REPO_ROOT, 'boards') : resolve(ASSETS, 'boards');

/** The example boards that come with proofrig, by id. */
export function bundledBoards(): string[] {
  try {
    return readdirSync(BOARDS_DIR)
      .filter((f) => f.endsWith('.json') && f !== 'board.schema.json')
      .map((f) => f.slice(0, -5));
  } catch {
    return [];
  }
}

/** A board argument: a file path, or the id of a bundled board ("relay-rig-4ch"). */
export function resolveBoardFile(arg: string): string {
  if (existsSync(arg)) return arg;
  const bundled = resolve(BOARDS_DIR, arg.endsWith('.json') ? arg.replace(/^.*[\\/]/, '') : arg + '.json');
  if (!/[\\/]/.test(arg) && existsSync(bundled)) return bundled;
  throw new Error(`board file ${arg} does not exist (bundled boards, usable by id: ${bundledBoards().join(', ') || 'none'})`);
}
