// MCP clients for the bench, in their own process: each drives one device closed-loop through MCP over
// HTTP for a fixed time and reports the count: relay_set, then get_action_status until terminal, or
// (`wait`) relay_set with wait_ms, which answers with the outcome in the same call.
// With `lat: N` it instead makes N calls one after another on devices[0] (relay_set with wait_ms, then
// get_action_status while not terminal) and reports each call's time: the bench's MCP latency, from a
// client in its own process as an agent's is, so the client's work does not share the host's thread.
// With `raw`, the clients are protocol-level instead of the SDK's Client: each speaks MCP's Streamable
// HTTP itself over one keep-alive socket (initialize, the session header, tools/call, the answer read
// from its SSE stream or JSON body), so, as the device load generator does for devices, the figure is
// the host's and not the client library's (the SDK's client costs about as much CPU per call as the host).
// argv[2]: JSON { url, token?, devices: string[], ms, channel, wait?, lat?, raw? }
import { Agent, request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const o = JSON.parse(process.argv[2]) as { url: string; token?: string; devices: string[]; ms: number; channel: number; wait?: boolean; lat?: number; raw?: boolean };

/** What the loops need of a client: one tool call's structuredContent, and close. */
interface Caller {
  callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

async function client(): Promise<Caller> {
  if (o.raw) return RawClient.connect();
  const c = new Client({ name: 'bench', version: '1' });
  const headers: Record<string, string> = o.token ? { Authorization: `Bearer ${o.token}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(o.url), { requestInit: { headers } }));
  return c;
}

/** A protocol-level MCP client: JSON-RPC over POST on one keep-alive socket, nothing validated but what the loop reads. */
class RawClient implements Caller {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private readonly url = new URL(o.url);
  private session: string | undefined;
  private id = 0;

  static async connect(): Promise<RawClient> {
    const c = new RawClient();
    await c.rpc('initialize', { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench-raw', version: '1' } });
    await c.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return c;
  }

  async callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown> {
    return this.rpc('tools/call', p);
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

  private async rpc(method: string, params: unknown): Promise<unknown> {
    const id = ++this.id;
    const { status, body, type } = await this.post({ jsonrpc: '2.0', id, method, params });
    // An SSE answer: the JSON-RPC messages are the data lines; the one with our id is the answer.
    const msgs = type.startsWith('text/event-stream')
      ? body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { id?: number; result?: unknown; error?: { message: string } })
      : [JSON.parse(body) as { id?: number; result?: unknown; error?: { message: string } }];
    const m = msgs.find((x) => x.id === id);
    if (!m || m.error || status !== 200) throw new Error(`bench: ${method} answered ${status}: ${m?.error?.message ?? body.slice(0, 200)}`);
    return m.result;
  }

  private post(msg: unknown): Promise<{ status: number; body: string; type: string }> {
    const data = JSON.stringify(msg);
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': Buffer.byteLength(data),
      'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
    };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (this.session) headers['mcp-session-id'] = this.session;
    return new Promise((resolve, reject) => {
      const req = request({ host: this.url.hostname, port: this.url.port, path: this.url.pathname, method: 'POST', headers, agent: this.agent }, (res) => {
        const sid = res.headers['mcp-session-id'];
        if (typeof sid === 'string') this.session = sid;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(data);
    });
  }
}

/** One relay_set (with wait_ms when `wait`), then get_action_status until terminal: the command's final status. */
async function relaySet(c: Caller, dev: string, on: boolean, wait: boolean): Promise<Record<string, unknown>> {
  const r = (await c.callTool({ name: 'relay_set', arguments: { device_id: dev, channel: o.channel, on, ...(wait ? { wait_ms: 5000 } : {}) } })) as {
    structuredContent?: Record<string, unknown>;
  };
  let s = r.structuredContent!;
  while (!s.terminal) {
    const q = (await c.callTool({ name: 'get_action_status', arguments: { command_id: s.command_id, wait_ms: 5000 } })) as { structuredContent?: Record<string, unknown> };
    s = q.structuredContent!;
  }
  return s;
}

async function loop(c: Caller, dev: string, end: number, n: { done: number; bad: number }): Promise<void> {
  let on = true;
  while (Date.now() < end) {
    const s = await relaySet(c, dev, on, !!o.wait);
    if (s.state === 'completed') n.done++;
    else n.bad++;
    on = !on;
  }
}

if (o.lat !== undefined) {
  const c = await client();
  process.send!({ ready: true });
  process.once('message', async () => {
    const times: number[] = [];
    for (let i = 0; i < o.lat!; i++) {
      const t = performance.now();
      await relaySet(c, o.devices[0], i % 2 === 0, true);
      times.push(performance.now() - t);
    }
    process.send!({ times });
    await c.close();
    process.exit(0);
  });
} else {
// Connect in small batches (a burst of 100 handshakes at once overflows a loaded host's accept queue), retrying a reset.
const clients: Caller[] = [];
for (let i = 0; i < o.devices.length; i += 10) {
  const batch = await Promise.all(
    o.devices.slice(i, i + 10).map(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await client();
        } catch (e) {
          if (attempt >= 4) throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }),
  );
  clients.push(...batch);
}
process.send!({ ready: true });
process.once('message', async () => {
  const n = { done: 0, bad: 0 };
  const t = Date.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(clients.map((c, i) => loop(c, o.devices[i], t + o.ms, n)));
  const cpu = process.cpuUsage(cpu0);
  // The clients' own CPU: on a small machine they share its cores with the host.
  process.send!({ done: n.done, bad: n.bad, ms: Date.now() - t, cpuUs: cpu.user + cpu.system });
  await Promise.all(clients.map((c) => c.close()));
  process.exit(0);
});
}
