// Who reaches MCP over HTTP, and how much of the listener one peer can take: the attacks of
// issue 7 items 2 and 4 (DNS rebinding, no token, sessions forever, connection floods),
// replayed with raw HTTP against a running host.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { HostCore } from '../host/src/core/host.js';
import { startHttpHost, type HttpHost, type HttpOptions } from '../host/src/mcp/http.js';
import { authenticate, isLoopback, mcpAllowedFrom } from '../host/src/mcp/access.js';
import { serve, type Running } from '../host/src/serve.js';
import { clientConfig } from '../host/src/cli/main.js';
import { FakeDevice, flush } from './helpers/fake-device.js';
import { mcpTransport, until } from './helpers/e2e.js';

const tmpDir = () => mkdtempSync(join(tmpdir(), 'proofrig-mcpsec-'));
const TOKENS = { agent: 'agent-token-for-tests-0123456789', operator: 'operator-token-for-tests-987654' };
const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } } };

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One raw POST /mcp with exactly these headers (Host included, which fetch would not let us set). */
function post(port: number, headers: Record<string, string>, body: unknown = INIT, address = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(
      {
        host: address,
        port,
        path: '/mcp',
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', host: `127.0.0.1:${port}`, ...headers },
      },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: b }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

let core: HostCore | undefined;
let host: HttpHost | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await host?.close();
  core?.close();
  host = undefined;
  core = undefined;
});

async function start(o: Partial<HttpOptions> = {}): Promise<HttpHost> {
  core = new HostCore({ db: join(tmpDir(), 'journal.db'), logger: pino({ level: 'silent' }) });
  host = await startHttpHost(core, 0, { tokens: TOKENS, ...o });
  return host;
}
const bearer = (t = TOKENS.agent) => ({ authorization: `Bearer ${t}` });

describe('DNS rebinding: a web page cannot reach MCP through a name that resolves to this machine', () => {
  it('Host: evil.example:PORT is refused 403 and creates no session', async () => {
    const h = await start();
    const r = await post(h.port, { ...bearer(), host: `evil.example:${h.port}` });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error.message).toMatch(/Host "evil.example:\d+" is not allowed/);
    expect(r.headers['mcp-session-id']).toBeUndefined();
    expect(h.sessionCount()).toBe(0);
  });

  it('Origin: http://evil.example is refused 403 even with the right Host and token', async () => {
    const h = await start();
    const r = await post(h.port, { ...bearer(), origin: 'http://evil.example' });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error.message).toMatch(/Origin "http:\/\/evil.example" is not allowed/);
    expect(h.sessionCount()).toBe(0);
  });

  it('the loopback names with the actual port are served, and so are names added with --allowed-host/--allowed-origin', async () => {
    const h = await start({ allowedHosts: ['rig-pc.lan'], allowedOrigins: ['http://rig-pc.lan:9000'] });
    for (const hostHeader of [`127.0.0.1:${h.port}`, `localhost:${h.port}`, `[::1]:${h.port}`, `rig-pc.lan:${h.port}`]) {
      expect((await post(h.port, { ...bearer(), host: hostHeader, origin: `http://localhost:${h.port}` })).status).toBe(200);
    }
    expect((await post(h.port, { ...bearer(), origin: 'http://rig-pc.lan:9000' })).status).toBe(200);
    // the right name on another port is another site
    expect((await post(h.port, { ...bearer(), host: `localhost:${h.port + 1}` })).status).toBe(403);
  });
});

describe('MCP needs the bearer token', () => {
  it('no token: 401 with WWW-Authenticate and a JSON-RPC error saying where the token is; no session', async () => {
    const h = await start();
    const r = await post(h.port, {});
    expect(r.status).toBe(401);
    // RFC 6750 §3.1: no error code when no token was sent.
    expect(r.headers['www-authenticate']).toBe('Bearer realm="proofrig"');
    expect(JSON.parse(r.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringMatching(/missing bearer token.*agent-token/) } });
    expect(h.sessionCount()).toBe(0);
  });

  it('a wrong token: 401, and a session id from another client does not help', async () => {
    const h = await start();
    const ok = await post(h.port, bearer());
    const sid = ok.headers['mcp-session-id'] as string;
    expect(sid).toBeTruthy();
    const r = await post(h.port, { authorization: 'Bearer not-the-token', 'mcp-session-id': sid }, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="proofrig", error="invalid_token"');
    expect(JSON.parse(r.body).error.message).toMatch(/wrong bearer token/);
  });

  it('the agent token carries scope agent, the operator token agent+operator; tool handlers see them as authInfo', async () => {
    const seen: unknown[] = [];
    const orig = StreamableHTTPServerTransport.prototype.handleRequest;
    vi.spyOn(StreamableHTTPServerTransport.prototype, 'handleRequest').mockImplementation(function (this: StreamableHTTPServerTransport, req, res, body) {
      seen.push((req as { auth?: unknown }).auth);
      return orig.call(this, req, res, body);
    });
    const h = await start();
    await post(h.port, bearer(TOKENS.agent));
    await post(h.port, bearer(TOKENS.operator));
    expect(seen).toEqual([
      { token: TOKENS.agent, clientId: 'agent', scopes: ['agent'] },
      { token: TOKENS.operator, clientId: 'operator', scopes: ['agent', 'operator'] },
    ]);
    expect(authenticate('Bearer ' + TOKENS.agent + 'x', TOKENS)).toBeNull();
    expect(authenticate('Basic ' + TOKENS.agent, TOKENS)).toBeNull();
  });

  it('--no-auth serves loopback without a token, and is refused together with --allow-remote-mcp', async () => {
    const h = await start({ tokens: null });
    expect((await post(h.port, {})).status).toBe(200);
    await expect(serve({ db: join(tmpDir(), 'j.db'), port: 0, logger: pino({ level: 'silent' }), auth: false, allowRemoteMcp: true })).rejects.toThrow(/--no-auth is only allowed/);
  });
});

