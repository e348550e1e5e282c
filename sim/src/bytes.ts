// Espruino's byte handling: jsvIterateCallback's view of arguments as bytes, E.CRC32, base64.

function tag(v: unknown): string {
  return Object.prototype.toString.call(v).slice(8, -1);
}

/**
 * Append the bytes Espruino sees in `v` (E.toString, E.toUint8Array, Storage.write of an array):
 * numbers are one byte, strings one byte per char, arrays and typed arrays element by element,
 * ArrayBuffers byte by byte, {data, count} repeats data count times.
 */
export function pushBytes(v: unknown, out: number[]): void {
  if (typeof v === 'number') out.push(v & 255);
  else if (typeof v === 'boolean') out.push(v ? 1 : 0);
  else if (typeof v === 'string') for (let i = 0; i < v.length; i++) out.push(v.charCodeAt(i) & 255);
  else if (ArrayBuffer.isView(v)) {
    if (tag(v) === 'DataView') {
      const d = v as DataView;
      pushBytes(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), out);
    } else {
      const a = v as unknown as ArrayLike<number>;
      for (let i = 0; i < a.length; i++) out.push(Number(a[i]) & 255);
    }
  } else if (tag(v) === 'ArrayBuffer') pushBytes(new Uint8Array(v as ArrayBuffer), out);
  else if (Array.isArray(v)) for (const x of v) pushBytes(x, out);
  else if (typeof v === 'object' && v !== null && 'data' in v) {
    const o = v as { data: unknown; count?: unknown };
    const n = o.count === undefined ? 1 : Math.max(0, Math.floor(Number(o.count)) || 0);
    for (let i = 0; i < n; i++) pushBytes(o.data, out);
  }
}

export function bytesOf(args: readonly unknown[]): number[] {
  const out: number[] = [];
  for (const a of args) pushBytes(a, out);
  return out;
}

export function latin1(bytes: readonly number[]): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode.apply(null, bytes.slice(i, i + 8192) as number[]);
  return s;
}

/** Only characters 0-255: the string is its own bytes. */
const BYTE_STRING = /^[\x00-\xff]*$/;

/** latin1(bytesOf(args)) without the array of numbers for the common cases: one byte string or one byte buffer. */
export function latin1Of(args: readonly unknown[]): string {
  if (args.length === 1) {
    const v = args[0];
    if (typeof v === 'string' && BYTE_STRING.test(v)) return v;
    const t = tag(v);
    if (t === 'ArrayBuffer') return Buffer.from(v as ArrayBuffer).toString('latin1');
    if (t === 'Uint8Array') {
      const a = v as Uint8Array;
      return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('latin1');
    }
  }
  return latin1(bytesOf(args));
}

/** The bytes of one value as bytesOf([v]) sees them, as a Buffer (no array of numbers for a byte string). */
export function bufferOf(v: unknown): Buffer {
  if (typeof v === 'string' && BYTE_STRING.test(v)) return Buffer.from(v, 'latin1');
  return Buffer.from(bytesOf([v]));
}

/** Standard CRC-32 (IEEE, reflected, init and xor-out 0xFFFFFFFF) as Espruino's E.CRC32: an unsigned number. */
export function crc32(bytes: readonly number[]): number {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b & 255;
    for (let t = 0; t < 8; t++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

export function btoaLatin1(s: string): string {
  for (let i = 0; i < s.length; i++)
    if (s.charCodeAt(i) > 255) throw new Error('btoa: character out of range (byte strings only)');
  return Buffer.from(s, 'latin1').toString('base64');
}

export function atobLatin1(s: string): string {
  return Buffer.from(s, 'base64').toString('latin1');
}
