// A protocol-level MCP client for the bench: MCP's Streamable HTTP spoken directly over one keep-alive
// socket (initialize, the session header, JSON-RPC POSTs, the answer read from the SSE stream or JSON
// body), so what a load of them costs the machine is the host's and not a client library's.
import { Agent, request } from 'node:http';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

/** What the bench's loops need of an MCP client (the SDK's Client has the same two methods). */
export interface Caller {
  callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

/** A protocol-level MCP client: JSON-RPC over POST on one keep-alive socket, nothing validated but what the loop reads. */
export class RawClient implements Caller {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private session: string | undefined;
  private id = 0;

  private constructor(
    private readonly url: URL,
    private readonly token: string | undefined,
  ) {}

  static async connect(url: string, token?: string): Promise<RawClient> {
    const c = new RawClient(new URL(url), token);
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
    if (this.token) headers.authorization = `Bearer ${this.token}`;
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

