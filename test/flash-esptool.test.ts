// Flashing Espruino onto an ESP32, end to end: the real esptool-js 0.7.0 drives the software
// ROM bootloader (test/helpers/flash/rom-double.ts) through the same Web-Serial adapter that drives
// a real port.
import { afterAll, describe, expect, it } from 'vitest';
import { ESPLoader, Transport } from 'esptool-js';
import { flashEspruino, FlashError, type FlashProgress } from '../host/src/flash/flash.js';
import { RomDouble } from './helpers/flash/rom-double.js';
import { WebSerialAdapter } from '../host/src/flash/web-serial-adapter.js';
import { parseEsp32Image } from '../host/src/flash/esp-image.js';
import type { FakeRelease } from './helpers/flash/fake-release.js';
import { cleanupTempDirs, diffOffsets, makeFakeRelease, md5, RELEASE_SIZES, releaseDir, sha256, SMALL_SIZES } from './helpers/rom-double-release.js';

afterAll(cleanupTempDirs);

const FLASH_SIZE = 4 * 1024 * 1024;
const BOOT = 0x1000;
const PARTS = 0x8000;
const APP = 0x10000;
const region = (chip: RomDouble, at: number, len: number) => chip.flash.subarray(at, at + len);

/** What an erased flash holds after writing the release, bootloader byte for byte as given. */
function flashImage(release: FakeRelease, base?: Uint8Array): Uint8Array {
  const img = base ? new Uint8Array(base) : new Uint8Array(FLASH_SIZE).fill(0xff);
  img.set(release.bootloader, BOOT);
  img.set(release.partitions, PARTS);
  img.set(release.app, APP);
  return img;
}

/** Accounts for every byte of the bootloader region that differs from the file. */
function expectOnlyTheHeaderPatch(chip: RomDouble, bootloader: Uint8Array) {
  const info = parseEsp32Image(bootloader);
  if (typeof info === 'string') throw new Error(info);
  const flashed = region(chip, BOOT, bootloader.length);
  const digestAt = info.dataLength;
  const differing = diffOffsets(bootloader, flashed);
  // Byte 2 is the flash mode, byte 3 the size (high nibble) and frequency (low nibble): the file
  // says QIO / 4 MB / 80 MHz, Espruino is flashed DIO / 40 MHz with the size kept.
  expect(bootloader[2]).toBe(0x00);
  expect(bootloader[3]).toBe(0x2f);
  expect(flashed[2]).toBe(0x02);
  expect(flashed[3]).toBe(0x20);
  // The appended SHA-256 covers the header, so it is recomputed; nothing else may change.
  expect(differing.slice(0, 2)).toEqual([2, 3]);
  for (const off of differing.slice(2)) expect(off >= digestAt && off < digestAt + 32).toBe(true);
  expect(Buffer.from(flashed.subarray(digestAt, digestAt + 32))).toEqual(sha256(flashed.subarray(0, digestAt)));
  const reparsed = parseEsp32Image(flashed);
  expect(typeof reparsed !== 'string' && reparsed.checksumOk && reparsed.digestOk).toBe(true);
  return flashed;
}

