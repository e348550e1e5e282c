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
import { LogLimiter, peerKey } from '../core/log-limit.js';
import { WsGateway } from '../gateway/ws-gateway.js';
import { allowedHosts, allowedOrigins, authenticate, checkHeaders, isLoopback, mcpAllowedFrom, type Tokens } from './access.js';
import { createMcpServer, type McpOptions } from './tools.js';
import { hasOperatorScope } from './operator-tools.js';
import { AddressCaps } from './address-caps.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { DASHBOARD_HTML } from '../dashboard/page.js';
import { serveEvents } from '../dashboard/events.js';
import { COOKIE, DashboardLinks, LINK_TTL_MS, SESSION_TTL_MS } from '../dashboard/one-time-link.js';
import { OPERATOR_PATH, operatorCall, operatorRefusal, operatorWho } from '../dashboard/operator.js';

export const MCP_PATH = '/mcp';
/** The dashboard's live feed (Server-Sent Events). */
export const EVENTS_PATH = '/events';
/** POST with the token: a one-time link that signs a browser into the dashboard (proofrig open). */
export const LINK_PATH = '/dashboard-link';
const MAX_BODY = 1024 * 1024;
/** Bytes of a refused body still read (and discarded) so the client can read the 413 before the close. */
const DRAIN_MAX = 16 * 1024 * 1024;

export interface HttpOptions {
  /** Options of the MCP server of each session (start-up readiness, boot wait). */
  mcp?: McpOptions;
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

/** A request refused with this HTTP status before or while its body is read. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const tooLarge = () => new HttpError(413, `request body over ${MAX_BODY} bytes (1 MiB): MCP messages are a few kB; nothing was read or done`);

/**
 * The body as JSON. Over MAX_BODY it is refused from the Content-Length before any byte is read,
 * or as soon as the bytes read pass it; it is never buffered whole. The stream is left flowing
 * (not destroyed), so the refusal can still be answered on its connection.
 */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length']) > MAX_BODY) return reject(tooLarge());
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size <= MAX_BODY) return void chunks.push(c);
      over = true;
      chunks.length = 0;
      reject(tooLarge());
    });
    req.once('error', reject);
    req.once('end', () => {
      if (over) return;
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text.length ? JSON.parse(text) : undefined);
      } catch {
        reject(new HttpError(400, 'request body is not JSON'));
      }
    });
  });
}

function jsonRpcError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}, code = -32000): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

interface McpSession {
  transport: StreamableHTTPServerTransport;
  lastUsed: number;
  /**
   * Requests of this session being served right now (POST, DELETE): a busy session does not expire.
   * An open GET stream does not count: a session expires on request inactivity, its streams with it.
   */
  busy: number;
}

