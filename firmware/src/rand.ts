// Randomness for ids, nonces and WebSocket masks: the hardware RNG, Math.random where it is missing.

/** 32 random bits as an unsigned number. */
export function r32(): number {
  if (typeof E !== 'undefined' && E.hwRand) return E.hwRand() >>> 0;
  return Math.floor(Math.random() * 4294967296);
}

/** A 16-bit number as 4 lowercase hex digits (kept to small integers: Espruino boxes larger ones as floats). */
export function hex4(x: number): string {
  return ('000' + x.toString(16)).slice(-4);
}

/** n lowercase hex characters (n a multiple of 4). */
export function randHex(n: number): string {
  let s = '';
  while (s.length < n) s += hex4(r32() & 0xffff);
  return s;
}

/** n random bytes as a byte string (chars 0..255). */
export function randBytes(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(r32() & 255);
  return s;
}
