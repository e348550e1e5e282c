// Identifiers the host mints.
import { randomBytes, randomFillSync } from 'node:crypto';

// A randomBytes call per id was ~7 % of the host's CPU under load (two ids per command): ids are
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

export function newCommandId(): string {
  return 'cmd_' + pooled(9).toString('base64url').replace(/[-_]/g, 'x');
}

export function newRequestId(): string {
  return 'req_' + pooled(9).toString('base64url').replace(/[-_]/g, 'x');
}

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

export function newSecret(): string {
  return randomBytes(32).toString('hex');
}
