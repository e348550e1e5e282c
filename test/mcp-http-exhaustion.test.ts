// The operator always gets in, and no flood takes the listener: sessions expire on request
// inactivity even with a stream open, streams are capped per token, a share of sessions and of each
// address's connections is kept for the operator token, every loopback alias counts as one address,
// and a device that finished its handshake no longer counts against its address (issue 26, 3-4).
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HostCore } from '../host/src/core/host.js';
import { startHttpHost, STREAMS_PER_TOKEN, OPERATOR_CONNECTIONS, type HttpHost, type HttpOptions } from '../host/src/mcp/http.js';
import { serve, type Running } from '../host/src/serve.js';
import { RELAY_BOARD, RIG, until } from './helpers/e2e.js';

const TOKENS = { agent: 'agent-token-for-tests-0123456789', operator: 'operator-token-for-tests-987654' };
const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } } };
const tmpDir = () => mkdtempSync(join(tmpdir(), 'proofrig-exhaust-'));

let core: HostCore | undefined;
let host: HttpHost | undefined;
let running: Running | undefined;
const opened: net.Socket[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) s.destroy();
  await host?.close();
  core?.close();
  await running?.close();
  host = undefined;
  core = undefined;
  running = undefined;
});

async function start(o: Partial<HttpOptions> = {}): Promise<HttpHost> {
  core = new HostCore({ db: join(tmpDir(), 'journal.db'), logger: pino({ level: 'silent' }) });
  host = await startHttpHost(core, 0, { tokens: TOKENS, ...o });
  return host;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  res: http.IncomingMessage;
}

/** One request on its own connection; resolves with the status once the headers are in (streams stay open, held in `opened`). */
function request(port: number, o: { method?: string; path?: string; token?: string; headers?: Record<string, string>; body?: unknown; localAddress?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: o.path ?? '/mcp',
        method: o.method ?? 'POST',
        agent: false,
        localAddress: o.localAddress,
        headers: {
          host: `127.0.0.1:${port}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...o.headers,
        },
      },
      (res) => {
        opened.push(res.socket);
        if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) return resolve({ status: res.statusCode!, headers: res.headers, body: '', res });
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: b, res }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const events = (port: number, token: string) => request(port, { method: 'GET', path: '/events', token });

describe('the operator always gets in', () => {
  it(`an open MCP GET stream does not keep a session alive: it expires on request inactivity and the stream ends with it`, async () => {
    const h = await start({ sessionIdleMs: 300 });
    const init = await request(h.port, { token: TOKENS.agent, body: INIT });
    const sid = init.headers['mcp-session-id'] as string;
    const stream = await request(h.port, { method: 'GET', token: TOKENS.agent, headers: { 'mcp-session-id': sid } });
    expect(stream.status).toBe(200);
    let ended = false;
    stream.res.once('close', () => (ended = true));
    stream.res.resume();
    await until(() => h.sessionCount() === 0, 5000, 'session expired with its stream open');
    await until(() => ended, 3000, 'stream ended');
  });

  it(`one token holds at most ${STREAMS_PER_TOKEN} streams (/events and MCP GET together): the next gets 429; the operator's own streams are counted apart`, async () => {
    const h = await start();
    const got: number[] = [];
    for (let i = 0; i < STREAMS_PER_TOKEN; i++) got.push((await events(h.port, TOKENS.agent)).status);
    expect(got).toEqual(new Array(STREAMS_PER_TOKEN).fill(200));
    const over = await events(h.port, TOKENS.agent);
    expect(over.status).toBe(429);
    expect(JSON.parse(over.body).error.message).toMatch(new RegExp(`already holds ${STREAMS_PER_TOKEN} open streams`));
    const sid = (await request(h.port, { token: TOKENS.agent, body: INIT })).headers['mcp-session-id'] as string;
    expect((await request(h.port, { method: 'GET', token: TOKENS.agent, headers: { 'mcp-session-id': sid } })).status).toBe(429);
    expect((await events(h.port, TOKENS.operator)).status).toBe(200);
    // A stream that closes frees its slot.
    opened[0].destroy();
    await until(async () => (await events(h.port, TOKENS.agent)).status === 200, 3000, 'a freed stream slot');
  });

  it(`with every connection slot of 127.0.0.1 held, the operator token still gets an answer on the ${OPERATOR_CONNECTIONS} kept past the cap; the agent token there is refused 503`, async () => {
    const h = await start({ maxConnectionsPerAddress: 6 });
    // Six idle connections (a token holder's keep-alive sockets): the address's cap.
    for (let i = 0; i < 6; i++) {
      const s = net.connect(h.port, '127.0.0.1');
      s.on('error', () => {});
      opened.push(s);
      await new Promise((r) => s.once('connect', r));
    }
    const agent = await request(h.port, { token: TOKENS.agent, body: INIT });
    expect(agent.status).toBe(503);
    expect(JSON.parse(agent.body).error.message).toMatch(/kept for the operator token/);
    const op = await request(h.port, { token: TOKENS.operator, body: INIT });
    expect(op.status).toBe(200);
    expect(op.headers['mcp-session-id']).toBeDefined();
  });
});

describe('no flood takes the listener', () => {
  it('every loopback alias counts as one address: connections from 127.0.0.2-10 stop at the one cap (plus the operator\'s few)', async () => {
    const h = await start({ maxConnectionsPerAddress: 8 });
    const socks: { s: net.Socket; closed: boolean }[] = [];
    for (let i = 0; i < 45; i++) {
      const s = net.connect({ port: h.port, host: '127.0.0.1', localAddress: `127.0.0.${2 + (i % 9)}` });
      const e = { s, closed: false };
      s.on('error', () => {});
      s.on('close', () => (e.closed = true));
      opened.push(s);
      socks.push(e);
      await new Promise((r) => s.once('connect', r).once('close', r));
    }
    await until(() => socks.filter((x) => x.closed).length >= 45 - (8 + OPERATOR_CONNECTIONS), 3000, 'over-cap sockets closed');
    expect(socks.filter((x) => !x.closed)).toHaveLength(8 + OPERATOR_CONNECTIONS);
  });

  it('a churn of connections from several loopback aliases leaves a real rig completing commands, and the operator served', async () => {
    const db = join(tmpDir(), '.proofrig', 'journal.db');
    running = await serve({ db, port: 0, sims: [{ boardFile: RELAY_BOARD }], logger: pino({ level: 'silent' }), heartbeatMs: 300, seed: 5, maxConnectionsPerAddress: 16 });
    await until(() => running!.core.devices.view(RIG)?.online === true, 10_000, 'rig online');
    const port = running.http.port;
    let churning = true;
    let opens = 0;
    const churn = async (alias: number) => {
      while (churning) {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${alias}` });
        s.on('error', () => {});
        opened.push(s);
        opens++;
        await new Promise((r) => s.once('connect', r).once('close', r));
        // Half a request, then hold it: a slot taken until the header deadline or the cap's refusal.
        s.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    const churners = [2, 3, 4, 5, 6, 7].map((a) => churn(a));
    try {
      for (let i = 0; i < 6; i++) {
        const s = await running.core.submit({ device_id: RIG, action: 'relay.set', args: { ch: 1 + (i % 3), on: i % 2 === 0 } });
        const end = await running.core.waitTerminal(s.command_id, 10_000);
        expect(end?.state).toBe('completed');
      }
      const op = await request(port, { token: running.tokens!.operator, body: INIT });
      expect(op.status).toBe(200);
    } finally {
      churning = false;
      await Promise.all(churners);
    }
    expect(opens).toBeGreaterThan(100);
  });
});
