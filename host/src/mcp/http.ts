// One HTTP listener for both sides: MCP Streamable HTTP at /mcp (one McpServer and transport
// per MCP session) and the device WebSocket gateway at /device. MCP is guarded in this order:
// peer address (loopback unless --allow-remote-mcp), Host/Origin (DNS rebinding), bearer token.
// The listener itself is bounded: connections in total and per address, header/request
// deadlines, a session cap and idle expiry.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import { LogLimiter } from '../core/log-limit.js';
import { WsGateway } from '../gateway/ws-gateway.js';
import { allowedHosts, allowedOrigins, authenticate, checkHeaders, isLoopback, mcpAllowedFrom, type Tokens } from './access.js';
import { createMcpServer } from './tools.js';

export const MCP_PATH = '/mcp';
const MAX_BODY = 1024 * 1024;

export interface HttpOptions {
  /** Listen address (default 127.0.0.1). */
  host?: string;
  /** Serve MCP to non-loopback peers too. */
  allowRemoteMcp?: boolean;
  /** Bearer tokens MCP requires; null serves MCP without authentication (loopback only). */
  tokens: Tokens | null;
  /** Extra Host header names (with or without port) and Origins MCP accepts. */
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /** An MCP session unused this long is closed (default 10 min). */
  sessionIdleMs?: number;
  /** Open MCP sessions at most (default 64). */
  maxSessions?: number;
  /** Open TCP connections at most (default 256) and per remote address (default 32). */
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  /** Deadline for a client to send its request headers (default 5 s) and whole request (default 15 s). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
}

export interface HttpHost {
  server: Server;
  gateway: WsGateway;
  port: number;
  /** Open MCP sessions. */
  sessionCount(): number;
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new Error('request body over 1 MiB');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text.length ? JSON.parse(text) : undefined;
}

function jsonRpcError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}, code = -32000): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

interface McpSession {
  transport: StreamableHTTPServerTransport;
  lastUsed: number;
  /** Requests of this session being served right now: a busy session never expires. */
  busy: number;
}

