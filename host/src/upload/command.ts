// `proofrig upload`: the firmware and a rig config onto an ESP32 running Espruino, verified by read-back,
// the device registered with the host and rebooted into the firmware.
import { Option, type Command } from 'commander';
import { intArg } from '../int-arg.js';
import { exitCodeOf, UploadError } from './errors.js';
import { upload, type UploadOptions, type UploadResult } from './upload.js';

interface Out {
  write(text: string): unknown;
}

export interface UploadCommandDeps {
  stdout?: Out;
  stderr?: Out;
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
  wifiPassword?: string;
  db: string;
  firmware?: string;
  baud?: number;
  verbose?: boolean;
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
    .option('--host <url>', 'where the device dials the host: ws://HOST:PORT (path /device added), e.g. ws://192.168.1.20:8787')
    .option('--wifi-ssid <ssid>', 'Wi-Fi network the board joins at boot')
    .option('--wifi-password <password>', 'its password ("" for an open network); never printed')
    .option('--db <path>', 'journal of the host the device will dial (its device store)', '.proofrig/journal.db')
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
  if (o.wifiSsid === undefined && o.wifiPassword !== undefined) return fail('BAD_OPTION', '--wifi-password needs --wifi-ssid', 2);

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
  if (o.wifiSsid !== undefined) opts.wifi = { ssid: o.wifiSsid, password: o.wifiPassword as string };
  let r: UploadResult;
  try {
    r = await upload(opts);
  } catch (e) {
    if (e instanceof UploadError) return fail(e.code, e.message, exitCodeOf(e.code));
    return fail('UPLOAD_FAILED', (e as Error)?.message ?? String(e), 1);
  }
  stdout.write(
    `done: ${r.deviceId} (${r.board.name}) runs the proofrig firmware and dials ${r.host}; ` +
      `the host serving there must use this journal (proofrig serve --db ${r.db}).\n`,
  );
  return 0;
}
