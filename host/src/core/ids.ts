// Identifiers the host mints.
import { randomBytes } from 'node:crypto';

export function newCommandId(): string {
  return 'cmd_' + randomBytes(9).toString('base64url').replace(/[-_]/g, 'x');
}

export function newRequestId(): string {
  return 'req_' + randomBytes(9).toString('base64url').replace(/[-_]/g, 'x');
}

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

export function newSecret(): string {
  return randomBytes(32).toString('hex');
}
