// `proofrig flash` as a person runs it: options, progress, the summary, exit codes and errors.
import { afterAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { registerFlashCommand, type FlashCommandDeps } from '../host/src/flash/command.js';
import { flashEspruino } from '../host/src/flash/flash.js';
import { RomDouble } from './helpers/flash/rom-double.js';
import type { PortLike } from '../host/src/flash/web-serial-adapter.js';
import { cleanupTempDirs, makeFakeRelease, md5, releaseDir, releaseTgz, SMALL_SIZES } from './helpers/rom-double-release.js';

afterAll(cleanupTempDirs);

// The host's commander (v14), resolved as the host resolves it: the root holds an older one.
const { Command } = createRequire(new URL('../host/package.json', import.meta.url))('commander') as typeof import('../host/node_modules/commander/typings/index.js');

const release = makeFakeRelease(31, SMALL_SIZES);

class Sink {
  text = '';
  constructor(readonly isTTY = false) {}
  write(s: string) {
    this.text += s;
    return true;
  }
  // enough of a tty for cli-progress
  columns = 100;
  cursorTo() {
    return true;
  }
  moveCursor() {
    return true;
  }
  clearLine() {
    return true;
  }
  clearScreenDown() {
    return true;
  }
  on() {
    return this;
  }
  removeListener() {
    return this;
  }
}

async function run(args: string[], deps: Partial<FlashCommandDeps> = {}, tty = false) {
  const stdout = new Sink();
  const stderr = new Sink(tty);
  let exitCode: number | undefined;
  const program = new Command('proofrig').exitOverride().configureOutput({ writeErr: (s) => stderr.write(s), writeOut: (s) => stdout.write(s) });
  registerFlashCommand(program, { stdout, stderr, setExitCode: (c) => (exitCode = c), flashOptions: { connectAttempts: 1 }, ...deps });
  await program.parseAsync(['node', 'proofrig', 'flash', ...args]);
  return { exitCode, stdout: stdout.text, stderr: stderr.text };
}

const onDouble = (chip: RomDouble) => ({ openPort: (path: string) => Object.assign(chip, { path }) as PortLike });

describe('proofrig flash', () => {
  it('flashes, shows progress per file on stderr and ends with a verified summary, exit 0', async () => {
    const chip = new RomDouble();
    const firmware = await releaseDir(release);
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', firmware], onDouble(chip));
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain('writing bootloader.bin at 0x1000');
    expect(r.stderr).toContain('writing partitions_espruino.bin at 0x8000');
    expect(r.stderr).toContain('writing espruino_esp32.bin at 0x10000');
    expect(r.stderr.match(/100%/g)).toHaveLength(3);
    expect(r.stdout).toMatch(/^Flashed Espruino onto ESP32-D0WD-V3 \(revision 3\) \(MAC 24:0a:c4:5e:a1:07\) at 921600 baud in [\d.]+ s:\n/);
    expect(r.stdout).toContain(`0x008000      3072 bytes  MD5 ${md5(release.partitions)}  verified  partitions_espruino.bin`);
    expect(r.stdout).toContain(`0x010000  ${String(release.app.length).padStart(8)} bytes  MD5 ${md5(release.app)}  verified  espruino_esp32.bin`);
    expect(r.stdout).toMatch(/0x001000 +26624 bytes +MD5 [0-9a-f]{32} +verified +bootloader\.bin/);
    expect(r.stdout).toContain('bootloader.bin: header set to DIO, 40 MHz');
    expect(r.stdout).toContain('its console runs at 115200 baud');
    // esptool-js's own chatter stays out of stdout (and out of stderr without --verbose).
    expect(r.stdout + r.stderr).not.toContain('Hash of data verified');
    expect(chip.state).toBe('app');
  });

  it('--verbose prints esptool-js output; --no-compress and --baud reach the chip', async () => {
    const chip = new RomDouble();
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', releaseTgz(release), '--no-compress', '--baud', '460800', '--verbose'], onDouble(chip));
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain('Stub running...');
    expect(r.stderr).toContain('Hash of data verified.');
    expect(chip.opsSeen).toContain('FLASH_DATA');
    expect(chip.opsSeen).not.toContain('FLASH_DEFL_DATA');
    expect(chip.commands.find((c) => c.name === 'CHANGE_BAUDRATE')?.detail).toBe('460800');
    expect(r.stdout).toContain('at 460800 baud');
  });

  it('--erase erases the chip first; --baud 115200 stays at the ROM rate', async () => {
    const chip = new RomDouble({ flash: new Uint8Array(4 * 1024 * 1024).fill(0x00) });
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', await releaseDir(release), '--erase', '--baud', '115200'], onDouble(chip));
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('after erasing the whole flash');
    expect(r.stdout).toContain('at 115200 baud');
    expect(chip.flash[0x3fffff]).toBe(0xff);
    expect(chip.opsSeen).not.toContain('CHANGE_BAUDRATE');
  });

  it('draws one progress bar per file on a terminal', async () => {
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', await releaseDir(release)], onDouble(new RomDouble()), true);
    expect(r.exitCode).toBe(0);
    for (const name of ['bootloader.bin', 'partitions_espruino.bin', 'espruino_esp32.bin']) expect(r.stderr).toMatch(new RegExp(`${name.replace('.', '\\.')} +\\|`));
    expect(r.stderr).toMatch(/100% \| \d+\/\d+ bytes sent \(compressed\)/);
  });

  it('a corrupted write: exit 1 with VERIFY_MISMATCH naming region, address and both MD5s', async () => {
    const chip = new RomDouble({ corruptBlock: 4 });
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', await releaseDir(release)], onDouble(chip));
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/proofrig flash: VERIFY_MISMATCH: verification failed for espruino_esp32\.bin at 0x10000 \(\d+ bytes\): expected MD5 [0-9a-f]{32}, the chip's flash holds [0-9a-f]{32}/);
    expect(r.stderr).toContain(`expected MD5 ${md5(release.app)}`);
    expect(r.stderr).toContain('lower --baud');
    expect(r.stderr).toContain('last lines of the flashing log:'); // context for a bug report
    expect(r.stdout).toBe('');
  });

  it('a chip that never answers: exit 1 with NO_BOOTLOADER and the IO0 hint', async () => {
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', await releaseDir(release)], onDouble(new RomDouble({ silent: true })));
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('proofrig flash: NO_BOOTLOADER: no answer from the ESP32 ROM bootloader: hold IO0/BOOT while pressing EN/RESET, then retry; check the cable carries data');
  });

  it('a missing release file: exit 1 with MISSING_FILE', async () => {
    const r = await run(['--port', '/dev/ttyUSB0', '--firmware', await releaseDir(release, { omit: ['app'] })], onDouble(new RomDouble()));
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/MISSING_FILE: missing espruino_esp32\.bin \(flashed at 0x10000\)/);
  });

  it('a bad port path: exit 1 with NO_SUCH_PORT and the ports there are', async () => {
    const r = await run(['--port', '/dev/ttyPROOFRIG-NOPE', '--firmware', await releaseDir(release)]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/proofrig flash: NO_SUCH_PORT: no serial port at \/dev\/ttyPROOFRIG-NOPE\. (Available ports: |No serial ports were found)/);
  });

  it('options are checked: --port and --firmware are required, --baud is an integer rate', async () => {
    expect((await run(['--firmware', 'x'])).stderr).toContain('BAD_OPTION: --port is required');
    expect((await run(['--port', '/dev/ttyUSB0'])).stderr).toContain('BAD_OPTION: --firmware is required');
    await expect(run(['--port', 'p', '--firmware', 'f', '--baud', 'fast'])).rejects.toThrow(/--baud must be an integer/);
  });

  it('--list lists serial ports (or says there are none), exit 0', async () => {
    const r = await run(['--list']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^(No serial ports found\.|\/dev\/|COM)/);
  });
});

