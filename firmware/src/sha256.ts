// SHA-256 is Espruino's native require('crypto').SHA256 (ESP32 and Linux builds; it returns an
// ArrayBuffer of 32 bytes); HMAC-SHA256 (RFC 2104) is built on it here, on byte strings.
import { utf8Enc } from './utf8';
import { hex4 } from './rand';
import { wsMask } from '@proofrig/protocol/wscodec';

let C: { SHA256: (m: string) => ArrayBuffer } | undefined;

/** SHA-256 of a byte string, as a 32-byte byte string. */
export function sha256(m: string): string {
  if (!C) C = require('crypto');
  return E.toString(C!.SHA256(m));
}

/** Lowercase hex of a byte string. */
export function toHex(b: string): string {
  let o = '';
  for (let i = 0; i < b.length; i += 2) o += hex4(((b.charCodeAt(i) & 255) << 8) | (b.charCodeAt(i + 1) & 255));
  return b.length & 1 ? o.slice(0, -2) : o;
}

/** An HMAC key: the inner and outer padded keys, computed once and reused for every message. */
export interface HmacKey {
  i: string;
  o: string;
}

/** Prepare a key given as bytes: zero-padded to the 64-byte block, XORed with 0x36 and 0x5c (wsMask does it four bytes at a time). */
export function hmacKey(k: string): HmacKey {
  if (k.length > 64) k = sha256(k);
  k += '\0'.repeat(64 - k.length);
  return { i: wsMask(k, '\x36\x36\x36\x36', 0), o: wsMask(k, '\x5c\x5c\x5c\x5c', 0) };
}

/** HMAC-SHA256 of a byte string, as 32 bytes. */
export function hmac(k: HmacKey, m: string): string {
  return sha256(k.o + sha256(k.i + m));
}

/**
 * HMAC-SHA256 in lowercase hex. key and msg are JS strings used as their UTF-8 bytes, so the
 * result equals Node's createHmac('sha256', key).update(msg).digest('hex').
 */
export function hmacSha256Hex(key: string, msg: string): string {
  return toHex(hmac(hmacKey(utf8Enc(key)), utf8Enc(msg)));
}

/**
 * Compare two strings in time that does not depend on where they differ: their SHA-256 digests are
 * compared instead (native, no per-character JavaScript loop; where two digests first differ tells
 * nothing about where the strings do).
 */
export function same(a: string, b: string): boolean {
  return a.length === b.length && sha256(a) === sha256(b);
}