describe('--no-auth gives no operator authority to an MCP client', () => {
  it('a client over HTTP without a token that declares form elicitation and accepts every form neither clears an e-stop nor removes a device', async () => {
    const h = await start({ tokens: null });
    core!.provision('rig1', 'c'.repeat(64), JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')));
    const dev = new FakeDevice(core!, 'rig1', 'c'.repeat(64), 'boot-1');
    await dev.connect();
    const forms: unknown[] = [];
    const client = new Client({ name: 'self-confirming-agent', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      forms.push(req.params);
      return { action: 'accept', content: { device_id: 'rig1' } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${h.port}/mcp`)));
    try {
      for (const tool of ['estop_clear', 'remove_device']) {
        const r = (await client.callTool({ name: tool, arguments: { device_id: 'rig1' } })) as CallToolResult;
        expect(r.isError).toBe(true);
        expect((r.content[0] as { text: string }).text).toMatch(/^OPERATOR_REQUIRED: .*The host has no interactive terminal where a person could confirm it/);
      }
    } finally {
      await client.close();
    }
    expect(forms).toEqual([]);
    expect(dev.of('cmd')).toEqual([]);
    expect(core!.journal.device('rig1')).toBeDefined();
  });
});

describe('MCP answers loopback peers only, unless --allow-remote-mcp', () => {
  it('the rule, for every kind of address', () => {
    for (const a of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) expect(mcpAllowedFrom(a, false)).toBe(true);
    for (const a of ['192.168.1.20', '10.0.0.5', '::ffff:192.168.1.20', 'fe80::1', '', undefined]) expect(mcpAllowedFrom(a, false)).toBe(false);
    expect(mcpAllowedFrom('192.168.1.20', true)).toBe(true);
    expect(isLoopback('128.0.0.1')).toBe(false);
  });

  // No real-socket test from a non-loopback peer: tests here never send traffic to an address
  // outside 127.0.0.0/8 (not even this machine's own interface address). The HTTP handler calls
  // this same function with the socket's remote address before reading the body.
});

describe('sessions end and are bounded', () => {
  it('an idle session expires: its id then gets 404 saying so, and the count drops', async () => {
    const h = await start({ sessionIdleMs: 200 });
    const sid = (await post(h.port, bearer())).headers['mcp-session-id'] as string;
    expect(h.sessionCount()).toBe(1);
    await until(() => h.sessionCount() === 0, 3000, 'expiry');
    const r = await post(h.port, { ...bearer(), 'mcp-session-id': sid }, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error.message).toMatch(/unknown or expired MCP session.*initialize a new one/);
  });

  it('bare initialize calls stop at the session cap with a clear 503; nothing grows past it, and the last sessions stay the operator\'s', async () => {
    const h = await start({ maxSessions: 5 });
    const statuses: number[] = [];
    let last = '';
    for (let i = 0; i < 40; i++) {
      const r = await post(h.port, bearer());
      statuses.push(r.status);
      if (r.status !== 200) last = r.body;
    }
    // 2 of the 5 are kept for the operator token.
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 503)).toHaveLength(37);
    expect(JSON.parse(last).error.message).toMatch(/too many open MCP sessions \(3 of 5, the last 2 kept for the operator token\).*DELETE \/mcp/);
    expect(h.sessionCount()).toBe(3);
    const op = [await post(h.port, bearer(TOKENS.operator)), await post(h.port, bearer(TOKENS.operator)), await post(h.port, bearer(TOKENS.operator))];
    expect(op.map((r) => r.status)).toEqual([200, 200, 503]);
    expect(h.sessionCount()).toBe(5);
  });

  it('a real client that closes its session (DELETE) frees its slot', async () => {
    const running: Running = await serve({ db: join(tmpDir(), 'j.db'), port: 0, logger: pino({ level: 'silent' }), maxSessions: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        const t = mcpTransport(running);
        const c = new Client({ name: 'c', version: '1' });
        await c.connect(t);
        await c.listTools();
        await t.terminateSession();
        await c.close();
      }
      expect(running.http.sessionCount()).toBe(0);
    } finally {
      await running.close();
    }
  });
});

describe('one peer cannot take the listener', () => {
  const openRaw = async (port: number, n: number) => {
    const socks: { s: net.Socket; closedAt?: number }[] = [];
    for (let i = 0; i < n; i++) {
      const s = net.connect(port, '127.0.0.1');
      const e = { s } as { s: net.Socket; closedAt?: number };
      s.on('close', () => (e.closedAt = Date.now()));
      s.on('error', () => {});
      s.on('data', () => {});
      await new Promise((r) => s.once('connect', r).once('close', r));
      s.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n'); // headers never finished
      socks.push(e);
    }
    return socks;
  };

  it('past the per-address cap and its operator reserve the oldest idle connections give way at once; the ones held with half-sent headers go at the header deadline', async () => {
    const h = await start({ maxConnectionsPerAddress: 5, headersTimeoutMs: 500, requestTimeoutMs: 1000 });
    const t0 = Date.now();
    const socks = await openRaw(h.port, 12);
    // 5 + the 4 kept for the operator: the 3 oldest made room for the newest.
    await until(() => socks.slice(0, 3).every((x) => x.closedAt !== undefined), 1000, 'oldest sockets closed');
    expect(socks.slice(3).every((x) => x.closedAt === undefined)).toBe(true);
    await until(() => socks.every((x) => x.closedAt !== undefined), 4000, 'half-open sockets closed');
    expect(Math.max(...socks.map((x) => x.closedAt! - t0))).toBeLessThan(3000);
    // and the listener serves again
    expect((await post(h.port, bearer())).status).toBe(200);
  });

  it('the server caps its connections in total', async () => {
    const h = await start({ maxConnections: 7 });
    expect(h.server.maxConnections).toBe(7);
    const socks = await openRaw(h.port, 10);
    await until(() => socks.filter((x) => x.closedAt !== undefined).length >= 3, 2000, 'over-cap closed');
    for (const x of socks) x.s.destroy();
  });

  it('a device connection that never finishes its handshake is dropped after at most 5 s', async () => {
    const clock = new VirtualClock(0);
    const c = new HostCore({ db: ':memory:', clock });
    try {
      const d = new FakeDevice(c, 'x', 'y', 'b');
      clock.advance(4999);
      await flush();
      expect(d.closed).toBe(false);
      clock.advance(1);
      await flush();
      expect(d.closed).toBe(true);
    } finally {
      c.close();
    }
  });
});

describe('secrets at rest', () => {
  it('the journal and both token files are 0600 inside a 0700 .proofrig folder; a restart keeps the tokens', async () => {
    const dir = join(tmpDir(), '.proofrig');
    const db = join(dir, 'journal.db');
    const r1 = await serve({ db, port: 0, logger: pino({ level: 'silent' }) });
    const t1 = r1.tokens!;
    await r1.close();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of ['journal.db', 'agent-token', 'operator-token']) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'agent-token'), 'utf8').trim()).toBe(t1.agent);
    expect(t1.created).toBe(true);
    const r2 = await serve({ db, port: 0, logger: pino({ level: 'silent' }) });
    await r2.close();
    expect(r2.tokens).toMatchObject({ agent: t1.agent, operator: t1.operator, created: false });
  });

  it('the banner shows a token only when it was just created; later it names the file', () => {
    const t = { agent: 'AGENT-SECRET', operator: 'OP-SECRET', agentFile: '/x/.proofrig/agent-token', operatorFile: '/x/.proofrig/operator-token' };
    const first = clientConfig('http://127.0.0.1:8787/mcp', { ...t, created: true }).join('\n');
    expect(first).toContain('"Authorization": "Bearer AGENT-SECRET"');
    expect(first).not.toContain('OP-SECRET');
    const later = clientConfig('http://127.0.0.1:8787/mcp', { ...t, created: false }).join('\n');
    expect(later).not.toContain('AGENT-SECRET');
    expect(later).toContain('Bearer <the token in /x/.proofrig/agent-token>');
    // under --stdio the banner goes to stderr (a client's log file): never the token
    expect(clientConfig('http://127.0.0.1:8787/mcp', { ...t, created: true }, false).join('\n')).not.toContain('AGENT-SECRET');
  });
});
