// One HTTP listener for both sides: MCP Streamable HTTP at /mcp (one McpServer and transport
// per MCP session) and the device WebSocket gateway at /device.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import { WsGateway } from '../gateway/ws-gateway.js';
import { createMcpServer, type McpOptions } from './tools.js';

export const MCP_PATH = '/mcp';
const MAX_BODY = 1024 * 1024;

export interface HttpHost {
  server: Server;
  gateway: WsGateway;
  port: number;
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

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

function isLoopback(addr: string | undefined): boolean {
  return !!addr && (addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.'));
}

/**
 * Listen on host:port (0 = any free port) with MCP at /mcp and devices at /device.
 * MCP has no authentication yet, so unless `allowRemoteMcp` it answers loopback clients only,
 * even when the listener is opened to the LAN for devices (which do authenticate).
 */
export async function startHttpHost(core: HostCore, port: number, host = '127.0.0.1', allowRemoteMcp = false, mcp: McpOptions = {}): Promise<HttpHost> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const gateway = new WsGateway((link) => core.attach(link));

  const server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== MCP_PATH) {
      res.writeHead(path === '/' ? 200 : 404, { 'content-type': 'text/plain' });
      res.end(`proofrig: MCP (Streamable HTTP) at ${MCP_PATH}, devices (WebSocket) at /device\n`);
      return;
    }
    if (!allowRemoteMcp && !isLoopback(req.socket.remoteAddress)) {
      return jsonRpcError(res, 403, `MCP is served to this machine only (request from ${req.socket.remoteAddress}); start with --allow-remote-mcp to change that`);
    }
    try {
      const sid = req.headers['mcp-session-id'];
      const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (req.method === 'POST') {
        const body = await readJson(req);
        if (existing) return void (await existing.handleRequest(req, res, body));
        if (sid !== undefined) return jsonRpcError(res, 404, `unknown MCP session ${String(sid)}; initialize a new one`);
        if (!isInitializeRequest(body)) return jsonRpcError(res, 400, 'first request of a session must be initialize');
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await createMcpServer(core, mcp).connect(transport);
        await transport.handleRequest(req, res, body);
        return;
      }
      if (!existing) return jsonRpcError(res, 404, 'missing or unknown mcp-session-id header');
      await existing.handleRequest(req, res);
    } catch (e) {
      if (!res.headersSent) jsonRpcError(res, 400, (e as Error).message);
    }
  });
  gateway.attachTo(server);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    server,
    gateway,
    port: actual,
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => {});
      gateway.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
