// The simulated flash Storage (Espruino's require('Storage')): byte files that survive reboots and power loss.
//
// Modelled on Espruino's jsflash.c: a file is created with a fixed size and filled with 0xFF (erased flash);
// writes at an offset may only land on still-erased bytes; replaced or erased files stay as trash until
// compact() (or until space runs out, when a compaction happens by itself).

/** Longest file name Espruino's Storage accepts. */
export const STORAGE_NAME_MAX = 28;
/** Bytes of the ESP32 Espruino Storage area (64 pages of 4 KiB). */
export const STORAGE_DEFAULT_SIZE = 262144;
const HEADER_BYTES = 32;
const ALIGN = 4;

export type StorageData = string | Uint8Array | ArrayLike<number>;

export interface StorageStats {
  totalBytes: number;
  freeBytes: number;
  fileBytes: number;
  fileCount: number;
  trashBytes: number;
  trashCount: number;
}

function footprint(size: number): number {
  return Math.ceil((HEADER_BYTES + size) / ALIGN) * ALIGN;
}

/** A latin1 byte string → bytes (each char code & 0xFF, like Espruino strings). */
export function bytesFromLatin1(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

/** Bytes → a latin1 byte string. */
export function latin1FromBytes(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, Array.prototype.slice.call(b, i, i + 8192) as number[]);
  return s;
}

function toBytes(data: StorageData): Uint8Array {
  if (typeof data === 'string') return bytesFromLatin1(data);
  if (data instanceof Uint8Array) return data;
  const out = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = Number(data[i]) & 0xff;
  return out;
}

export class SimStorage {
  private files = new Map<string, Uint8Array>();
  /** How to take back the last write (a power cut before flash finished it). */
  private undo: { name: string; data: Uint8Array | undefined } | undefined;

  /** Lose the last write, as a power cut before the flash write completed would: the file reads as before it. Returns its name. */
  loseLastWrite(): string | undefined {
    const u = this.undo;
    this.undo = undefined;
    if (!u) return undefined;
    if (u.data) this.files.set(u.name, u.data);
    else this.files.delete(u.name);
    return u.name;
  }
  private trashBytes = 0;
  private trashCount = 0;

  constructor(readonly totalBytes: number = STORAGE_DEFAULT_SIZE) {}

  /** Throws like Espruino for a name it cannot store. */
  static checkName(name: string): void {
    if (typeof name !== 'string' || name.length === 0) throw new Error('Storage: file name must be a non-empty string');
    if (name.length > STORAGE_NAME_MAX)
      throw new Error(`File name too long (max ${STORAGE_NAME_MAX} chars): "${name}"`);
  }

  /** File contents as a latin1 byte string, or undefined. offset/length like Espruino's read(). */
  read(name: string, offset = 0, length = 0): string | undefined {
    const b = this.readBytes(name);
    if (!b) return undefined;
    let off = Math.max(0, Math.floor(offset) || 0);
    if (off > b.length) off = b.length;
    let len = Math.floor(length) || 0;
    if (len <= 0 || off + len > b.length) len = b.length - off;
    return latin1FromBytes(b.subarray(off, off + len));
  }

  /** A copy of the file's bytes, or undefined. */
  readBytes(name: string): Uint8Array | undefined {
    SimStorage.checkName(name);
    const f = this.files.get(name);
    return f ? f.slice() : undefined;
  }

  /** Parsed JSON, undefined if the file is missing; throws on bad JSON unless noExceptions. */
  readJSON(name: string, noExceptions = false): unknown {
    const s = this.read(name);
    if (s === undefined) return undefined;
    try {
      return JSON.parse(s);
    } catch (e) {
      if (noExceptions) return undefined;
      throw e;
    }
  }

  /**
   * Espruino semantics: with offset 0 a file is (re)created with `size` (default: the data's length) bytes;
   * a later write with an offset fills in bytes that are still erased. Returns true on success.
   */
  write(name: string, data: StorageData, offset = 0, size = 0): boolean {
    SimStorage.checkName(name);
    const before = this.files.get(name);
    this.undo = { name, data: before ? before.slice() : undefined };
    offset = Math.floor(offset) || 0;
    size = Math.floor(size) || 0;
    if (offset < 0 || size < 0) return false;
    const d = toBytes(data);
    if (size === 0) size = d.length;
    if (size === 0) throw new Error("Can't create zero length file");
    let f = this.files.get(name);
    if ((!f && offset === 0) || (f && offset === 0 && (f.length !== size || !isErased(f, 0, size)))) {
      if (f && f.length === size && d.length === size && equal(f, d)) return true; // identical: Espruino skips the write
      if (f) this.trash(f);
      f = this.create(name, size);
    }
    if (!f) throw new Error('Unable to find or create file');
    if (offset + d.length > f.length) throw new Error('Too much data for file size');
    if (!isErased(f, offset, d.length)) throw new Error('File already written with different data');
    f.set(d, offset);
    return true;
  }

  writeJSON(name: string, value: unknown): boolean {
    return this.write(name, JSON.stringify(value));
  }

  /** Names in creation order (a rewritten file moves to the end, as in the flash log). */
  list(filter?: RegExp | string): string[] {
    const re = filter === undefined ? undefined : typeof filter === 'string' ? new RegExp(filter) : filter;
    const out: string[] = [];
    for (const n of this.files.keys()) {
      if (re) {
        re.lastIndex = 0;
        if (!re.test(n)) continue;
      }
      out.push(n);
    }
    return out;
  }

  erase(name: string): void {
    SimStorage.checkName(name);
    const f = this.files.get(name);
    if (f) this.trash(f);
    this.files.delete(name);
  }

  eraseAll(): void {
    this.files.clear();
    this.trashBytes = 0;
    this.trashCount = 0;
  }

  /** Bytes left after the last file (trash is only reclaimed by compact()). */
  getFree(): number {
    return Math.max(0, this.totalBytes - this.usedBytes());
  }

  getStats(): StorageStats {
    let fileBytes = 0;
    for (const f of this.files.values()) fileBytes += footprint(f.length);
    return {
      totalBytes: this.totalBytes,
      freeBytes: this.getFree(),
      fileBytes,
      fileCount: this.files.size,
      trashBytes: this.trashBytes,
      trashCount: this.trashCount,
    };
  }

  compact(): void {
    this.trashBytes = 0;
    this.trashCount = 0;
  }

  private usedBytes(): number {
    let n = this.trashBytes;
    for (const f of this.files.values()) n += footprint(f.length);
    return n;
  }

  private trash(f: Uint8Array): void {
    this.trashBytes += footprint(f.length);
    this.trashCount++;
  }

  private create(name: string, size: number): Uint8Array | undefined {
    this.files.delete(name);
    if (footprint(size) > this.getFree()) this.compact();
    if (footprint(size) > this.getFree()) return undefined;
    const f = new Uint8Array(size).fill(0xff);
    this.files.set(name, f);
    return f;
  }
}

function isErased(f: Uint8Array, from: number, len: number): boolean {
  for (let i = from; i < from + len && i < f.length; i++) if (f[i] !== 0xff) return false;
  return true;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
