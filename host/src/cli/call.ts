// `proofrig call`: a person drives a rig through the same MCP tools an agent uses, and
// watches the command's live status until it is terminal.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { join } from 'node:path';
import { AGENT_TOKEN_FILE, OPERATOR_TOKEN_FILE, readToken, stateDir } from '../state-dir.js';

/**
 * The token `proofrig call` sends: --token-file, else PROOFRIG_TOKEN, else the file the server
 * wrote beside its journal (--db, default .proofrig/journal.db) — agent's, or operator's with --operator
 * (when there is one).
 */
export function findToken(o: { db: string; operator?: boolean; tokenFile?: string; env?: NodeJS.ProcessEnv }): { token?: string; source?: string } {
  if (o.tokenFile) {
    const t = readToken(o.tokenFile);
    if (!t) throw new Error(`--token-file ${o.tokenFile} does not exist or is empty`);
    return { token: t, source: o.tokenFile };
  }
  const env = o.env ?? process.env;
  if (env.PROOFRIG_TOKEN && !o.operator) return { token: env.PROOFRIG_TOKEN, source: 'PROOFRIG_TOKEN' };
  const file = join(stateDir(o.db), o.operator ? OPERATOR_TOKEN_FILE : AGENT_TOKEN_FILE);
  const t = readToken(file);
  // No operator token (a --no-auth server): none is sent, and the host asks the person at its own terminal.
  return t ? { token: t, source: file } : {};
}

export interface CallOptions {
  url: string;
  /** Bearer token for the server's MCP (undefined: send none, for a --no-auth server). */
  token?: string;
  /** Where the token came from, for the error message when it is refused. */
  tokenSource?: string;
  json: boolean;
  follow: boolean;
  out: NodeJS.WritableStream & { isTTY?: boolean };
  /**
   * Act as the operator: the operator token is sent when the server has one; a --no-auth server asks
   * the person at its own terminal instead, so the call may wait for that answer.
   */
  operator?: boolean;
}

/** How long an operator call may wait for the person at the host's terminal (the host gives them 120 s). */
const OPERATOR_CALL_TIMEOUT_MS = 130_000;

/** key=value pairs; a value that parses as JSON (1, true, null, "text") is taken as that JSON value. */
export function parseToolArgs(pairs: string[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new Error(`argument "${p}" is not key=value`);
    const k = p.slice(0, i);
    const v = p.slice(i + 1);
    try {
      args[k] = JSON.parse(v);
    } catch {
      args[k] = v;
    }
  }
  return args;
}

function line(s: Record<string, unknown>): string {
  const parts = [`${s.command_id}`, `${s.state}`];
  if (s.evidence) parts.push(`evidence=${s.evidence}`);
  parts.push(`verified=${s.verified}`);
  if (s.error_code) parts.push(`error=${s.error_code}`);
  if (s.position_mm !== null && s.position_mm !== undefined) parts.push(`pos=${s.position_mm} mm`);
  if (s.progress_pct !== null && s.progress_pct !== undefined) parts.push(`${s.progress_pct}%`);
  if (!s.terminal && typeof s.estimated_remaining_seconds === 'number') parts.push(`~${s.estimated_remaining_seconds.toFixed(1)} s left`);
  parts.push(`${s.elapsed_ms} ms`);
  return parts.join('  ');
}

/** Exit codes: 0 completed (or a non-action tool served), 3 any other terminal outcome, 1 tool error. */
export async function call(tool: string, args: Record<string, unknown>, o: CallOptions): Promise<number> {
  const client = new Client({ name: 'proofrig-call', version: '0.1.0' });
  const endpoint = new URL('/mcp', o.url);
  const transport = new StreamableHTTPClientTransport(endpoint, o.token ? { requestInit: { headers: { authorization: `Bearer ${o.token}` } } } : undefined);
  try {
    await client.connect(transport);
  } catch (e) {
    const msg = (e as Error).message;
    if (/\b401\b|bearer token/.test(msg)) {
      throw new Error(
        `the proofrig server at ${endpoint} refused ${o.token ? `the token from ${o.tokenSource ?? 'the command line'}` : 'a call without a token'}: ` +
          'run proofrig call on the machine of the server from its folder, or pass --db (the server\'s journal) or --token-file',
      );
    }
    throw new Error(`cannot reach a proofrig server at ${endpoint} (${msg}); start one with "npm start" or pass --url`);
  }
  try {
    if (o.operator && !o.token) o.out.write('no operator token (a --no-auth host): the host asks the person at its own terminal to confirm operator-only tools\n');
    let res = (await client.callTool({ name: tool, arguments: args }, undefined, o.operator ? { timeout: OPERATOR_CALL_TIMEOUT_MS } : undefined)) as CallToolResult;
    if (res.isError) {
      const text = res.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
      o.out.write(`error: ${text}\n`);
      return 1;
    }
    let s = res.structuredContent as Record<string, unknown> | undefined;
    const isCommand = !!s && typeof s.command_id === 'string' && typeof s.terminal === 'boolean';
    if (!isCommand || !o.follow) {
      o.out.write(JSON.stringify(s ?? res.content, null, 2) + '\n');
      return isCommand && s!.terminal && s!.state !== 'completed' ? 3 : 0;
    }
    let last = '';
    const live = !o.json && !!o.out.isTTY;
    for (;;) {
      const l = line(s!);
      if (!o.json && l !== last) o.out.write(live ? `\r\x1b[2K${l}` : l + '\n');
      last = l;
      if (s!.terminal) break;
      res = (await client.callTool({ name: 'get_action_status', arguments: { command_id: s!.command_id, wait_ms: 500 } })) as CallToolResult;
      if (res.isError) throw new Error(res.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n'));
      s = res.structuredContent as Record<string, unknown>;
    }
    if (live) o.out.write('\n');
    if (o.json) o.out.write(JSON.stringify(s, null, 2) + '\n');
    else if (s!.detail) o.out.write(`detail: ${s!.detail}\n`);
    return s!.state === 'completed' ? 0 : 3;
  } finally {
    // End the MCP session on the server (it counts against the server's session cap).
    await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

/**
 * `proofrig open`: ask a running host for a one-time dashboard link with the token and print it.
 * 0 printed, 1 refused by the host, 2 no host there.
 */
export async function openDashboard(o: { url: string; token?: string; tokenSource?: string; out: NodeJS.WritableStream; err: NodeJS.WritableStream }): Promise<number> {
  let res: Response;
  try {
    res = await fetch(new URL('/dashboard-link', o.url), { method: 'POST', headers: o.token ? { authorization: `Bearer ${o.token}` } : {} });
  } catch (e) {
    o.err.write(`proofrig open: no proofrig at ${o.url} (${(e as Error).message}); is it running? (--url, or PROOFRIG_URL)\n`);
    return 2;
  }
  if (!res.ok) {
    const why = res.status === 401 ? `the host refused the token${o.tokenSource ? ' from ' + o.tokenSource : ''}` : `HTTP ${res.status}`;
    o.err.write(`proofrig open: ${why}: ${(await res.text()).slice(0, 300)}\n`);
    return 1;
  }
  const { url, expires_in_s } = (await res.json()) as { url: string; expires_in_s: number };
  o.out.write(`${url}\n`);
  o.err.write(`Open it in a browser within ${expires_in_s} s; it signs that browser into the dashboard once (no token to paste).\n`);
  return 0;
}
