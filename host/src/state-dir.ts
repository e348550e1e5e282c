// The host's private folder (`.proofrig/` next to the journal): the journal and the MCP tokens,
// readable by this user only (folder 0700, files 0600), whatever the umask.
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Tokens } from './mcp/access.js';
import { isPostgresUrl } from './core/journal/db-url.js';
import { STATE_HOME } from './paths.js';

export const AGENT_TOKEN_FILE = 'agent-token';
export const OPERATOR_TOKEN_FILE = 'operator-token';

/** The folder that holds the journal `db` (and the tokens beside it). */
export function stateDir(db: string): string {
  // A journal in PostgreSQL has no folder of its own: the tokens are in the host's state folder.
  if (isPostgresUrl(db)) return STATE_HOME;
  return dirname(resolve(db));
}

/**
 * Create the folder 0700 when missing. An existing folder named `.proofrig` is tightened to
 * 0700; any other existing folder (the user chose it, e.g. with --db /srv/x.db) is left alone
 * and reported when others can read it, rather than changing the permissions of a shared folder.
 */
export function prepareStateDir(dir: string): string | null {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    return null;
  }
  if (basename(dir) === '.proofrig') {
    chmodSync(dir, 0o700);
    return null;
  }
  const mode = statSync(dir).mode & 0o777;
  return mode & 0o077 ? `folder ${dir} holding the journal and tokens is accessible to other users (mode ${mode.toString(8)}); the files themselves are 0600` : null;
}

/** Make `file` exist with mode 0600 (created so, never readable by others in between). */
export function privateFile(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
}

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Read a token file (trimmed), or undefined when it does not exist or is empty. */
export function readToken(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const t = readFileSync(file, 'utf8').trim();
  return t.length ? t : undefined;
}

function loadOrCreate(file: string): { token: string; created: boolean } {
  const t = readToken(file);
  if (t) {
    chmodSync(file, 0o600);
    return { token: t, created: false };
  }
  const token = newToken();
  privateFile(file);
  writeFileSync(file, token + '\n', { mode: 0o600 });
  return { token, created: true };
}

export interface TokenSet extends Tokens {
  agentFile: string;
  operatorFile: string;
  /** The tokens were generated now (so they are shown once). */
  created: boolean;
}

/** The MCP bearer tokens in `dir`, generated on first use. */
export function loadOrCreateTokens(dir: string): TokenSet {
  const agentFile = join(dir, AGENT_TOKEN_FILE);
  const operatorFile = join(dir, OPERATOR_TOKEN_FILE);
  const a = loadOrCreate(agentFile);
  const o = loadOrCreate(operatorFile);
  return { agent: a.token, operator: o.token, agentFile, operatorFile, created: a.created || o.created };
}

/** Tokens that live only as long as the process (journal ':memory:'). */
export function ephemeralTokens(): TokenSet {
  return { agent: newToken(), operator: newToken(), agentFile: '', operatorFile: '', created: true };
}
