// Handing the dashboard its access once, instead of a person pasting the token: `proofrig open`
// (holding the token) asks the host for a one-time link; opening it sets an HttpOnly cookie that
// the page's /events requests carry, and the link is spent. The cookie is never accepted on /mcp,
// so a web page cannot act through a browser that has it.
import { randomBytes } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';

/** How long a one-time link can be opened. */
export const LINK_TTL_MS = 60_000;
/** How long the dashboard stays signed in through its cookie. */
export const SESSION_TTL_MS = 12 * 3600_000;
export const COOKIE = 'proofrig_dashboard';
/** Outstanding links and live sessions at most (a token holder minting links cannot grow memory without bound). */
const MAX_ENTRIES = 256;

interface Entry {
  auth: AuthInfo;
  until: number;
}

export class DashboardLinks {
  private links = new Map<string, Entry>();
  private sessions = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A one-time code for whoever holds `auth` (only the dashboard's read scope is handed on). */
  mint(auth: AuthInfo): string {
    const code = randomBytes(24).toString('base64url');
    put(this.links, code, { auth: readOnly(auth), until: this.now() + LINK_TTL_MS }, this.now());
    return code;
  }

  /** Spend a code: the session id its cookie will carry, or null when it was used or has expired. */
  redeem(code: string): string | null {
    const e = this.links.get(code);
    this.links.delete(code);
    if (!e || e.until < this.now()) return null;
    const sid = randomBytes(24).toString('base64url');
    put(this.sessions, sid, { auth: e.auth, until: this.now() + SESSION_TTL_MS }, this.now());
    return sid;
  }

  /** Who a Cookie header's dashboard session is, or null. */
  session(cookieHeader: string | undefined): AuthInfo | null {
    const m = new RegExp(`(?:^|;\\s*)${COOKIE}=([A-Za-z0-9_-]+)`).exec(cookieHeader ?? '');
    const e = m ? this.sessions.get(m[1]) : undefined;
    if (!e) return null;
    if (e.until < this.now()) {
      this.sessions.delete(m![1]);
      return null;
    }
    return e.auth;
  }
}

/** The dashboard reads; it never carries the operator's authority. */
function readOnly(auth: AuthInfo): AuthInfo {
  return { token: '', clientId: 'dashboard', scopes: ['agent'], extra: { via: auth.clientId } };
}

function put(m: Map<string, Entry>, k: string, e: Entry, now: number): void {
  for (const [key, v] of m) if (v.until < now) m.delete(key);
  while (m.size >= MAX_ENTRIES) m.delete(m.keys().next().value!);
  m.set(k, e);
}
