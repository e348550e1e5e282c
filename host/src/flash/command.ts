// `proofrig flash`: put the Espruino interpreter on an ESP32 from the command line.
import { Option, type Command } from 'commander';
import { intArg } from '../cli/int-arg.js';
import cliProgress from 'cli-progress';
import {
  DEFAULT_FLASH_BAUD,
  describePort,
  FlashError,
  flashEspruino,
  listPorts,
  ROM_BAUD,
  type FlashOptions,
  type FlashProgress,
  type FlashResult,
} from './flash.js';
import type { PortLike } from './web-serial-adapter.js';

interface Out {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface FlashCommandDeps {
  /** What --port opens; default: the serial port at that path. Tests hand in the ROM double. */
  openPort?: (path: string) => PortLike | string;
  stdout?: Out;
  /** Progress bars, errors and (with --verbose) esptool-js output go here. */
  stderr?: Out;
  /** Default: sets process.exitCode. */
  setExitCode?: (code: number) => void;
  /** Extra options for flashEspruino (tests shorten connectAttempts). */
  flashOptions?: Partial<FlashOptions>;
}

export interface FlashCommandOptions {
  port?: string;
  baud: number;
  firmware?: string;
  erase: boolean;
  compress: boolean;
  list?: boolean;
  verbose?: boolean;
}

/** Adds `flash` to the proofrig program. */
export function registerFlashCommand(program: Command, deps: FlashCommandDeps = {}): Command {
  program
    .command('flash')
    .description(
      'Put the Espruino interpreter on a bare ESP32 over its serial port (esptool-js): writes the release ' +
        '(bootloader.bin @0x1000, partitions_espruino.bin @0x8000, espruino_esp32.bin @0x10000), checks each region by MD5, resets into Espruino.',
    )
    .option('--port <path>', 'serial port of the ESP32, e.g. /dev/ttyUSB0 or COM3 (see --list)')
    .addOption(new Option('--baud <rate>', `rate for writing; the ROM bootloader syncs at ${ROM_BAUD} first`).default(DEFAULT_FLASH_BAUD).argParser(intArg('--baud', 9600, 5_000_000)))
    .option('--firmware <dir|tgz>', 'the Espruino ESP32 release: its folder, its .tgz, or the release .zip')
    .option('--erase', 'erase the whole flash first (also wipes JavaScript saved in Storage)', false)
    .option('--no-compress', 'send the images uncompressed (slower; for picky USB-serial bridges)')
    .option('--list', 'list serial ports and exit')
    .option('--verbose', "print esptool-js's output", false)
    .action(async (o: FlashCommandOptions) => {
      const code = await runFlashCommand(o, deps);
      (deps.setExitCode ?? ((c: number) => void (process.exitCode = c)))(code);
    });
  return program;
}

/** The command's body: returns the exit code (0 flashed and verified, or listed; 1 failed). */
export async function runFlashCommand(o: FlashCommandOptions, deps: FlashCommandDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  const fail = (code: string, message: string) => {
    stderr.write(`proofrig flash: ${code}: ${message}\n`);
    return 1;
  };

  if (o.list) {
    try {
      const ports = await listPorts();
      if (!ports.length) stdout.write('No serial ports found. Is the board plugged in, with a USB cable that carries data?\n');
      for (const p of ports) stdout.write(`${describePort(p)}\n`);
      return 0;
    } catch (e) {
      return fail('LIST_FAILED', (e as Error).message);
    }
  }
  if (!o.port) return fail('BAD_OPTION', '--port is required (run `proofrig flash --list` to see the serial ports)');
  if (!o.firmware) {
    return fail('BAD_OPTION', '--firmware is required: the Espruino ESP32 release folder or .tgz (from https://www.espruino.com/binaries/)');
  }

  const progress = new ProgressView(stderr);
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line);
    if (recent.length > 8) recent.shift();
    if (o.verbose) progress.log(line);
  };
  let result: FlashResult;
  try {
    result = await flashEspruino({
      ...deps.flashOptions,
      port: deps.openPort ? deps.openPort(o.port) : o.port,
      firmware: o.firmware,
      baud: o.baud,
      erase: o.erase,
      compress: o.compress,
      log,
      onProgress: (p) => progress.update(p),
    });
  } catch (e) {
    progress.stop();
    const code = e instanceof FlashError ? e.code : 'FLASH_FAILED';
    // After a failed write the last lines of the log help a bug report; elsewhere they are noise.
    if (!o.verbose && recent.length && (code === 'VERIFY_MISMATCH' || code === 'FLASH_FAILED')) {
      stderr.write(`last lines of the flashing log:\n${recent.map((l) => `  ${l}`).join('\n')}\n`);
    }
    if (e instanceof FlashError) return fail(e.code, e.message);
    return fail('FLASH_FAILED', (e as Error)?.stack ?? String(e));
  }
  progress.stop();
  stdout.write(summary(result));
  return 0;
}

/** One bar per file on a terminal; a line per file otherwise. */
class ProgressView {
  private multi: cliProgress.MultiBar | null = null;
  private bars = new Map<number, cliProgress.SingleBar>();
  private announced = new Set<number>();
  private finished = new Set<number>();

  constructor(private readonly out: Out) {}

  update(p: FlashProgress): void {
    if (this.out.isTTY) {
      if (!this.multi) {
        this.multi = new cliProgress.MultiBar(
          {
            stream: this.out as NodeJS.WritableStream,
            format: ' {name} |{bar}| {percentage}% | {value}/{total} bytes{note}',
            hideCursor: true,
            clearOnComplete: false,
            autopadding: true,
          },
          cliProgress.Presets.shades_classic,
        );
      }
      let bar = this.bars.get(p.index);
      if (!bar) {
        bar = this.multi.create(p.total, 0, { name: p.name.padEnd(24), note: p.compressed ? ' sent (compressed)' : ' sent' });
        this.bars.set(p.index, bar);
      }
      bar.update(p.written);
      return;
    }
    if (!this.announced.has(p.index)) {
      this.announced.add(p.index);
      this.out.write(`writing ${p.name} at 0x${p.address.toString(16)}: ${p.total} bytes${p.compressed ? ' compressed' : ''}\n`);
    }
    if (p.written >= p.total && !this.finished.has(p.index)) {
      this.finished.add(p.index);
      this.out.write(`  ${p.name}: 100%\n`);
    }
  }

  log(line: string): void {
    if (this.multi) this.multi.log(`${line}\n`);
    else this.out.write(`${line}\n`);
  }

  stop(): void {
    this.multi?.stop();
    this.multi = null;
  }
}

function summary(r: FlashResult): string {
  const head =
    `Flashed Espruino onto ${r.chip}${r.mac ? ` (MAC ${r.mac})` : ''} at ${r.baud} baud in ${(r.durationMs / 1000).toFixed(1)} s` +
    `${r.erased ? ', after erasing the whole flash' : ''}:\n`;
  const rows = r.regions.map(
    (g) => `  0x${g.address.toString(16).padStart(6, '0')}  ${String(g.size).padStart(8)} bytes  MD5 ${g.md5}  verified  ${g.name}\n`,
  );
  return (
    head +
    rows.join('') +
    `  bootloader.bin: ${r.bootloaderHeader}\n` +
    `The chip was reset into Espruino; its console runs at ${ROM_BAUD} baud.\n` +
    `(On a board without the DTR/RTS auto-reset circuit, press EN/RESET to start it.)\n`
  );
}
