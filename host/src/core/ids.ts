// Identifiers the host mints.
import { randomBytes, randomFillSync } from 'node:crypto';

// A randomBytes call per id was a visible share of the host's CPU under load (two ids per command): ids are
// cut from a buffer of CSPRNG bytes refilled 4 KiB at a time. Nonces and secrets keep their own call.
const POOL = Buffer.alloc(4096);
let at = POOL.length;

function pooled(n: number): Buffer {
  if (at + n > POOL.length) {
    randomFillSync(POOL);
    at = 0;
  }
  at += n;
  return POOL.subarray(at - n, at);
}

// Base 62 in ASCII order, so the text of a time sorts as the time does.
const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
let lastMs = 0;
let lastPrefix = '';

/** The time in ms as 7 base-62 digits (fixed width until the year 2080), never earlier than the last one minted. */
function timePrefix(): string {
  const ms = Math.max(Date.now(), lastMs);
  if (ms !== lastMs) {
    let n = ms;
    let s = '';
    for (let i = 0; i < 7; i++) {
      s = DIGITS[n % 62] + s;
      n = Math.floor(n / 62);
    }
    lastMs = ms;
    lastPrefix = s;
  }
  return lastPrefix;
}

// Time first, then 53 random bits: ids minted later sort after earlier ones, so the journal's indexes on
// them grow at one end (a random id landed on a random page of each index, and the WAL written per commit
// and the COMMIT's time both grow with the number of distinct pages a batch touches), and two ids
// of the same millisecond still differ but by chance (~1 in 10^16 per pair).
function timeOrdered(): string {
  return timePrefix() + pooled(7).toString('base64url').slice(0, 9).replace(/[-_]/g, 'x');
}

export function newCommandId(): string {
  return 'cmd_' + timeOrdered();
}

export function newRequestId(): string {
  return 'req_' + timeOrdered();
}

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

export function newSecret(): string {
  return randomBytes(32).toString('hex');
}
