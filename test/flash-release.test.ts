// Where the Espruino release comes from: a folder, the release .tgz, or a zip; and what the user
// is told when a file is missing or wrong.
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { flashEspruino, FlashError } from '../host/src/flash/flash.js';
import { loadEspruinoRelease } from '../host/src/flash/release.js';
import { fakeReleaseTgz } from './helpers/flash/fake-release.js';
import { RomDouble } from './helpers/flash/rom-double.js';
import { cleanupTempDirs, makeFakeRelease, releaseDir, releaseTgz, SMALL_SIZES, tempDir } from './helpers/rom-double-release.js';

afterAll(cleanupTempDirs);

const release = makeFakeRelease(23, SMALL_SIZES);
const APP = 0x10000;

describe('a release .tgz', () => {
  it('flashes straight from the archive, files found under its top folder', async () => {
    const chip = new RomDouble();
    const tgz = releaseTgz(release);
    const result = await flashEspruino({ port: chip, firmware: tgz });
    expect(result.regions.map((r) => r.source)).toEqual([
      `${tgz}!espruino_2v25_esp32/bootloader.bin`,
      `${tgz}!espruino_2v25_esp32/partitions_espruino.bin`,
      `${tgz}!espruino_2v25_esp32/espruino_esp32.bin`,
    ]);
    expect(Buffer.compare(chip.flash.subarray(APP, APP + release.app.length), release.app)).toBe(0);
  });

  it('a .tgz inside the full release zip is opened too', async () => {
    const zip = join(tempDir(), 'espruino_2v25.zip');
    writeFileSync(zip, makeZip([
      ['espruino_2v25/espruino_2v25_puckjs.zip', new TextEncoder().encode('not this one')],
      ['espruino_2v25/espruino_2v25_esp32.tgz', fakeReleaseTgz(release)],
    ]));
    const files = await loadEspruinoRelease(zip);
    expect(files.map((f) => f.name)).toEqual(['bootloader.bin', 'partitions_espruino.bin', 'espruino_esp32.bin']);
    expect(Buffer.compare(files[2].data, release.app)).toBe(0);
  });
});

describe('a release folder', () => {
  it('finds the files at any depth (the extracted .tgz keeps its top folder)', async () => {
    const dir = await releaseDir(release, { subdir: 'downloads/espruino_2v25_esp32' });
    const files = await loadEspruinoRelease(dir);
    expect(files.map((f) => [f.name, f.address])).toEqual([
      ['bootloader.bin', 0x1000],
      ['partitions_espruino.bin', 0x8000],
      ['espruino_esp32.bin', 0x10000],
    ]);
  });

  it('missing a file: MISSING_FILE says which, where it looked and what to download', async () => {
    const dir = await releaseDir(release, { omit: ['partitions'] });
    const chip = new RomDouble();
    const err = await flashEspruino({ port: chip, firmware: dir }).catch((e) => e);
    expect(err).toBeInstanceOf(FlashError);
    expect(err.code).toBe('MISSING_FILE');
    expect(err.message).toContain('partitions_espruino.bin (flashed at 0x8000)');
    expect(err.message).toContain(dir);
    expect(err.message).toContain('bootloader.bin'); // what it did find
    expect(err.message).toContain('https://www.espruino.com/binaries/');
    expect(err.message).toMatch(/esp32\.tgz/);
    expect(err.details.missing).toEqual(['partitions_espruino.bin']);
    // Nothing was sent to the chip.
    expect(chip.commands).toEqual([]);
    expect(chip.resets).toEqual([]);
  });

  it('a path that does not exist is MISSING_FILE too', async () => {
    const err = await flashEspruino({ port: new RomDouble(), firmware: '/nonexistent/espruino_esp32' }).catch((e) => e);
    expect(err.code).toBe('MISSING_FILE');
    expect(err.message).toContain('/nonexistent/espruino_esp32 does not exist');
  });

  it('files that are not what their names say: BAD_FIRMWARE before anything is written', async () => {
    const swapped = { ...release, partitions: release.bootloader, bootloader: release.partitions };
    const chip = new RomDouble();
    const err = await flashEspruino({ port: chip, firmware: await releaseDir(swapped) }).catch((e) => e);
    expect(err.code).toBe('BAD_FIRMWARE');
    expect(err.message).toMatch(/bootloader\.bin .* is not an ESP32 bootloader image/);
    expect(chip.commands).toEqual([]);
  });

  it('an image too big for its slot: BAD_FIRMWARE naming the overlap', async () => {
    const big = { ...release, bootloader: new Uint8Array(0x7400).fill(0xe9) };
    const err = await flashEspruino({ port: new RomDouble(), firmware: await releaseDir(big) }).catch((e) => e);
    expect(err.code).toBe('BAD_FIRMWARE');
    expect(err.message).toContain('would overwrite partitions_espruino.bin at 0x8000');
  });
});

/** A small zip writer (deflated members) for the test. */
function makeZip(members: [string, Uint8Array][]): Uint8Array {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of members) {
    const nameBytes = Buffer.from(name);
    const packed = deflateRawSync(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(0, 14); // CRC not checked by the reader
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    locals.push(local, nameBytes, packed);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE(20, 4);
    c.writeUInt16LE(20, 6);
    c.writeUInt16LE(8, 10);
    c.writeUInt32LE(packed.length, 20);
    c.writeUInt32LE(data.length, 24);
    c.writeUInt16LE(nameBytes.length, 28);
    c.writeUInt32LE(offset, 42);
    central.push(c, nameBytes);
    offset += 30 + nameBytes.length + packed.length;
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, cd, end]));
}