/** Listen on port (0 = any free port) with MCP at /mcp and devices at /device. */
export async function startHttpHost(core: HostCore, port: number, o: HttpOptions): Promise<HttpHost> {
  const listenHost = o.host ?? '127.0.0.1';
  const allowRemote = o.allowRemoteMcp ?? false;
  if (!o.tokens && allowRemote) throw new Error('--no-auth is only allowed while MCP answers this machine only (without --allow-remote-mcp)');
  const idleMs = o.sessionIdleMs ?? 10 * 60_000;
  const maxSessions = o.maxSessions ?? 64;
  const perAddress = o.maxConnectionsPerAddress ?? 32;
  const log: Logger = core.log;
  const limiter = new LogLimiter(core.clock);
  const sessions = new Map<string, McpSession>();
  let initializing = 0;
  const gateway = new WsGateway((link) => core.attach(link), log);
  let hosts: string[] = [];
  let origins: string[] = [];

  /** Refusals a stranger can provoke are logged a few times per address, not per request. */
  const refused = (req: IncomingMessage, status: number, why: string) =>
    limiter.hit(req.socket.remoteAddress ?? '?', (suppressed) =>
      log.warn({ evt: 'mcp_refused', remote: req.socket.remoteAddress, status, why, ...(suppressed ? { suppressed } : {}) }, 'MCP request refused'),
    );

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== MCP_PATH) {
      res.writeHead(path === '/' ? 200 : 404, { 'content-type': 'text/plain' });
      res.end(`proofrig: MCP (Streamable HTTP) at ${MCP_PATH}, devices (WebSocket) at /device\n`);
      return;
    }
    const remote = req.socket.remoteAddress;
    if (!mcpAllowedFrom(remote, allowRemote)) {
      refused(req, 403, 'remote peer');
      // Refused before the body is read, and the connection is not kept for another try.
      jsonRpcError(res, 403, `MCP is served to this machine only (request from ${remote}); start with --allow-remote-mcp to change that`, { connection: 'close' });
      res.once('finish', () => req.socket.destroy());
      return;
    }
    const bad = checkHeaders(req.headers.host, req.headers.origin, hosts, origins);
    if (bad) {
      refused(req, 403, bad);
      return jsonRpcError(res, 403, `${bad}. This protects the rig from web pages (DNS rebinding).`);
    }
    if (o.tokens) {
      const auth = authenticate(req.headers.authorization, o.tokens);
      if (!auth) {
        refused(req, 401, req.headers.authorization ? 'wrong token' : 'no token');
        return jsonRpcError(
          res,
          401,
          (req.headers.authorization ? 'wrong bearer token' : 'missing bearer token') +
            ': send "Authorization: Bearer <token>" with the token from .proofrig/agent-token next to the host journal (proofrig call reads it itself)',
          { 'www-authenticate': `Bearer realm="proofrig", error="invalid_token"` },
        );
      }
      // The SDK hands this to every tool handler as extra.authInfo (scopes decide operator-only tools).
      (req as IncomingMessage & { auth?: unknown }).auth = auth;
    }
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (existing) {
      existing.lastUsed = Date.now();
      existing.busy++;
      try {
        const body = req.method === 'POST' ? await readJson(req) : undefined;
        await existing.transport.handleRequest(req, res, body);
      } finally {
        existing.busy--;
        existing.lastUsed = Date.now();
      }
      return;
    }
    if (sid !== undefined) return jsonRpcError(res, 404, `unknown or expired MCP session ${String(sid).slice(0, 64)} (sessions end after ${Math.round(idleMs / 1000)} s idle); initialize a new one`);
    if (req.method !== 'POST') return jsonRpcError(res, 400, 'missing mcp-session-id header; initialize a session with POST first');
    const body = await readJson(req);
    if (!isInitializeRequest(body)) return jsonRpcError(res, 400, 'first request of a session must be initialize');
    if (sessions.size + initializing >= maxSessions) {
      refused(req, 503, 'session cap');
      return jsonRpcError(res, 503, `too many open MCP sessions (${maxSessions}); close one (DELETE ${MCP_PATH} with its mcp-session-id) or wait until idle ones expire after ${Math.round(idleMs / 1000)} s`, { 'retry-after': '30' });
    }
    initializing++;
    try {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, { transport, lastUsed: Date.now(), busy: 0 }),
        // The SDK's own DNS-rebinding check, the same lists, for every request of the session.
        enableDnsRebindingProtection: true,
        allowedHosts: hosts,
        allowedOrigins: origins,
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await createMcpServer(core).connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      initializing--;
    }
  };

  const server = createServer(
    {
      headersTimeout: o.headersTimeoutMs ?? 5000,
      requestTimeout: o.requestTimeoutMs ?? 15000,
      // Node checks those deadlines on this period (30 s by default): half-sent headers go within ~1 s of theirs.
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      handle(req, res).catch((e) => {
        log.warn({ evt: 'mcp_request_failed', remote: req.socket.remoteAddress, err: (e as Error)?.message }, 'MCP request failed');
        if (!res.headersSent) jsonRpcError(res, 400, (e as Error)?.message ?? 'bad request');
        else res.end();
      });
    },
  );
  server.maxConnections = o.maxConnections ?? 256;
  server.keepAliveTimeout = 5000;

  // Per-address cap: one peer cannot hold every slot (a flood from one LAN address leaves room
  // for devices and local clients).
  const perAddr = new Map<string, number>();
  server.on('connection', (sock: Socket) => {
    const a = sock.remoteAddress ?? '?';
    const n = (perAddr.get(a) ?? 0) + 1;
    if (n > perAddress) {
      limiter.hit(a, (suppressed) =>
        log.warn({ evt: 'connection_refused', remote: a, open: n - 1, ...(suppressed ? { suppressed } : {}) }, 'too many connections from one address'),
      );
      sock.destroy();
      return;
    }
    perAddr.set(a, n);
    sock.once('close', () => {
      const m = (perAddr.get(a) ?? 1) - 1;
      if (m <= 0) perAddr.delete(a);
      else perAddr.set(a, m);
    });
  });
  server.on('clientError', (err, sock) => {
    // Timeouts and malformed requests end here; never let one reach the process.
    if (sock.writable) sock.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    sock.destroy();
    void err;
  });
  gateway.attachTo(server);

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, s] of sessions) {
        if (s.busy === 0 && now - s.lastUsed > idleMs) {
          sessions.delete(id);
          log.info({ evt: 'mcp_session_expired', idle_ms: now - s.lastUsed }, 'MCP session expired');
          void s.transport.close().catch(() => {});
        }
      }
    },
    Math.max(50, Math.min(30_000, Math.floor(idleMs / 4))),
  );
  sweep.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, listenHost, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  hosts = allowedHosts(actual, o.allowedHosts);
  origins = allowedOrigins(actual, o.allowedOrigins);
  if (!o.tokens) log.warn({ evt: 'mcp_no_auth' }, 'MCP runs WITHOUT authentication (--no-auth): any program on this machine can drive the rigs');
  if (allowRemote && !isLoopback(listenHost) && listenHost !== 'localhost')
    log.warn({ evt: 'mcp_remote' }, 'MCP answers other machines (--allow-remote-mcp); the bearer token travels in clear over plain HTTP');
  return {
    server,
    gateway,
    port: actual,
    sessionCount: () => sessions.size,
    async close() {
      clearInterval(sweep);
      for (const s of sessions.values()) await s.transport.close().catch(() => {});
      gateway.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