describe('flashing a release-sized Espruino build', () => {
  const release = makeFakeRelease(7, RELEASE_SIZES);

  it.each([
    { compress: true, label: 'compressed' },
    { compress: false, label: 'uncompressed' },
  ])('writes all three images ($label), verifies each by MD5 and boots the new firmware', async ({ compress }) => {
    const chip = new RomDouble();
    const progress: FlashProgress[] = [];
    const lines: string[] = [];
    const started = Date.now();
    const result = await flashEspruino({
      port: chip,
      firmware: await releaseDir(release),
      compress,
      onProgress: (p) => progress.push(p),
      log: (l) => lines.push(l),
    });
    const took = Date.now() - started;

    expect(result.chip).toBe('ESP32-D0WD-V3 (revision 3)');
    expect(result.mac).toBe('24:0a:c4:5e:a1:07');
    expect(result.baud).toBe(921600);
    expect(result.regions.map((r) => [r.name, r.address, r.size, r.verified])).toEqual([
      ['bootloader.bin', BOOT, release.bootloader.length, true],
      ['partitions_espruino.bin', PARTS, release.partitions.length, true],
      ['espruino_esp32.bin', APP, release.app.length, true],
    ]);

    // Partition table and interpreter land byte for byte; the bootloader differs only by the header patch.
    expect(Buffer.compare(region(chip, PARTS, release.partitions.length), release.partitions)).toBe(0);
    expect(Buffer.compare(region(chip, APP, release.app.length), release.app)).toBe(0);
    const flashedBoot = expectOnlyTheHeaderPatch(chip, release.bootloader);
    // The MD5s reported are of what the chip holds, and nothing outside the three regions changed.
    expect(result.regions.map((r) => r.md5)).toEqual([md5(flashedBoot), md5(release.partitions), md5(release.app)]);
    const expected = flashImage(release);
    expected.set(flashedBoot, BOOT);
    expect(Buffer.compare(chip.flash, expected)).toBe(0);

    // Through the stub, at the requested rate, with the chosen transfer encoding.
    const writes = chip.commands.filter((c) => /^FLASH_(DEFL_)?DATA$/.test(c.name));
    expect(new Set(writes.map((c) => c.name))).toEqual(new Set([compress ? 'FLASH_DEFL_DATA' : 'FLASH_DATA']));
    expect(writes.every((c) => c.by === 'stub' && c.hostBaud === 921600 && c.status === 0)).toBe(true);
    expect(chip.commands.filter((c) => c.name === 'SPI_FLASH_MD5')).toHaveLength(3);

    // Progress: per file, from 0 to the bytes actually sent.
    for (const [i, name] of ['bootloader.bin', 'partitions_espruino.bin', 'espruino_esp32.bin'].entries()) {
      const mine = progress.filter((p) => p.index === i);
      expect(mine[0]).toMatchObject({ name, written: 0 });
      expect(mine.at(-1)!.written).toBe(mine.at(-1)!.total);
    }
    const appTotal = progress.find((p) => p.index === 2)!.total;
    if (compress) expect(appTotal).toBeLessThan(release.app.length);
    else expect(appTotal).toBe(release.app.length);

    // Exactly two resets: into the ROM bootloader (IO0 low as EN rose), then into the new
    // firmware (IO0 released) before the port closed.
    expect(chip.resets).toEqual([
      { into: 'rom', io0: false },
      { into: 'app', io0: true },
    ]);
    expect(chip.state).toBe('app');
    // esptool-js's chatter went to the log callback.
    expect(lines).toContain('Hash of data verified.');
    console.info(`release-sized flash (${compress ? 'compressed' : 'uncompressed'}): ${took} ms`);
  });
});

describe('flash contents outside the images', () => {
  const release = makeFakeRelease(11, SMALL_SIZES);
  // An old installation: saved JavaScript in Storage (0x320000) and leftovers elsewhere.
  const used = new Uint8Array(FLASH_SIZE).fill(0xff);
  used.set(new TextEncoder().encode('.bootcde\0setInterval(()=>digitalWrite(D2,1),500);'), 0x320000);
  used.fill(0x5a, 0x200000, 0x200400);

  it('--erase wipes the whole flash first, saved JavaScript included', async () => {
    const chip = new RomDouble({ flash: used });
    const result = await flashEspruino({ port: chip, firmware: await releaseDir(release), erase: true });
    expect(result.erased).toBe(true);
    expect(chip.opsSeen).toContain('ERASE_FLASH');
    expect(chip.opsSeen.indexOf('ERASE_FLASH')).toBeLessThan(chip.opsSeen.indexOf('FLASH_DEFL_BEGIN'));
    const expected = flashImage(release);
    expected.set(region(chip, BOOT, release.bootloader.length), BOOT); // the patched header, checked above
    expect(Buffer.compare(chip.flash, expected)).toBe(0);
  });

  it('without --erase only the sectors written are erased: Storage survives', async () => {
    const chip = new RomDouble({ flash: used });
    await flashEspruino({ port: chip, firmware: await releaseDir(release) });
    expect(chip.opsSeen).not.toContain('ERASE_FLASH');
    expect(Buffer.compare(region(chip, 0x320000, 64), used.subarray(0x320000, 0x320040))).toBe(0);
    expect(Buffer.compare(region(chip, 0x200000, 0x400), used.subarray(0x200000, 0x200400))).toBe(0);
    expect(Buffer.compare(region(chip, APP, release.app.length), release.app)).toBe(0);
  });
});

