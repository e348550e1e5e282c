// Randomness for back-off jitter and WebSocket masks (neither needs to be secret). E.hwRand is C
// rand() on Espruino and repeats the same sequence after every boot on every device, so it is
// mixed with a xorshift seeded per boot from the boot identity (randSeed, in ident.ts).

let X = 0x2545f491;

/** Seed the per-boot mixer from 4+ bytes of a byte string. */
export function randSeed(b: string): void {
  X = ((b.charCodeAt(0) << 24) | (b.charCodeAt(1) << 16) | (b.charCodeAt(2) << 8) | b.charCodeAt(3)) | 1;
}

/** 32 random bits as an unsigned number. */
export function r32(): number {
  X ^= X << 13;
  X ^= X >>> 17;
  X ^= X << 5;
  return ((typeof E !== 'undefined' && E.hwRand ? E.hwRand() : Math.floor(Math.random() * 4294967296)) ^ X) >>> 0;
}

/** A 16-bit number as 4 lowercase hex digits (kept to small integers: Espruino boxes larger ones as floats). */
export function hex4(x: number): string {
  return ('000' + x.toString(16)).slice(-4);
}

/** n random bytes as a byte string (chars 0..255). */
export function randBytes(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(r32() & 255);
  return s;
}
