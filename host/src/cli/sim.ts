// `proofrig sim`: one simulated ESP32 with its Espruino console on a TCP port, until Ctrl-C. With --blank it
// is a freshly flashed board (Espruino only: no firmware, no config), the target for `proofrig upload --tcp`;
// without, it already holds the built firmware and a config in Storage, as a board uploaded earlier does.
import { existsSync, readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { intArg } from './int-arg.js';
import { BOOT_CODE_FILE, CONFIG_FILE, DEVICE_PATH, isId, type BoardDef, type RigConfig } from '@proofrig/protocol';
import { newSecret } from '../core/ids.js';
import { Journal } from '../core/journal/journal.js';
import { FIRMWARE_FILE } from '../paths.js';
import net from 'node:net';
import { loadBoard } from './board.js';
import type { ChipSpeed, Engine, SimRig } from '@proofrig/sim';
import { untilSignal } from './signals.js';

interface Out {
  write(text: string): unknown;
}

export interface SimCommandOptions {
  board?: string;
  deviceId?: string;
  consolePort?: number;
  blank?: boolean;
  host: string;
  db?: string;
  seed?: number;
  quiet?: boolean;
  engine?: Engine;
  /** With engine espruino: run the interpreter no faster than an ESP32 (a CPU quota, calibrated here). */
  chipSpeed?: boolean;
}

export interface SimCommandDeps {
  stdout?: Out;
  stderr?: Out;
  setExitCode?: (code: number) => void;
  /** Resolves when the simulation should stop (default: SIGINT or SIGTERM). */
  until?: (rig: SimRig, port: number) => Promise<void>;
}

/** Adds `sim` to the proofrig program. */
export function registerSimCommand(program: Command, deps: SimCommandDeps = {}): Command {
  program
    .command('sim')
    .description(
      'Run one simulated ESP32 with its Espruino console on a TCP port (like the telnet console of a real one) until Ctrl-C; ' +
        'with --blank it is freshly flashed (no firmware, no config), ready for `proofrig upload --tcp`.',
    )
    .option('--board <file>', 'board definition of the rig around the chip, e.g. boards/relay-rig-4ch.json')
    .option('--device-id <id>', 'device id in the stored config (default: the board id; ignored with --blank)')
    .addOption(new Option('--console-port <port>', 'TCP port of the console (0 = any free port)').argParser(intArg('--console-port', 0, 65535)))
    .option('--blank', 'a freshly flashed board: Espruino only, empty Storage', false)
    .option('--host <url>', 'without --blank: the host the stored config dials', `ws://127.0.0.1:8787${DEVICE_PATH}`)
    .option('--db <path>', 'without --blank: register the stored config\'s device and secret in this journal')
    .addOption(new Option('--seed <n>', 'seed of the rig physics').argParser(intArg('--seed', 0, 0xffffffff)))
    .option('--quiet', 'do not print the chip\'s console output', false)
    .addOption(
      new Option('--engine <engine>', 'where the firmware runs: vm, or espruino (the real interpreter named by PROOFRIG_ESPRUINO, its own telnet console)')
        .choices(['vm', 'espruino'])
        .default('vm'),
    )
    .option('--chip-speed', 'with --engine espruino: run the interpreter no faster than an ESP32 (a CPU quota on its process, calibrated on this machine; needs root and the cgroup v1 cpu controller)', false)
    .action(async (o: SimCommandOptions) => {
      const code = await runSimCommand(o, deps);
      (deps.setExitCode ?? ((c: number) => void (process.exitCode = c)))(code);
    });
  return program;
}

/** The command's body: runs until `until` resolves; 0 after a clean stop, 2 for a wrong call, 1 if the port is taken. */
export async function runSimCommand(o: SimCommandOptions, deps: SimCommandDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  const fail = (code: string, msg: string, exit: number) => {
    stderr.write(`proofrig sim: ${code}: ${msg}\n`);
    return exit;
  };
  if (!o.board) return fail('BAD_OPTION', '--board is required (e.g. boards/relay-rig-4ch.json)', 2);
  if (o.consolePort === undefined) return fail('BAD_OPTION', '--console-port is required (0 = any free port)', 2);
  let board: BoardDef;
  try {
    board = loadBoard(o.board);
  } catch (e) {
    return fail('BAD_BOARD', (e as Error).message, 2);
  }
  const deviceId = o.deviceId ?? board.id;
  if (!isId(deviceId)) return fail('BAD_OPTION', `--device-id ${JSON.stringify(deviceId)}: must be 1-64 characters of A-Z a-z 0-9 _ . : -`, 2);

  const { SimRig, espruinoBinary, chipSpeedUnavailable } = await import('@proofrig/sim');
  const print = o.quiet ? undefined : (line: string) => stdout.write(`[esp32] ${line}\n`);
  if (o.chipSpeed && o.engine !== 'espruino') return fail('BAD_OPTION', '--chip-speed needs --engine espruino', 2);
  if (o.engine === 'espruino') {
    try {
      espruinoBinary();
    } catch (e) {
      return fail('NO_ESPRUINO', (e as Error).message, 2);
    }
    const why = o.chipSpeed ? chipSpeedUnavailable() : undefined;
    if (why) return fail('NO_CHIP_SPEED', why, 2);
    return runOnEspruino(o, board, deviceId, print, deps, SimRig);
  }
  const rig = new SimRig({ seed: o.seed, console: print });
  if (!o.blank) {
    if (!existsSync(FIRMWARE_FILE)) return fail('NO_FIRMWARE', `${FIRMWARE_FILE} is missing; build it with: npm run build (or use --blank)`, 1);
    const secret = newSecret();
    const config: RigConfig = { dev: deviceId, secret, host: o.host, board };
    rig.storage.write(BOOT_CODE_FILE, readFileSync(FIRMWARE_FILE, 'latin1'));
    rig.storage.write(CONFIG_FILE, JSON.stringify(config));
    if (o.db) {
      const j = new Journal(o.db);
      try {
        j.provision(deviceId, secret, board);
      } finally {
        j.close();
      }
    }
  }
  let port: number;
  try {
    rig.boot();
    port = await rig.serveConsole(o.consolePort);
  } catch (e) {
    rig.shutdown();
    return fail('CONSOLE_PORT', `cannot serve the console on port ${o.consolePort}: ${(e as Error).message}`, 1);
  }
  const lines = [
    `simulated ESP32 (${o.blank ? 'blank: Espruino only, empty Storage' : `proofrig firmware, device ${deviceId}, dialling ${o.host}`}), rig ${board.id}`,
    `  Espruino console: tcp://127.0.0.1:${port}`,
  ];
  if (o.blank)
    lines.push(
      `  upload to it:     proofrig upload --tcp 127.0.0.1:${port} --board ${o.board} --device-id ${deviceId} --host ws://127.0.0.1:8787`,
    );
  lines.push('  Ctrl-C stops it.');
  stdout.write(lines.join('\n') + '\n');
  await (deps.until ?? untilSignal)(rig, port);
  rig.shutdown();
  return 0;
}

/** `proofrig sim --engine espruino`: the real interpreter serves its own console with --telnet. */
async function runOnEspruino(
  o: SimCommandOptions,
  board: BoardDef,
  deviceId: string,
  print: ((line: string) => void) | undefined,
  deps: SimCommandDeps,
  Rig: typeof SimRig,
): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const port = o.consolePort ? o.consolePort : await freePort();
  let config: RigConfig | undefined;
  if (!o.blank) {
    if (!existsSync(FIRMWARE_FILE)) {
      (deps.stderr ?? process.stderr).write(`proofrig sim: NO_FIRMWARE: ${FIRMWARE_FILE} is missing; build it with: npm run build (or use --blank)\n`);
      return 1;
    }
    config = { dev: deviceId, secret: newSecret(), host: o.host, board };
    if (o.db) {
      const j = new Journal(o.db);
      try {
        j.provision(deviceId, config.secret, board);
      } finally {
        j.close();
      }
    }
  }
  const rig = new Rig({
    engine: 'espruino',
    telnetPort: port,
    seed: o.seed,
    console: print,
    config,
    firmwarePath: o.blank ? undefined : FIRMWARE_FILE,
    chipSpeed: o.chipSpeed,
  });
  rig.boot();
  const chip = rig.espruino?.chipSpeed;
  stdout.write(
    [
      `simulated ESP32 on the real Espruino interpreter (${o.blank ? 'blank: Espruino only, empty Storage' : `proofrig firmware, device ${deviceId}, dialling ${o.host}`}), rig ${board.id}`,
      ...(chip ? [`  at chip speed: ${chipSpeedText(chip)}`] : []),
      `  Espruino console: tcp://127.0.0.1:${port}`,
      '  Ctrl-C stops it.',
    ].join('\n') + '\n',
  );
  await (deps.until ?? untilSignal)(rig, port);
  rig.shutdown();
  return 0;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** One line on the chip-speed calibration, for the banners of `sim` and `serve`. */
export function chipSpeedText(c: ChipSpeed): string {
  return `this machine ${c.machineNs.toFixed(3)} ns per interpreter instruction, chip ${c.chipNs} ns: a quota of ${c.quotaUs} µs per ${c.periodUs} µs (${(c.share * 100).toFixed(2)} % of a CPU)`;
}