describe('a write that does not land intact', () => {
  const release = makeFakeRelease(13, SMALL_SIZES);
  const regions = [
    { name: 'bootloader.bin', address: BOOT, size: release.bootloader.length },
    { name: 'partitions_espruino.bin', address: PARTS, size: release.partitions.length },
    { name: 'espruino_esp32.bin', address: APP, size: release.app.length },
  ];

  it.each([
    { compress: true, block: 0 },
    { compress: true, block: 4 },
    { compress: false, block: 3 },
  ])('fails VERIFY_MISMATCH naming the region (block $block, compress $compress)', async ({ compress, block }) => {
    const chip = new RomDouble({ corruptBlock: block });
    const err = await flashEspruino({ port: chip, firmware: await releaseDir(release), compress }).catch((e) => e);
    expect(err).toBeInstanceOf(FlashError);
    expect(err.code).toBe('VERIFY_MISMATCH');
    // The double says where it flipped a bit; the error must name that region and its address.
    expect(chip.corruptions).toHaveLength(1);
    const hit = regions.find((r) => chip.corruptions[0].address >= r.address && chip.corruptions[0].address < r.address + r.size)!;
    expect(err.message).toContain(hit.name);
    expect(err.message).toContain(`0x${hit.address.toString(16)}`);
    expect(err.details).toMatchObject({ region: hit.name, address: hit.address });
    // Expected vs actual MD5: the file's against what the chip's flash really holds.
    const held = md5(region(chip, hit.address, err.details.size));
    expect(err.details.actual).toBe(held);
    expect(err.details.expected).not.toBe(held);
    expect(err.message).toContain(err.details.expected);
    expect(err.message).toContain(held);
    // Nothing after the bad region was written.
    const later = regions.filter((r) => r.address > hit.address);
    for (const r of later) expect(region(chip, r.address, 16).every((b) => b === 0xff)).toBe(true);
  });
});

describe('when the ROM bootloader does not answer', () => {
  const release = makeFakeRelease(17, SMALL_SIZES);

  it('a silent chip fails NO_BOOTLOADER with the IO0/BOOT hint', async () => {
    const chip = new RomDouble({ silent: true });
    const started = Date.now();
    const err = await flashEspruino({ port: chip, firmware: await releaseDir(release), connectAttempts: 1 }).catch((e) => e);
    expect(err).toBeInstanceOf(FlashError);
    expect(err.code).toBe('NO_BOOTLOADER');
    expect(err.message).toContain('no answer from the ESP32 ROM bootloader: hold IO0/BOOT while pressing EN/RESET, then retry; check the cable carries data');
    expect(chip.opsSeen).toEqual([]);
    expect(chip.isOpen).toBe(false); // the port is released
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('a bare module without auto-reset needs BOOT held while EN is tapped, then flashes', async () => {
    const chip = new RomDouble({ autoReset: false });
    const firmware = await releaseDir(release);
    const first = await flashEspruino({ port: chip, firmware, connectAttempts: 1 }).catch((e) => e);
    expect(first.code).toBe('NO_BOOTLOADER');
    expect(chip.state).toBe('app'); // DTR/RTS reach nothing: the firmware kept running

    chip.pressReset(true); // the user holds IO0/BOOT and taps EN/RESET
    expect(chip.state).toBe('rom');
    const result = await flashEspruino({ port: chip, firmware, connectAttempts: 1 });
    expect(result.regions.every((r) => r.verified)).toBe(true);
    // No reset circuit: the chip stays in the flasher stub until the user presses EN.
    expect(chip.state).toBe('stub');
  });
});

describe('esptool-js 0.7.0 behaviour the flasher works around', () => {
  it("its own after('hard_reset') leaves a dev board in the flasher stub", async () => {
    const chip = new RomDouble();
    const transport = new Transport(new WebSerialAdapter(chip) as never, false);
    transport.trace = () => undefined;
    const loader = new ESPLoader({ transport, baudrate: 115200, terminal: { clean() {}, write() {}, writeLine() {} } });
    await loader.main();
    expect(chip.state).toBe('stub');
    await loader.after('hard_reset');
    await transport.disconnect();
    // No EN pulse: it only releases RTS (already released) and re-asserts DTR (IO0 low).
    expect(chip.resets).toEqual([{ into: 'rom', io0: false }]);
    expect(chip.state).toBe('stub');
  });
});
