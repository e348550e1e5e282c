// CRC-32 as Espruino's E.CRC32 computes it (IEEE 802.3, reflected, init and xor-out 0xFFFFFFFF), unsigned.
//
// Espruino 2v25 returns `jsvNewFromLongInteger(~crc)` of a uint32 (jswrap_espruino.c): an unsigned number.
// Older builds returned it as a signed 32-bit int, so both sides are compared after `>>> 0`.
import * as zlib from 'node:zlib';

let table: Uint32Array | undefined;

function tableCrc32(bytes: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = table[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** zlib.crc32 exists from Node 20.15 / 22.2; the table version covers older 20.x. */
const native = (zlib as unknown as { crc32?: (data: Uint8Array) => number }).crc32;

export function crc32(bytes: Uint8Array): number {
  return native ? native(bytes) >>> 0 : tableCrc32(bytes);
}

/** For tests: the table implementation, whatever Node offers. */
export const crc32Table = tableCrc32;

export function hex32(n: number): string {
  return '0x' + (n >>> 0).toString(16).padStart(8, '0');
}
