// A stand-in for an Espruino ESP32 release (no machine here can download the real one):
// a valid ESP32 bootloader image, a partition table and an application image of release-like
// sizes, deterministic from a seed. Used by the flash tests and the ROM double's users.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildEsp32Image, FLASH_FREQS, FLASH_MODES } from '../../../host/src/flash/esp-image.js';

export interface FakeReleaseSizes {
  /** Approximate; the image format rounds it. Default 26 KB, like an ESP-IDF 3/4 bootloader. */
  bootloader?: number;
  /** Default 3072 (0xC00), the partition table region esptool writes. */
  partitions?: number;
  /** Default 1.4 MB, like espruino_esp32.bin. */
  app?: number;
}

export interface FakeRelease {
  bootloader: Uint8Array;
  partitions: Uint8Array;
  app: Uint8Array;
}

/** xorshift32: the same bytes from the same seed, everywhere. */
export function prng(seed: number): () => number {
  let x = seed >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** Bytes that deflate to roughly 60 %, like machine code and string tables do. */
export function codeLikeBytes(length: number, seed: number): Uint8Array {
  const next = prng(seed);
  const out = new Uint8Array(length);
  let at = 0;
  while (at < length) {
    const chunk = Math.min(length - at, 16 + (next() % 48));
    if (at > 4096 && next() % 100 < 40) {
      const from = at - 1 - (next() % Math.min(at - 1, 16384));
      for (let i = 0; i < chunk; i++) out[at + i] = out[from + i];
    } else {
      for (let i = 0; i < chunk; i++) {
        const r = next();
        out[at + i] = r & 1 ? r >>> 24 : (r >>> 8) & 0x3f;
      }
    }
    at += chunk;
  }
  return out;
}

export function makeFakeRelease(seed = 1, sizes: FakeReleaseSizes = {}): FakeRelease {
  const bootTarget = sizes.bootloader ?? 26 * 1024;
  // Three segments like a real bootloader: DRAM data, IRAM loader, IRAM text. Header, segment
  // headers, checksum padding and the digest take ~80 bytes.
  const body = bootTarget - 24 - 3 * 8 - 16 - 32;
  const a = Math.floor(body * 0.15);
  const b = Math.floor(body * 0.2);
  const c = body - a - b;
  const bootloader = buildEsp32Image({
    segments: [
      { address: 0x3fff0030, data: codeLikeBytes(a, seed + 1) },
      { address: 0x40078000, data: codeLikeBytes(b, seed + 2) },
      { address: 0x40080400, data: codeLikeBytes(c, seed + 3) },
    ],
    entry: 0x40080688,
    // Deliberately not DIO/40 MHz, so writing it exercises the header patch.
    flashMode: FLASH_MODES.qio,
    flashSizeFreq: 0x20 | FLASH_FREQS['80m'],
    hashAppended: true,
  });

  const partitions = partitionTable(sizes.partitions ?? 3072);

  const appSize = sizes.app ?? 1_400 * 1024;
  const app = codeLikeBytes(appSize, seed + 4);
  // An application image header: magic, segment count, DIO, 4 MB/40 MHz, entry point.
  app.set([0xe9, 0x06, 0x02, 0x20, 0x1c, 0x14, 0x08, 0x40], 0);
  return { bootloader, partitions, app };
}

function partitionTable(size: number): Uint8Array {
  const table = new Uint8Array(size).fill(0xff);
  const rows: [string, number, number, number, number][] = [
    ['nvs', 1, 0x02, 0x9000, 0x6000],
    ['phy_init', 1, 0x01, 0xf000, 0x1000],
    ['factory', 0, 0x00, 0x10000, 0x300000],
    ['storage', 1, 0x81, 0x320000, 0xe0000],
  ];
  let at = 0;
  for (const [label, type, subtype, offset, length] of rows) {
    const e = new Uint8Array(32);
    const v = new DataView(e.buffer);
    e[0] = 0xaa;
    e[1] = 0x50;
    e[2] = type;
    e[3] = subtype;
    v.setUint32(4, offset, true);
    v.setUint32(8, length, true);
    e.set(new TextEncoder().encode(label), 12);
    table.set(e, at);
    at += 32;
  }
  // ESP-IDF's MD5 row: EB EB, 14 x FF, then the MD5 of the entries.
  const md5Row = new Uint8Array(32).fill(0xff);
  md5Row[0] = 0xeb;
  md5Row[1] = 0xeb;
  md5Row.set(createHash('md5').update(table.subarray(0, at)).digest(), 16);
  table.set(md5Row, at);
  return table;
}

export const RELEASE_FILE_NAMES = {
  bootloader: 'bootloader.bin',
  partitions: 'partitions_espruino.bin',
  app: 'espruino_esp32.bin',
} as const;

/** Writes the release into `dir` (optionally in a subfolder), leaving out `omit` files. */
export async function writeFakeReleaseDir(
  dir: string,
  release: FakeRelease,
  opts: { subdir?: string; omit?: (keyof FakeRelease)[] } = {},
): Promise<string> {
  const target = opts.subdir ? join(dir, opts.subdir) : dir;
  await mkdir(target, { recursive: true });
  for (const key of Object.keys(RELEASE_FILE_NAMES) as (keyof FakeRelease)[]) {
    if (opts.omit?.includes(key)) continue;
    await writeFile(join(target, RELEASE_FILE_NAMES[key]), release[key]);
  }
  return dir;
}

/** A .tgz laid out like Espruino's: a top folder holding the files and a README. */
export function fakeReleaseTgz(release: FakeRelease, folder = 'espruino_2v25_esp32'): Uint8Array {
  const files: [string, Uint8Array][] = [
    [`${folder}/README_flash.txt`, new TextEncoder().encode('esptool.py --chip esp32 --baud 921600 write_flash -z --flash_mode dio --flash_freq 40m 0x1000 bootloader.bin 0x8000 partitions_espruino.bin 0x10000 espruino_esp32.bin\n')],
    [`${folder}/${RELEASE_FILE_NAMES.bootloader}`, release.bootloader],
    [`${folder}/${RELEASE_FILE_NAMES.partitions}`, release.partitions],
    [`${folder}/${RELEASE_FILE_NAMES.app}`, release.app],
  ];
  return new Uint8Array(gzipSync(tar(files)));
}

/** A minimal ustar writer. */
export function tar(files: [string, Uint8Array][]): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const [name, data] of files) {
    const h = new Uint8Array(512);
    const put = (s: string, at: number, len: number) => h.set(new TextEncoder().encode(s).subarray(0, len), at);
    put(name, 0, 100);
    put('0000644\0', 100, 8);
    put('0000000\0', 108, 8);
    put('0000000\0', 116, 8);
    put(data.length.toString(8).padStart(11, '0') + '\0', 124, 12);
    put('14712345670\0', 136, 12);
    put('        ', 148, 8);
    h[156] = 0x30;
    put('ustar\0', 257, 6);
    put('00', 263, 2);
    let sum = 0;
    for (const b of h) sum += b;
    put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
    blocks.push(h, data, new Uint8Array((512 - (data.length % 512)) % 512));
  }
  blocks.push(new Uint8Array(1024));
  const total = blocks.reduce((n, b) => n + b.length, 0);
  const out = new Uint8Array(total);
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
