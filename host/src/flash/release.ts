// Finding the Espruino ESP32 release files: in a folder (at any depth), in the release .tgz,
// or in a .zip (directly or in an ESP32 .tgz inside it). No machine here can download them,
// so the user passes what they downloaded.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { gunzipSync, inflateRawSync } from 'node:zlib';

/** Where each file of the Espruino ESP32 release goes (targets/esp32/README_flash.txt). */
export const ESPRUINO_ESP32_LAYOUT = [
  { name: 'bootloader.bin', address: 0x1000 },
  { name: 'partitions_espruino.bin', address: 0x8000 },
  { name: 'espruino_esp32.bin', address: 0x10000 },
] as const;

export const ESPRUINO_DOWNLOAD_HINT =
  'Download the Espruino ESP32 release from https://www.espruino.com/binaries/ (espruino_<version>_esp32.tgz, ' +
  'or the full release zip) and pass the .tgz, the .zip or the extracted folder with --firmware.';

export interface ReleaseFile {
  name: string;
  address: number;
  data: Uint8Array;
  /** Where it was found: a path, or archive!member. */
  source: string;
}

export class ReleaseError extends Error {
  constructor(
    readonly code: 'MISSING_FILE' | 'BAD_FIRMWARE',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ReleaseError';
  }
}

interface Entry {
  /** For messages: a file path, or archive!member. */
  path: string;
  /** The file name without folders. */
  name: string;
  read(): Promise<Uint8Array>;
}

const baseOf = (p: string) => p.slice(Math.max(p.lastIndexOf('/'), p.lastIndexOf('!')) + 1);

const MAX_DIR_DEPTH = 4;
const SKIP_DIRS = new Set(['node_modules', '.git']);

/** Reads the three release files from a folder, .tgz/.tar.gz/.tar or .zip. */
export async function loadEspruinoRelease(firmware: string): Promise<ReleaseFile[]> {
  const where = resolve(firmware);
  let st;
  try {
    st = await stat(where);
  } catch {
    throw new ReleaseError('MISSING_FILE', `firmware not found: ${where} does not exist. ${ESPRUINO_DOWNLOAD_HINT}`, { firmware: where });
  }
  let entries: Entry[];
  let looked: string;
  if (st.isDirectory()) {
    entries = await walk(where);
    looked = `in ${where} (and its subfolders, ${MAX_DIR_DEPTH} levels deep)`;
  } else {
    const bytes = new Uint8Array(await readFile(where));
    entries = archiveEntries(where, bytes);
    looked = `inside ${where}`;
  }
  const found: ReleaseFile[] = [];
  const missing: string[] = [];
  for (const { name, address } of ESPRUINO_ESP32_LAYOUT) {
    const candidates = entries.filter((e) => e.name === name);
    // The shallowest wins, then the alphabetically first: deterministic when a folder holds two.
    candidates.sort((a, b) => a.path.split('/').length - b.path.split('/').length || a.path.localeCompare(b.path));
    if (!candidates.length) {
      missing.push(name);
      continue;
    }
    found.push({ name, address, data: new Uint8Array(await candidates[0].read()), source: candidates[0].path });
  }
  if (missing.length) {
    const bins = entries.map((e) => e.path).filter((p) => /\.(bin|tgz|tar\.gz)$/i.test(p));
    throw new ReleaseError(
      'MISSING_FILE',
      `missing ${missing.map((m) => `${m} (flashed at 0x${addressOf(m).toString(16)})`).join(', ')}: looked ${looked}` +
        `${bins.length ? `; found only ${bins.slice(0, 8).join(', ')}${bins.length > 8 ? ', …' : ''}` : '; no .bin files there'}. ` +
        ESPRUINO_DOWNLOAD_HINT,
      { missing, firmware: where },
    );
  }
  checkRelease(found);
  return found;
}

const addressOf = (name: string) => ESPRUINO_ESP32_LAYOUT.find((l) => l.name === name)!.address;

