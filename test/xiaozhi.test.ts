// The xiaozhi bridge, against a local double of xiaozhi's MCP endpoint: the cloud is the MCP
// client, proofrig dials out to it, one JSON-RPC message per text frame, and the endpoint reads
// only the text of a tool result.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { serve, type Running } from '../host/src/serve.js';
import { createMcpServer } from '../host/src/mcp/tools.js';
import { redactUrl } from '../host/src/mcp/xiaozhi.js';
import type { HostConfirm } from '../host/src/mcp/operator-tools.js';
import { RELAY_BOARD, RIG, until } from './helpers/e2e.js';

const TOKEN = 'xz-tok-3f9a1c77e2b4';

interface Rpc {
  id?: number | string | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
  method?: string;
}

/** One endpoint connection as xiaozhi drives it: request/response by id, text only. */
class EndpointSession {
  private next = 1;
  private waiting = new Map<number, (m: Rpc) => void>();
  readonly stray: Rpc[] = [];

  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString()) as Rpc;
      const w = typeof m.id === 'number' ? this.waiting.get(m.id) : undefined;
      if (w) {
        this.waiting.delete(m.id as number);
        w(m);
      } else this.stray.push(m);
    });
  }

  request(method: string, params: Record<string, unknown> = {}): Promise<Rpc> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, resolve);
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      setTimeout(() => reject(new Error(`no answer to ${method} in 10 s`)), 10_000).unref();
    });
  }

  async initialize(capabilities: Record<string, unknown> = {}): Promise<Rpc> {
    const r = await this.request('initialize', { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 'xiaozhi-endpoint-double', version: '1' } });
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    return r;
  }

  /** tools/list, following nextCursor the way xiaozhi pages it. */
  async listTools(): Promise<string[]> {
    const names: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const r = await this.request('tools/list', cursor ? { cursor } : {});
      for (const t of (r.result!.tools as { name: string }[]) ?? []) names.push(t.name);
      cursor = r.result!.nextCursor as string | undefined;
      if (!cursor) break;
    }
    return names;
  }

  /** tools/call, returning only what xiaozhi reads: the text. */
  async callText(name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
    const r = await this.request('tools/call', { name, arguments: args });
    const content = (r.result!.content as { type: string; text: string }[]) ?? [];
    return { text: content.filter((c) => c.type === 'text').map((c) => c.text).join('\n'), isError: r.result!.isError === true };
  }
}

/** A local stand-in for xiaozhi's endpoint: checks the token, records every connection. */
class EndpointDouble {
  readonly wss: WebSocketServer;
  readonly sessions: EndpointSession[] = [];
  readonly connectedAt: number[] = [];
  readonly refused: string[] = [];
  private onSession?: (s: EndpointSession) => void;

  constructor() {
    this.wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/mcp/' });
    this.wss.on('connection', (ws, req) => {
      const token = new URL(req.url ?? '', 'http://x').searchParams.get('token');
      if (token !== TOKEN) {
        this.refused.push(String(token));
        ws.close(4001, 'bad token');
        return;
      }
      const s = new EndpointSession(ws);
      this.sessions.push(s);
      this.connectedAt.push(Date.now());
      this.onSession?.(s);
    });
  }

  url(token = TOKEN): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}/mcp/?token=${token}`;
  }

  async session(n: number): Promise<EndpointSession> {
    await until(() => this.sessions.length >= n, 8000, `endpoint connection #${n}`);
    return this.sessions[n - 1];
  }

  listening(): Promise<void> {
    return new Promise((r) => (this.wss.address() ? r() : this.wss.once('listening', () => r())));
  }

  close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    return new Promise((r) => this.wss.close(() => r()));
  }
}

let running: Running | undefined;
let endpoint: EndpointDouble | undefined;
let logs: string[] = [];
afterEach(async () => {
  await running?.close();
  await endpoint?.close();
  running = undefined;
  endpoint = undefined;
  logs = [];
});

