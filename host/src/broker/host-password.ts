// The host's broker password: a file beside the journal (0600, like the MCP tokens), made on first
// use. `proofrig broker acl` puts its hash in the broker's password file; `serve --broker` logs in
// with it when the broker URL carries no credentials.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateFile } from '../state-dir.js';

export const BROKER_PASSWORD_FILE = 'broker-host-password';

export function loadOrCreateBrokerPassword(dir: string): string {
  const file = join(dir, BROKER_PASSWORD_FILE);
  if (existsSync(file)) {
    const t = readFileSync(file, 'utf8').trim();
    if (t) return t;
  }
  const pass = randomBytes(24).toString('base64url');
  privateFile(file);
  writeFileSync(file, pass + '\n', { mode: 0o600 });
  return pass;
}