/** Catches swapped, truncated or oversized files before anything is written. */
function checkRelease(files: ReleaseFile[]): void {
  const byName = new Map(files.map((f) => [f.name, f]));
  const bad = (file: ReleaseFile, why: string) =>
    new ReleaseError('BAD_FIRMWARE', `${file.name} from ${file.source} ${why}. ${ESPRUINO_DOWNLOAD_HINT}`, { file: file.name, source: file.source });
  for (const f of files) if (f.data.length === 0) throw bad(f, 'is empty');
  const boot = byName.get('bootloader.bin')!;
  const parts = byName.get('partitions_espruino.bin')!;
  const app = byName.get('espruino_esp32.bin')!;
  if (boot.data[0] !== 0xe9) throw bad(boot, 'is not an ESP32 bootloader image (no 0xE9 magic byte)');
  if (app.data[0] !== 0xe9) throw bad(app, 'is not an ESP32 application image (no 0xE9 magic byte)');
  if (parts.data[0] !== 0xaa || parts.data[1] !== 0x50) throw bad(parts, 'is not a partition table (it does not start with AA 50)');
  const sorted = [...files].sort((a, b) => a.address - b.address);
  for (let i = 0; i + 1 < sorted.length; i++) {
    const a = sorted[i];
    const b = sorted[i + 1];
    if (a.address + a.data.length > b.address) {
      throw bad(a, `is ${a.data.length} bytes: written at 0x${a.address.toString(16)} it would overwrite ${b.name} at 0x${b.address.toString(16)}`);
    }
  }
  const FLASH_4MB = 4 * 1024 * 1024;
  if (app.address + app.data.length > FLASH_4MB) throw bad(app, `is ${app.data.length} bytes: it does not fit a 4 MB flash at 0x${app.address.toString(16)}`);
}

async function walk(root: string): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (dir: string, depth: number) => {
    let names;
    try {
      names = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of names) {
      const p = join(dir, d.name);
      if (d.isDirectory()) {
        if (depth < MAX_DIR_DEPTH && !SKIP_DIRS.has(d.name)) await visit(p, depth + 1);
      } else if (d.isFile()) {
        out.push({ path: p, name: d.name, read: async () => new Uint8Array(await readFile(p)) });
      }
    }
  };
  await visit(root, 0);
  return out;
}

/** Members of a .tgz/.tar.gz/.tar or .zip; a zip's ESP32 .tgz members are opened too. */
export function archiveEntries(label: string, bytes: Uint8Array): Entry[] {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    let tar: Uint8Array;
    try {
      tar = new Uint8Array(gunzipSync(bytes));
    } catch (e) {
      throw new ReleaseError('BAD_FIRMWARE', `${label} is not a readable gzip file (${(e as Error).message}). ${ESPRUINO_DOWNLOAD_HINT}`);
    }
    return tarEntries(label, tar);
  }
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) {
    const members = zipEntries(label, bytes);
    const nested: Entry[] = [];
    for (const m of members) {
      if (/esp32[^/]*\.(tgz|tar\.gz)$/i.test(m.path)) {
        const inner = m.read();
        nested.push(...(archiveEntries(m.path, inner) as Entry[]));
      }
    }
    return [...members.map((m) => ({ path: m.path, name: baseOf(m.path), read: async () => m.read() })), ...nested];
  }
  if (bytes.length >= 512 && String.fromCharCode(...bytes.subarray(257, 262)) === 'ustar') return tarEntries(label, bytes);
  throw new ReleaseError(
    'BAD_FIRMWARE',
    `${label} is neither a folder, a .tgz/.tar nor a .zip. ${ESPRUINO_DOWNLOAD_HINT}`,
    { firmware: label },
  );
}

const cstring = (b: Uint8Array) => {
  const end = b.indexOf(0);
  return Buffer.from(end < 0 ? b : b.subarray(0, end)).toString('utf8');
};

