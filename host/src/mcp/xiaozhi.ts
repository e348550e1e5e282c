// The xiaozhi bridge: xiaozhi's cloud is the MCP client and reaches outside servers through an
// "MCP endpoint" that the server dials OUT to as a WebSocket client (one JSON-RPC message per
// text frame). proofrig serves the same tools over that socket, one McpServer per connection,
// and reconnects for ever with exponential back-off that resets after a healthy session.
// The endpoint URL carries the user's token, so it is only ever logged redacted.
import WebSocket from 'ws';
import type { Logger } from 'pino';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { XIAOZHI_AUTH } from './operator-tools.js';
import { JSONRPCMessageSchema, type JSONRPCMessage, type MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

/** Largest JSON-RPC message taken from the endpoint; tool calls are a few hundred bytes. */
const MAX_MESSAGE_BYTES = 256 * 1024;

/** The endpoint URL with every query value and any user info replaced, for logs and banners. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '***';
      u.password = '';
    }
    for (const k of [...u.searchParams.keys()]) u.searchParams.set(k, '***');
    return u.toString().replace(/%2A%2A%2A/g, '***');
  } catch {
    return '<unparseable URL>';
  }
}

/** One JSON-RPC message per text frame over a WebSocket we dialled. */
class DialledTransport implements Transport {
  onmessage?: (m: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (e: Error) => void;

  constructor(private readonly ws: WebSocket) {}

  async start(): Promise<void> {
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) return this.reject('binary frames are not JSON-RPC messages');
      let m: JSONRPCMessage;
      try {
        m = JSONRPCMessageSchema.parse(JSON.parse(data.toString()));
      } catch {
        return this.reject('not a JSON-RPC 2.0 message');
      }
      // Every call over this socket is xiaozhi's: an agent that no confirmation can lift to operator.
      this.onmessage?.(m, { authInfo: XIAOZHI_AUTH });
    });
    this.ws.on('close', () => this.onclose?.());
  }

  private reject(why: string): void {
    // JSON-RPC says a message that cannot be parsed gets a parse error with id null.
    void this.send({ jsonrpc: '2.0', id: null as unknown as string, error: { code: -32700, message: `proofrig: ${why}` } });
  }

  async send(m: JSONRPCMessage): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }

  async close(): Promise<void> {
    this.ws.close();
  }
}

export interface XiaozhiOptions {
  url: string;
  /** A fresh MCP server (the same tools as /mcp) for each connection. */
  createServer: () => McpServer;
  logger: Logger;
  /** First retry delay, and where it resets to after a healthy session. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** A session that stayed up this long was healthy: the next reconnect starts from minBackoffMs. */
  healthyMs?: number;
}

export class XiaozhiBridge {
  /** Connections opened, for status and tests. */
  connects = 0;
  private ws: WebSocket | undefined;
  private server: McpServer | undefined;
  private retry: NodeJS.Timeout | undefined;
  private backoff: number;
  private stopped = false;
  private readonly min: number;
  private readonly max: number;
  private readonly healthy: number;
  readonly safeUrl: string;

  constructor(private readonly o: XiaozhiOptions) {
    const u = new URL(o.url);
    if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new Error(`--xiaozhi needs a ws:// or wss:// URL, got ${u.protocol}//…`);
    this.min = o.minBackoffMs ?? 1000;
    this.max = o.maxBackoffMs ?? 60_000;
    this.healthy = o.healthyMs ?? 30_000;
    this.backoff = this.min;
    this.safeUrl = redactUrl(o.url);
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  start(): void {
    this.stopped = false;
    this.dial();
  }

  private dial(): void {
    this.retry = undefined;
    if (this.stopped) return;
    const log = this.o.logger;
    const ws = new WebSocket(this.o.url, { maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: 10_000 });
    this.ws = ws;
    let openedAt = 0;
    ws.on('open', () => {
      openedAt = Date.now();
      this.connects++;
      log.info({ evt: 'xiaozhi_up', endpoint: this.safeUrl }, 'connected to the xiaozhi MCP endpoint');
      const server = this.o.createServer();
      this.server = server;
      server.connect(new DialledTransport(ws)).catch((e: Error) => {
        log.warn({ evt: 'xiaozhi_error', msg: e.message }, 'xiaozhi session failed to start');
        ws.terminate();
      });
    });
    // ws emits 'error' before 'close'; the close decides what happens next.
    ws.on('error', (e) => log.warn({ evt: 'xiaozhi_error', endpoint: this.safeUrl, msg: redactMessage(e.message, this.o.url) }, 'xiaozhi endpoint error'));
    ws.on('close', (code) => {
      const server = this.server;
      this.server = undefined;
      if (server) void server.close().catch(() => {});
      if (openedAt && Date.now() - openedAt >= this.healthy) this.backoff = this.min;
      if (this.stopped) return;
      const d = Math.round(this.backoff * (0.8 + 0.4 * Math.random()));
      this.backoff = Math.min(this.backoff * 2, this.max);
      log.info({ evt: 'xiaozhi_down', endpoint: this.safeUrl, code, retry_ms: d }, `xiaozhi endpoint closed; reconnecting in ${d} ms`);
      this.retry = setTimeout(() => this.dial(), d);
    });
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((r) => {
        ws.once('close', () => r());
        ws.close();
        setTimeout(() => {
          ws.terminate();
          r();
        }, 1000).unref();
      });
    }
  }
}

/** Error texts from ws can quote the URL; never let the token through. */
function redactMessage(msg: string, url: string): string {
  return msg.split(url).join(redactUrl(url));
}
