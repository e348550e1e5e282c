// `proofrig rigs`: many simulated rigs (each the built firmware in its own vm context) in one process,
// dialling a host in another process, so load tests and the bench keep devices out of the host's
// event loop. Rigs come from a count of one board or from a list of `board[=id]` lines.
import { existsSync, readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { intArg } from './int-arg.js';
import { BOOT_CODE_FILE, CONFIG_FILE, DEVICE_PATH, isId, type BoardDef, type RigConfig } from '@proofrig/protocol';
import { newSecret } from '../core/ids.js';
import { Journal } from '../core/journal/journal.js';
import { FIRMWARE_FILE } from '../paths.js';
import { parseSimSpec } from '../serve.js';
import { SimRig } from '@proofrig/sim';
import { untilSignal } from './signals.js';
import { loadBoard } from './board.js';

interface Out {
  write(text: string): unknown;
}

export interface RigsCommandOptions {
  board?: string;
  count?: number;
  list?: string;
  idPrefix?: string;
  host: string;
  db?: string;
  seed?: number;
}

export interface RigsCommandDeps {
  stdout?: Out;
  stderr?: Out;
  setExitCode?: (code: number) => void;
  /** Resolves when the rigs should stop (default: SIGINT or SIGTERM). */
  until?: (rigs: Map<string, SimRig>) => Promise<void>;
}

export function registerRigsCommand(program: Command, deps: RigsCommandDeps = {}): Command {
  program
    .command('rigs')
    .description(
      'Run many simulated rigs (the built firmware, one vm context each) in this process, dialling a proofrig host, until Ctrl-C. ' +
        'Give --board with --count, or --list with one board[=id] per line.',
    )
    .option('--board <file>', 'board definition every rig uses, e.g. boards/relay-rig-4ch.json')
    .addOption(new Option('--count <n>', 'how many rigs of --board (ids <prefix>-1 .. <prefix>-n)').argParser(intArg('--count', 1, 10000)))
    .option('--id-prefix <id>', 'device id prefix with --count (default: the board id)')
    .option('--list <file>', 'a file of rigs, one board[=device-id] per line (# comments)')
    .option('--host <url>', 'the host the rigs dial', `ws://127.0.0.1:8787${DEVICE_PATH}`)
    .requiredOption('--db <path>', "the host's journal: each rig's device id and fresh secret are provisioned there")
    .addOption(new Option('--seed <n>', 'seed of the rig physics (rig i uses seed + i)').argParser(intArg('--seed', 0, 0xffffffff)))
    .action(async (o: RigsCommandOptions) => {
      const code = await runRigsCommand(o, deps);
      (deps.setExitCode ?? ((c: number) => void (process.exitCode = c)))(code);
    });
  return program;
}

/** Runs until `until` resolves: 0 after a clean stop, 2 for a wrong call, 1 without a built firmware. */
export async function runRigsCommand(o: RigsCommandOptions, deps: RigsCommandDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  const fail = (code: string, msg: string, exit: number) => {
    stderr.write(`proofrig rigs: ${code}: ${msg}\n`);
    return exit;
  };
  if (!o.db) return fail('BAD_OPTION', '--db is required', 2);
  if ((o.list === undefined) === (o.board === undefined)) return fail('BAD_OPTION', 'give either --board (with --count) or --list', 2);
  if (o.list !== undefined && o.count !== undefined) return fail('BAD_OPTION', '--count goes with --board, not --list', 2);
  const specs: { boardFile: string; deviceId?: string }[] = [];
  if (o.board !== undefined) {
    const n = o.count ?? 1;
    for (let i = 1; i <= n; i++) specs.push({ boardFile: o.board, deviceId: n === 1 && !o.idPrefix ? undefined : `${o.idPrefix ?? '\0'}-${i}` });
  } else {
    if (!existsSync(o.list!)) return fail('BAD_LIST', `list file ${o.list} does not exist`, 2);
    for (const raw of readFileSync(o.list!, 'utf8').split('\n')) {
      const line = raw.replace(/#.*/, '').trim();
      if (line) specs.push(parseSimSpec(line));
    }
    if (specs.length === 0) return fail('BAD_LIST', `list file ${o.list} names no rigs`, 2);
  }
  const boards = new Map<string, BoardDef>();
  for (const s of specs) {
    if (boards.has(s.boardFile)) continue;
    let b: BoardDef | string;
    try {
      b = loadBoard(s.boardFile);
    } catch (e) {
      b = (e as Error).message;
    }
    if (typeof b === 'string') return fail('BAD_BOARD', b, 2);
    boards.set(s.boardFile, b);
  }
  const rigsById = new Map<string, { board: BoardDef }>();
  for (const s of specs) {
    const board = boards.get(s.boardFile)!;
    const id = s.deviceId === undefined ? board.id : s.deviceId.replace('\0', board.id);
    if (!isId(id)) return fail('BAD_OPTION', `device id ${JSON.stringify(id)}: must be 1-64 characters of A-Z a-z 0-9 _ . : -`, 2);
    if (rigsById.has(id)) return fail('BAD_LIST', `device id ${id} appears twice`, 2);
    rigsById.set(id, { board });
  }
  if (!existsSync(FIRMWARE_FILE)) return fail('NO_FIRMWARE', `${FIRMWARE_FILE} is missing; build it with: npm run build`, 1);
  const firmware = readFileSync(FIRMWARE_FILE, 'latin1');

  const rigs = new Map<string, SimRig>();
  const journal = new Journal(o.db);
  try {
    let i = 0;
    for (const [id, { board }] of rigsById) {
      const secret = newSecret();
      journal.provision(id, secret, board);
      const rig = new SimRig({ seed: o.seed === undefined ? undefined : (o.seed + i++) >>> 0 });
      const config: RigConfig = { dev: id, secret, host: o.host, board };
      rig.storage.write(BOOT_CODE_FILE, firmware);
      rig.storage.write(CONFIG_FILE, JSON.stringify(config));
      rigs.set(id, rig);
    }
  } finally {
    journal.close();
  }
  for (const rig of rigs.values()) rig.boot();
  stdout.write(`${rigs.size} simulated rig(s) running the built firmware, dialling ${o.host}; Ctrl-C stops them.\n`);
  await (deps.until ?? untilSignal)(rigs);
  for (const rig of rigs.values()) rig.shutdown();
  return 0;
}