function octal(b: Uint8Array): number {
  if (b[0] & 0x80) {
    // base-256 (GNU) for large sizes
    let n = 0;
    for (let i = 1; i < b.length; i++) n = n * 256 + b[i];
    return n;
  }
  const s = cstring(b).trim();
  return s ? parseInt(s, 8) : 0;
}

/** A ustar/GNU/pax tar reader: regular files only, long names via 'L' and pax 'path'. */
export function tarEntries(label: string, tar: Uint8Array): Entry[] {
  const out: Entry[] = [];
  let at = 0;
  let longName: string | null = null;
  let paxPath: string | null = null;
  while (at + 512 <= tar.length) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const size = octal(h.subarray(124, 136));
    const type = String.fromCharCode(h[156] || 0x30);
    const magic = cstring(h.subarray(257, 263));
    const prefix = magic.startsWith('ustar') ? cstring(h.subarray(345, 500)) : '';
    let name = cstring(h.subarray(0, 100));
    if (prefix) name = `${prefix}/${name}`;
    const dataStart = at + 512;
    if (dataStart + size > tar.length) {
      throw new ReleaseError('BAD_FIRMWARE', `${label} is truncated (member ${name} runs past the end). ${ESPRUINO_DOWNLOAD_HINT}`);
    }
    const body = tar.subarray(dataStart, dataStart + size);
    at = dataStart + Math.ceil(size / 512) * 512;
    if (type === 'L') {
      longName = cstring(body);
      continue;
    }
    if (type === 'x') {
      const text = Buffer.from(body).toString('utf8');
      const m = /\d+ path=([^\n]*)\n/.exec(text);
      if (m) paxPath = m[1];
      continue;
    }
    if (type === 'g') continue;
    const path = paxPath ?? longName ?? name;
    longName = null;
    paxPath = null;
    if (type === '0' || type === '\0' || type === '7') {
      const copy = body;
      const member = `${label}!${path.replace(/^\.\//, '')}`;
      out.push({ path: member, name: baseOf(member), read: async () => new Uint8Array(copy) });
    }
  }
  return out;
}

interface ZipMember {
  path: string;
  read(): Uint8Array;
}

/** A zip reader (stored and deflated members, no zip64). */
export function zipEntries(label: string, zip: Uint8Array): ZipMember[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65557); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  const broken = (why: string) => new ReleaseError('BAD_FIRMWARE', `${label} is not a readable zip file (${why}). ${ESPRUINO_DOWNLOAD_HINT}`);
  if (eocd < 0) throw broken('no end of central directory');
  const count = view.getUint16(eocd + 10, true);
  let at = view.getUint32(eocd + 16, true);
  const out: ZipMember[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 46 > zip.length || view.getUint32(at, true) !== 0x02014b50) throw broken('bad central directory');
    const method = view.getUint16(at + 10, true);
    const csize = view.getUint32(at + 20, true);
    const usize = view.getUint32(at + 24, true);
    const nameLen = view.getUint16(at + 28, true);
    const extraLen = view.getUint16(at + 30, true);
    const commentLen = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = Buffer.from(zip.subarray(at + 46, at + 46 + nameLen)).toString('utf8');
    at += 46 + nameLen + extraLen + commentLen;
    if (name.endsWith('/')) continue;
    if (csize === 0xffffffff || usize === 0xffffffff) throw broken(`${name} needs zip64`);
    out.push({
      path: `${label}!${name}`,
      read: () => {
        if (view.getUint32(local, true) !== 0x04034b50) throw broken(`bad local header for ${name}`);
        const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
        const raw = zip.subarray(start, start + csize);
        if (method === 0) return new Uint8Array(raw);
        if (method === 8) return new Uint8Array(inflateRawSync(raw));
        throw broken(`${name} uses compression method ${method}`);
      },
    });
  }
  return out;
}
