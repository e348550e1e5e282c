// Who may reach MCP over HTTP: the peer address, the Host and Origin headers (DNS rebinding),
// and the bearer token that decides the scopes a call carries. Pure functions, tested directly.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';

/** Loopback peer addresses (IPv4 127/8, IPv6 ::1, and IPv4-mapped 127/8). */
export function isLoopback(addr: string | undefined): boolean {
  return !!addr && (addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.'));
}

/** Whether a peer at `addr` may use MCP: loopback always, anyone else only with --allow-remote-mcp. */
export function mcpAllowedFrom(addr: string | undefined, allowRemoteMcp: boolean): boolean {
  return allowRemoteMcp || isLoopback(addr);
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * Host header values MCP answers: the loopback names with the actual port, plus `extra`
 * (a name without a port gets the actual port; "name:port" is taken as is). Lowercase.
 */
export function allowedHosts(port: number, extra: string[] = []): string[] {
  const out = LOOPBACK_NAMES.map((n) => `${n}:${port}`);
  for (const e of extra) {
    const hasPort = /^\[[^\]]+\]:\d+$/.test(e) || /^[^:[\]]+:\d+$/.test(e);
    out.push((hasPort ? e : `${e}:${port}`).toLowerCase());
  }
  return out;
}

/** Origin header values MCP answers (requests without an Origin, i.e. not from a browser, pass). */
export function allowedOrigins(port: number, extra: string[] = []): string[] {
  return [...LOOPBACK_NAMES.map((n) => `http://${n}:${port}`), ...extra.map((o) => o.replace(/\/+$/, '').toLowerCase())];
}

/** Why the Host/Origin headers are refused, or null when they are allowed. */
export function checkHeaders(host: string | undefined, origin: string | undefined, hosts: string[], origins: string[]): string | null {
  if (!host) return 'missing Host header';
  if (!hosts.includes(host.toLowerCase())) return `Host "${host.slice(0, 100)}" is not allowed (allowed: ${hosts.join(', ')}; add names with --allowed-host)`;
  if (origin !== undefined && !origins.includes(origin.toLowerCase()))
    return `Origin "${origin.slice(0, 100)}" is not allowed (allowed: ${origins.join(', ')}; add origins with --allowed-origin)`;
  return null;
}

export interface Tokens {
  /** What an agent's client sends: scope `agent`. */
  agent: string;
  /** What an operator sends (proofrig call --operator): scopes `agent` and `operator`. */
  operator: string;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The identity a request's Authorization header proves, or null. Compared in constant time
 * (on digests, so the token's length leaks nothing either).
 */
export function authenticate(header: string | undefined, tokens: Tokens): AuthInfo | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return null;
  const got = digest(m[1]);
  if (timingSafeEqual(got, digest(tokens.operator))) return { token: m[1], clientId: 'operator', scopes: ['agent', 'operator'] };
  if (timingSafeEqual(got, digest(tokens.agent))) return { token: m[1], clientId: 'agent', scopes: ['agent'] };
  return null;
}
