// The device gateway: devices dial in over WebSocket at DEVICE_PATH; each connection becomes
// a Link handed to the host core, which runs the handshake and everything after it.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { DEVICE_PATH } from '@proofrig/protocol';
import type { Logger } from 'pino';
import type { Link } from '@proofrig/protocol';

/** Larger frames are refused by the socket layer: no legitimate frame is near this. */
const MAX_FRAME_BYTES = 64 * 1024;

/** A Link over one WebSocket (either end: the gateway's accepted socket or a client). */
export class WsLink implements Link {
  onmessage?: (text: string) => void;
  onclose?: (reason: string) => void;
  closed = false;

  constructor(
    private readonly ws: WebSocket,
    readonly remote: string,
    private readonly log?: Logger,
    /** The socket under ws (the gateway's upgraded one), for several frames in one write. */
    private readonly socket?: { cork(): void; uncork(): void },
    /** Told once the device behind this link finished its handshake. */
    private readonly onAuthenticated?: () => void,
  ) {
    ws.on('message', (data, isBinary) => {
      try {
        // Binary frames are passed on as text so the validator answers them with a specific error.
        const text = isBinary ? '\u0000binary frame' : data.toString();
        this.onmessage?.(text);
      } catch (e) {
        // Whatever a connection provokes stays with that connection: log it, drop the link, keep serving.
        this.log?.error({ evt: 'link_failed', remote, err: (e as Error)?.stack ?? String(e) }, 'device connection handler failed');
        this.close('INTERNAL');
      }
    });
    ws.on('close', (code, reason) => this.gone(`closed (${code}${reason.length ? ' ' + reason.toString() : ''})`));
    ws.on('error', (err) => this.gone('socket error: ' + err.message));
  }

  send(text: string): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(text);
  }

  authenticated(): void {
    this.onAuthenticated?.();
  }

  sendBatch(texts: string[]): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    // ws writes each frame synchronously (no compression here); corked, they leave in one writev.
    this.socket?.cork();
    for (const t of texts) this.ws.send(t);
    this.socket?.uncork();
  }

  close(reason = 'closed'): void {
    if (this.closed) return;
    this.ws.close(1000, reason.slice(0, 120));
    // A peer that vanished never answers the close handshake.
    setTimeout(() => this.ws.terminate(), 1000).unref();
    this.gone(reason);
  }

  private gone(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    setImmediate(() => this.onclose?.(reason));
  }
}

export class WsGateway {
  private wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });

  /**
   * `accept` receives every device connection, e.g. `(link) => core.attach(link)`. `refuse` may turn an
   * upgrade away first (the listener's caps); `authenticated` hears of a socket whose device proved itself.
   */
  constructor(
    private readonly accept: (link: Link) => void,
    private readonly log?: Logger,
    private readonly hooks: { refuse?: (socket: Duplex) => string | null; authenticated?: (socket: Duplex) => void } = {},
  ) {}

  /** Take over WebSocket upgrades on DEVICE_PATH of an HTTP server; other paths are refused. */
  attachTo(server: Server): void {
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? '').split('?')[0];
    if (path !== DEVICE_PATH) {
      socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\nDevices connect at ${DEVICE_PATH}\n`);
      return;
    }
    const refused = this.hooks.refuse?.(socket);
    if (refused) {
      socket.end(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${refused}\n`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const remote = `ws ${req.socket.remoteAddress}:${req.socket.remotePort}`;
      try {
        this.accept(new WsLink(ws, remote, this.log, socket, () => this.hooks.authenticated?.(socket)));
      } catch (e) {
        this.log?.error({ evt: 'link_failed', remote, err: (e as Error)?.stack ?? String(e) }, 'accepting a device connection failed');
        ws.terminate();
      }
    });
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}