describe('opening a real serial port path', () => {
  it('NO_SUCH_PORT from flashEspruino too, before anything is sent', async () => {
    const err = await flashEspruino({ port: '/dev/ttyPROOFRIG-NOPE', firmware: await releaseDir(release) }).catch((e) => e);
    expect(err.code).toBe('NO_SUCH_PORT');
  });

  it('a path that is not a serial port: NOT_A_SERIAL_PORT (through serialport itself)', async () => {
    const err = await flashEspruino({ port: '/dev/null', firmware: await releaseDir(release) }).catch((e) => e);
    expect(err.code).toBe('NOT_A_SERIAL_PORT');
    expect(err.message).toContain('/dev/null is not a serial port');
  });

  it('permission denied: PERMISSION_DENIED with the dialout/udev hint', async () => {
    const locked: PortLike = {
      ...new RomDouble(),
      path: '/dev/ttyUSB0',
      getInfo: () => ({}),
      open: async () => {
        throw new Error('Error: Permission denied, cannot open /dev/ttyUSB0');
      },
      write: async () => undefined,
      set: async () => undefined,
      update: async () => undefined,
      close: async () => undefined,
    };
    const err = await flashEspruino({ port: locked, firmware: await releaseDir(release) }).catch((e) => e);
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toContain('sudo usermod -aG dialout $USER');
    expect(err.message).toContain('udev rule');
  });
});
