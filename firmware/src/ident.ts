// Who this boot is. E.hwRand repeats the same sequence after every boot on every device, so the
// boot id and the nonces come from a boot counter kept in Storage (counted at load, before any id
// exists), the device id, the secret (through HMAC) and the timing of the boot (getTime()).
//
// Flash wear: one small Storage write per boot. Storage appends a new copy and reclaims the old
// ones at compaction, so erases are spread over the whole Storage area (thousands of boots per
// erase of a page). A write that fails is logged and the boot goes on: its id then differs from
// the previous boot's only through timing, which the log says.
import { utf8Enc } from './utf8';
import type { HmacKey } from './sha256';
import { hmac, hmacKey, toHex } from './sha256';
import { r32, randSeed } from './rand';

const FILE = 'proofrig.boot';

/** This boot's number (0 when Storage could not be read at all). */
let N = 0;
let K: HmacKey;
let boot = '';
let seq = 0;

function log(s: string): void {
  console.log('proofrig: ' + s);
}

/** Count this boot in Storage. Runs once, at load. */
export function countBoot(): void {
  let ok = false;
  try {
    const S = require('Storage') as EspStorage;
    N = ((S.readJSON(FILE, true) as number) | 0) + 1;
    ok = S.write(FILE, '' + N) && ((S.readJSON(FILE, true) as number) | 0) === N;
  } catch (e) {
    ok = false;
  }
  if (!ok) log('could not store boot count ' + N + ' in Storage "' + FILE + '"; this boot id differs from the last one only by boot timing');
}

/** The secret as an HMAC key, for the link's handshake. */
export function secretKey(): HmacKey {
  return K;
}

/** Make this boot's id ("<count>-<12 hex>") once the config (device id, secret) is known. */
export function bootId(dev: string, secret: string): string {
  K = hmacKey(utf8Enc(secret));
  const h = hmac(K, 'proofrig-boot-1|' + dev + '|' + N + '|' + getTime() + '|' + r32());
  randSeed(h);
  boot = N + '-' + toHex(h.substr(0, 6));
  return boot;
}

/** 32 hex chars never used before by this device: HMAC(secret, boot id, sequence number). */
export function nonce(): string {
  return toHex(hmac(K, 'proofrig-nonce-1|' + boot + '|' + ++seq).substr(0, 16));
}