/** Open streams (MCP GET, /events) one token may hold at once. */
export const STREAMS_PER_TOKEN = 8;
/** Connections per address past the cap that only the operator token may use. */
export const OPERATOR_CONNECTIONS = 4;
/** MCP sessions only the operator token may open: the others stop this many short of the cap. */
export const operatorSessions = (maxSessions: number) => Math.min(Math.floor(maxSessions / 2), Math.max(2, Math.floor(maxSessions / 8)));

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
  // Per-address cap: one peer cannot hold every slot (a flood from one LAN address leaves room for
  // devices and local clients); see address-caps.ts for the operator's reserve and who gives way.
  const caps = new AddressCaps(perAddress, OPERATOR_CONNECTIONS, (key, open, evicted) =>
    limiter.hit(key, (suppressed) =>
      log.warn(
        { evt: 'connection_refused', remote: key, open, evicted, ...(suppressed ? { suppressed } : {}) },
        evicted ? 'too many connections from one address: its oldest idle one was closed' : 'too many connections from one address',
      ),
    ),
  );
  const links = new DashboardLinks();
  const reserved = caps.reserved;
  /** Open streams per token identity (client id, or "none" without auth). */
  const streams = new Map<string, number>();
  const gateway = new WsGateway((link) => core.attach(link), log, {
    refuse: (sock) => (reserved.has(sock as Socket) ? `connections from this address are at their cap (${perAddress}); the few past it are kept for the operator's MCP requests` : null),
    authenticated: (sock) => caps.release(sock as Socket),
  });
  let hosts: string[] = [];
  let origins: string[] = [];

  /** Refusals a stranger can provoke are logged a few times per address, not per request. */
  const refused = (req: IncomingMessage, status: number, why: string) =>
    limiter.hit(peerKey(req.socket?.remoteAddress), (suppressed) =>
      log.warn({ evt: 'mcp_refused', remote: req.socket?.remoteAddress, status, why, ...(suppressed ? { suppressed } : {}) }, 'MCP request refused'),
    );

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== MCP_PATH && path !== '/' && path !== EVENTS_PATH && path !== LINK_PATH && path !== OPERATOR_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`proofrig: MCP (Streamable HTTP) at ${MCP_PATH}, the dashboard at /, devices (WebSocket) at /device\n`);
      return;
    }
    // The dashboard shows what MCP shows, so it is served to the same peers, names and tokens.
    const remote = req.socket.remoteAddress;
    if (!mcpAllowedFrom(remote, allowRemote)) {
      refused(req, 403, 'remote peer');
      // Refused before the body is read, and the connection is not kept for another try.
      jsonRpcError(res, 403, `MCP and the dashboard are served to this machine only (request from ${remote}); start with --allow-remote-mcp to change that`, { connection: 'close' });
      res.once('finish', () => req.socket.destroy());
      return;
    }
    const bad = checkHeaders(req.headers.host, req.headers.origin, hosts, origins);
    if (bad) {
      refused(req, 403, bad);
      return jsonRpcError(res, 403, `${bad}. This protects the rig from web pages (DNS rebinding).`);
    }
    if (path === '/') {
      // The page holds no data (it fetches /events with the token), so it needs no token itself.
      if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
      const once = new URL(req.url ?? '/', 'http://x').searchParams.get('once');
      if (once !== null) {
        // A one-time link from proofrig open: spent now, it leaves an HttpOnly cookie for /events only.
        const sid = links.redeem(once);
        if (!sid) {
          refused(req, 410, 'dashboard link used or expired');
          res.writeHead(410, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
          return void res.end(`proofrig: this dashboard link was already used or has expired (links last ${LINK_TTL_MS / 1000} s and open once); run proofrig open for a new one\n`);
        }
        res.writeHead(303, {
          location: '/',
          'cache-control': 'no-store',
          'set-cookie': `${COOKIE}=${sid}; HttpOnly; SameSite=Strict; Path=/events; Max-Age=${SESSION_TTL_MS / 1000}`,
        });
        return void res.end();
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'" });
      return void res.end(req.method === 'HEAD' ? undefined : DASHBOARD_HTML);
    }
    // The dashboard's cookie counts on /events only (never on /mcp: a page could not act through it).
    const viaCookie = path === EVENTS_PATH && !req.headers.authorization ? links.session(req.headers.cookie) : null;
    if (viaCookie) (req as IncomingMessage & { auth?: unknown }).auth = viaCookie;
    else if (o.tokens) {
      const auth = authenticate(req.headers.authorization, o.tokens);
      if (!auth) {
        refused(req, 401, req.headers.authorization ? 'wrong token' : 'no token');
        return jsonRpcError(
          res,
          401,
          (req.headers.authorization ? 'wrong bearer token' : 'missing bearer token') +
            ': send "Authorization: Bearer <token>" with the token from .proofrig/agent-token next to the host journal (proofrig call reads it itself)',
          // RFC 6750 §3.1: no error code when the request carried no token at all.
          { 'www-authenticate': req.headers.authorization ? `Bearer realm="proofrig", error="invalid_token"` : `Bearer realm="proofrig"` },
        );
      }
      // The SDK hands this to every tool handler as extra.authInfo (scopes decide operator-only tools).
      (req as IncomingMessage & { auth?: unknown }).auth = auth;
    }
    const auth = (req as IncomingMessage & { auth?: AuthInfo }).auth;
    const operator = hasOperatorScope(auth);
    if (reserved.has(req.socket) && !operator) {
      refused(req, 503, 'operator reserve');
      res.once('finish', () => req.socket?.destroy());
      return jsonRpcError(res, 503, `connections from this address are at their cap (${perAddress}); the few past it are kept for the operator token. Close idle connections or streams and retry`, { connection: 'close', 'retry-after': '5' });
    }
    const who = auth?.clientId ?? 'none';
    if (path === LINK_PATH) {
      if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
      const code = links.mint(auth ?? { token: '', clientId: 'none', scopes: ['agent'] });
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return void res.end(JSON.stringify({ url: `http://${req.headers.host}/?once=${code}`, expires_in_s: LINK_TTL_MS / 1000 }));
    }
    if (path === OPERATOR_PATH) {
      // The dashboard's operator controls: the operator token's bearer header only (see dashboard/operator.ts).
      if (req.method !== 'GET' && req.method !== 'POST') return void res.writeHead(405, { allow: 'GET, POST' }).end();
      const no = operatorRefusal(req, auth, !!o.tokens);
      const answer = no ?? (req.method === 'GET' ? operatorWho() : await operatorCall(core, o.mcp, auth!, req, await readJson(req)));
      if (no) refused(req, no.status, 'operator controls');
      res.writeHead(answer.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return void res.end(JSON.stringify(answer.body));
    }
    if (path === EVENTS_PATH) {
      if (req.method !== 'GET') return void res.writeHead(405, { allow: 'GET' }).end();
      if (!takeStream(who, req, res)) return;
      return serveEvents(core, req, res);
    }
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (existing) {
      existing.lastUsed = Date.now();
      const stream = req.method === 'GET';
      if (stream && !takeStream(who, req, res)) return;
      if (!stream) existing.busy++;
      try {
        const body = req.method === 'POST' ? await readJson(req) : undefined;
        await existing.transport.handleRequest(req, res, body);
      } finally {
        if (!stream) existing.busy--;
        existing.lastUsed = Date.now();
      }
      return;
    }
    if (sid !== undefined) return jsonRpcError(res, 404, `unknown or expired MCP session ${String(sid).slice(0, 64)} (sessions end after ${Math.round(idleMs / 1000)} s idle); initialize a new one`);
    if (req.method !== 'POST') return jsonRpcError(res, 400, 'missing mcp-session-id header; initialize a session with POST first');
    const body = await readJson(req);
    if (!isInitializeRequest(body)) return jsonRpcError(res, 400, 'first request of a session must be initialize');
    // The last few sessions are the operator's: a token holder filling the cap never locks the operator out.
    const cap = operator ? maxSessions : maxSessions - operatorSessions(maxSessions);
    if (sessions.size + initializing >= cap) {
      refused(req, 503, 'session cap');
      return jsonRpcError(
        res,
        503,
        `too many open MCP sessions (${sessions.size} of ${maxSessions}${operator ? '' : `, the last ${operatorSessions(maxSessions)} kept for the operator token`}); close one (DELETE ${MCP_PATH} with its mcp-session-id) or wait until idle ones expire after ${Math.round(idleMs / 1000)} s without a request`,
        { 'retry-after': '30' },
      );
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
      await createMcpServer(core, o.mcp).connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      initializing--;
    }
  };

  /** Count a stream of `who` that stays open until the response closes; false (answered 429) past the cap. */
  const takeStream = (who: string, req: IncomingMessage, res: ServerResponse): boolean => {
    const n = streams.get(who) ?? 0;
    if (n >= STREAMS_PER_TOKEN) {
      refused(req, 429, 'stream cap');
      jsonRpcError(res, 429, `this token already holds ${n} open streams (MCP GET and /events), the most one token may hold; close one and retry`, { 'retry-after': '5' });
      return false;
    }
    streams.set(who, n + 1);
    res.once('close', () => {
      const m = (streams.get(who) ?? 1) - 1;
      if (m <= 0) streams.delete(who);
      else streams.set(who, m);
    });
    return true;
  };

  /**
   * A request whose handling threw. Touches nothing that may be gone (the socket). A refused body is
   * answered once the client has finished sending it (at most DRAIN_MAX more bytes are read and
   * discarded; past that the connection is cut), so the client reads the 413 instead of a reset.
   */
  const failed = (req: IncomingMessage, res: ServerResponse, remote: string, e: unknown) => {
    const status = e instanceof HttpError ? e.status : 400;
    const message = e instanceof Error ? e.message : 'bad request';
    limiter.hit(remote, (suppressed) =>
      log.warn({ evt: 'mcp_request_failed', remote, status, err: message, ...(suppressed ? { suppressed } : {}) }, 'MCP request failed'),
    );
    const answer = () => {
      try {
        if (res.headersSent) return void res.end();
        if (res.destroyed || res.writableEnded) return;
        jsonRpcError(res, status, message, status === 413 ? { connection: 'close' } : {}, message === 'request body is not JSON' ? -32700 : -32000);
      } catch (err) {
        log.warn({ evt: 'mcp_request_failed', remote, err: (err as Error)?.message }, 'MCP request failed while answering');
        res.destroy();
      }
    };
    if (status !== 413 || req.complete || req.destroyed) return answer();
    let drained = 0;
    req.on('data', (c: Buffer) => {
      drained += c.length;
      if (drained > DRAIN_MAX) req.destroy();
    });
    req.once('end', answer);
    req.resume();
  };

  const server = createServer(
    {
      headersTimeout: o.headersTimeoutMs ?? 5000,
      requestTimeout: o.requestTimeoutMs ?? 15000,
      // Node checks those deadlines on this period (30 s by default): half-sent headers go within ~1 s of theirs.
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      // Taken now: by the time a failure is handled the socket may be gone (req.socket is then null).
      const sock = req.socket;
      const remote = peerKey(sock?.remoteAddress);
      // While a request (or a stream) is served, its connection is not the one to make room.
      caps.busy(sock);
      res.once('close', () => caps.idle(sock));
      handle(req, res).catch((e: unknown) => failed(req, res, remote, e));
    },
  );
  server.maxConnections = o.maxConnections ?? 256;
  server.keepAliveTimeout = 5000;

  server.on('connection', (sock: Socket) => {
    if (caps.admit(sock)) sock.once('close', () => caps.release(sock));
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
