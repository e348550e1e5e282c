// `proofrig upload`: the firmware and a rig config onto an ESP32 running Espruino, verified by read-back,
// the device registered with the host and rebooted into the firmware.
import { DEFAULT_DB } from '../paths.js';
import { existsSync, readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { intArg } from '../cli/int-arg.js';
import { exitCodeOf, UploadError } from './errors.js';
import { upload, type UploadOptions, type UploadResult } from './upload.js';
import { redactUrl } from '../core/journal/db-url.js';

interface Out {
  write(text: string): unknown;
}

export interface UploadCommandDeps {
  stdout?: Out;
  stderr?: Out;
  /** Environment to read PROOFRIG_WIFI_PASSWORD from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Ask for the Wi-Fi password without echo; default: the terminal, when stdin is one. */
  prompt?: (question: string) => Promise<string>;
  /** Default: sets process.exitCode. */
  setExitCode?: (code: number) => void;
}

export interface UploadCommandOptions {
  port?: string;
  tcp?: string;
  board?: string;
  deviceId?: string;
  host?: string;
  wifiSsid?: string;
  /** Refused: a password on the command line shows in ps and shell history. */
  wifiPassword?: string;
  wifiPasswordFile?: string;
  db: string;
  firmware?: string;
  baud?: number;
  verbose?: boolean;
}

export const WIFI_ENV = 'PROOFRIG_WIFI_PASSWORD';

/** The Wi-Fi password from --wifi-password-file, else the environment, else a hidden prompt. */
async function wifiPasswordFrom(o: UploadCommandOptions, deps: UploadCommandDeps): Promise<string | { error: string }> {
  if (o.wifiPasswordFile !== undefined) {
    if (!existsSync(o.wifiPasswordFile)) return { error: `--wifi-password-file ${o.wifiPasswordFile} does not exist` };
    // One line; the trailing newline an editor adds is not part of the password.
    return readFileSync(o.wifiPasswordFile, 'utf8').replace(/\r?\n$/, '');
  }
  const env = deps.env ?? process.env;
  if (env[WIFI_ENV] !== undefined) return env[WIFI_ENV] as string;
  const prompt = deps.prompt ?? (process.stdin.isTTY ? promptHidden : undefined);
  if (!prompt) return { error: `--wifi-ssid needs its password: set ${WIFI_ENV}, pass --wifi-password-file FILE, or run in a terminal to be asked` };
  return prompt(`Wi-Fi password for "${o.wifiSsid}" (empty for an open network): `);
}

/** Read one line from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolve) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    let s = '';
    const onData = (d: Buffer) => {
      for (const ch of d.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          return resolve(s);
        }
        if (ch === '\u0003') {
          stdin.setRawMode(false);
          process.stderr.write('\n');
          process.exit(130);
        }
        if (ch === '\u007f' || ch === '\b') s = s.slice(0, -1);
        else s += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** Adds `upload` to the proofrig program. */
export function registerUploadCommand(program: Command, deps: UploadCommandDeps = {}): Command {
  program
    .command('upload')
    .description(
      'Write the proofrig firmware (Storage .bootcde, with EspruinoTools) and a rig config with a new device secret (Storage proofrig.json) ' +
        'to an ESP32 running Espruino, check both by CRC32 read-back, register the device in the host journal and reboot it (load()).',
    )
    .option('--port <path>', 'serial port of the board, e.g. /dev/ttyUSB0 or COM3')
    .option('--tcp <host[:port]>', "the board's telnet console (port 23 by default), or a simulated board's (proofrig sim --console-port)")
    .option('--board <file>', 'board definition, e.g. boards/relay-rig-4ch.json')
    .option('--device-id <id>', 'id the host will know the device by (A-Z a-z 0-9 _ . : -, up to 64)')
    .option('--host <url>', 'where the device dials the host: ws://HOST:PORT (path /device added), e.g. ws://192.168.1.20:8787; or mqtt://HOST[:PORT] to reach it through an MQTT broker (the MQTT firmware; then run proofrig broker acl)')
    .option('--wifi-ssid <ssid>', 'Wi-Fi network the board joins at boot')
    .option('--wifi-password-file <file>', `file holding its password (else ${WIFI_ENV}, else asked at the terminal; empty = open network); never printed`)
    .addOption(new Option('--wifi-password <password>').hideHelp())
    .option('--db <path>', 'journal of the host the device will dial (its device store)', DEFAULT_DB)
    .option('--firmware <file>', 'firmware file to send (default firmware/dist/proofrig.js, built when missing)')
    .addOption(new Option('--baud <rate>', 'console baud rate for --port').default(115200).argParser(intArg('--baud', 1200, 5_000_000)))
    .option('--verbose', 'print the console traffic and EspruinoTools output (secrets redacted)', false)
    .action(async (o: UploadCommandOptions) => {
      const code = await runUploadCommand(o, deps);
      (deps.setExitCode ?? ((c: number) => void (process.exitCode = c)))(code);
    });
  return program;
}

/** The command's body: 0 uploaded, verified, registered and rebooted; 1 failed; 2 wrong call. */
export async function runUploadCommand(o: UploadCommandOptions, deps: UploadCommandDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  const fail = (code: string, message: string, exit: number) => {
    stderr.write(`proofrig upload: ${code}: ${message}\n`);
    return exit;
  };
  const missing = [
    ['--board', o.board],
    ['--device-id', o.deviceId],
    ['--host', o.host],
  ].filter(([, v]) => v === undefined || v === '');
  if (missing.length) return fail('BAD_OPTION', `${missing.map(([k]) => k).join(', ')} ${missing.length > 1 ? 'are' : 'is'} required`, 2);
  if (o.wifiPassword !== undefined)
    return fail('BAD_OPTION', `--wifi-password is not accepted: a command-line argument shows in ps and in shell history. Set ${WIFI_ENV}, pass --wifi-password-file FILE, or leave both out to be asked at the terminal`, 2);
  if (o.wifiSsid === undefined && o.wifiPasswordFile !== undefined) return fail('BAD_OPTION', '--wifi-password-file needs --wifi-ssid', 2);
  let wifiPassword: string | undefined;
  if (o.wifiSsid !== undefined) {
    const got = await wifiPasswordFrom(o, deps);
    if (typeof got !== 'string') return fail('BAD_OPTION', got.error, 2);
    wifiPassword = got;
  }

  const opts: UploadOptions = {
    port: o.port,
    tcp: o.tcp,
    boardFile: o.board!,
    deviceId: o.deviceId!,
    hostUrl: o.host!,
    db: o.db,
    firmwareFile: o.firmware,
    baud: o.baud,
    log: (line) => stdout.write(`${line}\n`),
    debug: o.verbose ? (line) => stderr.write(`  ${line}\n`) : undefined,
  };
  if (o.wifiSsid !== undefined) opts.wifi = { ssid: o.wifiSsid, password: wifiPassword as string };
  let r: UploadResult;
  try {
    r = await upload(opts);
  } catch (e) {
    if (e instanceof UploadError) return fail(e.code, e.message, exitCodeOf(e.code));
    return fail('UPLOAD_FAILED', (e as Error)?.message ?? String(e), 1);
  }
  stdout.write(
    `done: ${r.deviceId} (${r.board.name}) runs the proofrig firmware and dials ${r.host}; ` +
      `the host serving there must use this journal (proofrig serve --db ${redactUrl(r.db)}).\n`,
  );
  return 0;
}