async function start(backoff = { minMs: 50, maxMs: 2000, healthyMs: 60_000 }, confirmAtHost?: HostConfirm): Promise<Running> {
  endpoint = new EndpointDouble();
  await endpoint.listening();
  const sink = new Writable({
    write(chunk, _e, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  running = await serve({
    db: join(mkdtempSync(join(tmpdir(), 'proofrig-xz-')), 'journal.db'),
    port: 0,
    sims: [{ boardFile: RELAY_BOARD }],
    logger: pino({ level: 'debug' }, sink),
    heartbeatMs: 1000,
    seed: 3,
    xiaozhi: endpoint.url(),
    xiaozhiBackoff: backoff,
    confirmAtHost,
  });
  await until(() => running!.core.devices.view(RIG)?.online === true, 8000, `${RIG} online`);
  return running;
}

describe('proofrig serves its tools to a xiaozhi MCP endpoint it dials out to', () => {
  it('answers initialize, lists the same tools as /mcp (following nextCursor), and runs a relay command to completed', async () => {
    const r = await start();
    const s = await endpoint!.session(1);
    const init = await s.initialize();
    expect(init.result).toMatchObject({ serverInfo: { name: 'proofrig' }, capabilities: { tools: {} } });

    const direct = new Client({ name: 'direct', version: '1' });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createMcpServer(r.core).connect(b);
    await direct.connect(a);
    const expected = (await direct.listTools()).tools.map((t) => t.name).sort();
    await direct.close();
    expect((await s.listTools()).sort()).toEqual(expected);

    const first = await s.callText('relay_set', { device_id: RIG, channel: 1, on: true });
    expect(first.isError).toBe(false);
    const id = /Command (cmd_[A-Za-z0-9_-]+)/.exec(first.text)?.[1];
    expect(id).toBeDefined();
    // Either still running (then it says how to get the outcome) or, on a fast relay, already done.
    expect(first.text.split('\n')[0]).toMatch(/^Command cmd_\S+ \(switch relay channel 1 of relay-rig-4ch on\): (accepted, NOT finished yet\..*Call get_action_status with command_id cmd_|DONE and verified)/);

    let done = await s.callText('get_action_status', { command_id: id, wait_ms: 3000 });
    await until(async () => {
      done = await s.callText('get_action_status', { command_id: id, wait_ms: 1000 });
      return !/NOT finished/.test(done.text);
    }, 8000, 'terminal');
    // The first line alone tells a voice assistant what happened and what confirmed it.
    expect(done.text.split('\n')[0]).toMatch(/^Command cmd_\S+ \(switch relay channel 1 of relay-rig-4ch on\): DONE and verified: a feedback contact confirmed it\. K1: aux contact/);
    expect(r.rigs.get(RIG)!.relay(1).contactClosed).toBe(true);
  });

  it('says plainly in text when an output could not be verified', async () => {
    await start();
    const s = await endpoint!.session(1);
    await s.initialize();
    const first = await s.callText('relay_set', { device_id: RIG, channel: 4, on: true });
    const id = /Command (cmd_\S+) /.exec(first.text)![1];
    let t = '';
    await until(async () => {
      t = (await s.callText('get_action_status', { command_id: id, wait_ms: 1000 })).text;
      return !/NOT finished/.test(t);
    }, 8000, 'terminal');
    expect(t.split('\n')[0]).toMatch(/executed, but NOT verified: this output has no feedback.*Tell the person it is unconfirmed/);
  });

  it('an endpoint that answers confirmation forms itself can neither clear an e-stop nor remove a device, even where the host terminal could confirm', async () => {
    const asked: string[] = [];
    const r = await start(undefined, async (q) => {
      asked.push(q.tool);
      return { ok: true };
    });
    const s = await endpoint!.session(1);
    // It declares form elicitation and accepts any form it is sent, typing the device id.
    s.ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      if (m.method === 'elicitation/create') s.ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { action: 'accept', content: { device_id: RIG } } }));
    });
    await s.initialize({ elicitation: { form: {} } });
    for (const tool of ['estop_clear', 'remove_device']) {
      const t = await s.callText(tool, { device_id: RIG });
      expect(t.isError).toBe(true);
      expect(t.text).toMatch(new RegExp(`^OPERATOR_REQUIRED: ${tool} is operator-only.*client "xiaozhi" are never confirmed on its behalf`));
    }
    expect(asked).toEqual([]);
    expect(s.stray.filter((m) => m.method === 'elicitation/create')).toEqual([]);
    expect(r.core.journal.device(RIG)).toBeDefined();
    expect(r.core.devices.view(RIG)?.online).toBe(true);
  });

  it('answers a frame that is not JSON-RPC with a parse error and keeps serving', async () => {
    await start();
    const s = await endpoint!.session(1);
    s.ws.send('this is not json');
    await until(() => s.stray.some((m) => m.error?.code === -32700), 3000, 'parse error reply');
    expect((await s.initialize()).result).toMatchObject({ serverInfo: { name: 'proofrig' } });
  });

  it('reconnects after the endpoint drops, and serves the new connection', async () => {
    await start();
    const s1 = await endpoint!.session(1);
    await s1.initialize();
    s1.ws.terminate();
    const s2 = await endpoint!.session(2);
    await s2.initialize();
    const list = await s2.callText('list_devices', {});
    expect(list.text.split('\n')[0]).toMatch(/^bench lamp, pump, fan, spare \(lab bench\): relay-rig-4ch \(.*\): online/);
    expect(running!.xiaozhi!.connects).toBe(2);
  });

  it('backs off exponentially while the endpoint keeps dropping, and starts over after a healthy session', async () => {
    await start({ minMs: 100, maxMs: 5000, healthyMs: 400 });
    // Drop the first four connections at once: the gaps between attempts grow (±20 % jitter).
    for (let n = 1; n <= 4; n++) (await endpoint!.session(n)).ws.terminate();
    const healthy = await endpoint!.session(5);
    const t = endpoint!.connectedAt;
    const gaps = [1, 2, 3, 4].map((i) => t[i] - t[i - 1]);
    expect(gaps[0]).toBeGreaterThanOrEqual(80 - 5);
    expect(gaps[3]).toBeGreaterThan(gaps[0] * 3);
    // Stay up longer than healthyMs, then drop: the next attempt starts from minMs again.
    await new Promise((r) => setTimeout(r, 500));
    healthy.ws.terminate();
    await endpoint!.session(6);
    expect(t[5] - t[4]).toBeLessThan(500 + 400);
    const afterHealthy = t[5] - t[4] - 500;
    expect(afterHealthy).toBeLessThan(gaps[3]);
  });

  it('never writes the endpoint token to the logs', async () => {
    await start();
    const s = await endpoint!.session(1);
    await s.initialize();
    s.ws.terminate();
    await endpoint!.session(2);
    const all = logs.join('');
    expect(all).toContain('xiaozhi_up');
    expect(all).toContain('token=***');
    expect(all).not.toContain(TOKEN);
    expect(running!.xiaozhi!.safeUrl).not.toContain(TOKEN);
  });
});

describe('redactUrl', () => {
  it('hides every query value and user info, keeps host and path', () => {
    expect(redactUrl('wss://api.xiaozhi.me/mcp/?token=abc.def&x=1')).toBe('wss://api.xiaozhi.me/mcp/?token=***&x=***');
    expect(redactUrl('ws://user:pw@h:1/p')).not.toMatch(/pw|user/);
  });

  it('refuses a URL that is not ws:// or wss:// before anything starts', async () => {
    await expect(
      serve({ db: ':memory:', port: 0, logger: pino({ level: 'silent' }), xiaozhi: 'http://example.invalid/mcp' }),
    ).rejects.toThrow(/ws:\/\/ or wss:\/\//);
  });
});
