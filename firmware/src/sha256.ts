// SHA-256 and HMAC-SHA256 in plain 32-bit integer JS (the ESP32 Espruino build may lack
// require('crypto')). Works on byte strings; one schedule buffer and one state buffer are
// reused for every block. Int32Array rather than Uint32Array: the same 32 bits, but Espruino
// keeps signed 32-bit values as integers, where unsigned ones above 2^31 become floats.
import { utf8Enc } from './utf8';
import { hex4 } from './rand';

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const W = new Int32Array(64);
const H = new Int32Array(8);

/** Byte j of the padded message: the bytes, 0x80, zeros, then the bit length big-endian in the last 8. */
function padByte(m: string, n: number, total: number, j: number): number {
  if (j < n) return m.charCodeAt(j) & 255;
  if (j === n) return 0x80;
  const k = total - j;
  if (k > 8) return 0;
  if (k > 4) return ((n / 0x20000000) >>> ((k - 5) * 8)) & 255;
  return ((n << 3) >>> ((k - 1) * 8)) & 255;
}

function compress(): void {
  let t: number;
  for (t = 16; t < 64; t++) {
    const x = W[t - 15];
    const y = W[t - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
  }
  let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0;
  H[1] = (H[1] + b) | 0;
  H[2] = (H[2] + c) | 0;
  H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0;
  H[5] = (H[5] + f) | 0;
  H[6] = (H[6] + g) | 0;
  H[7] = (H[7] + h) | 0;
}

/** SHA-256 of a byte string, as a 32-byte byte string. */
export function sha256(m: string): string {
  const n = m.length;
  const total = ((n + 72) >> 6) << 6;
  let i: number;
  for (i = 0; i < 8; i++) H[i] = IV[i];
  for (let blk = 0; blk < total; blk += 64) {
    for (i = 0; i < 16; i++) {
      const j = blk + i * 4;
      W[i] =
        (padByte(m, n, total, j) << 24) |
        (padByte(m, n, total, j + 1) << 16) |
        (padByte(m, n, total, j + 2) << 8) |
        padByte(m, n, total, j + 3);
    }
    compress();
  }
  let o = '';
  for (i = 0; i < 8; i++) o += String.fromCharCode((H[i] >>> 24) & 255, (H[i] >>> 16) & 255, (H[i] >>> 8) & 255, H[i] & 255);
  return o;
}

/** Lowercase hex of a byte string. */
export function toHex(b: string): string {
  let o = '';
  for (let i = 0; i < b.length; i += 2) o += hex4(((b.charCodeAt(i) & 255) << 8) | (b.charCodeAt(i + 1) & 255));
  return b.length & 1 ? o.slice(0, -2) : o;
}

/**
 * HMAC-SHA256 in lowercase hex. key and msg are JS strings used as their UTF-8 bytes, so the
 * result equals Node's createHmac('sha256', key).update(msg).digest('hex').
 */
export function hmacSha256Hex(key: string, msg: string): string {
  let k = utf8Enc(key);
  if (k.length > 64) k = sha256(k);
  let ip = '';
  let op = '';
  for (let i = 0; i < 64; i++) {
    const c = i < k.length ? k.charCodeAt(i) : 0;
    ip += String.fromCharCode(c ^ 0x36);
    op += String.fromCharCode(c ^ 0x5c);
  }
  return toHex(sha256(op + sha256(ip + utf8Enc(msg))));
}
