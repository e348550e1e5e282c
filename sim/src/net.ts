// Espruino's require('net') over real Node sockets: latin1 byte strings, negative error codes, events
// delivered asynchronously in Espruino's order (error → end → close), and the simulated network's injected outages.
//
// Reproduced from Espruino's libs/network (socketserver.c, jswrap_net.c, network_esp32.c):
// - 'data' carries at most 536 bytes (the ESP32 network's chunkSize); data with no 'data' listener
//   waits in a buffer for socket.read()/available().
// - connect(options, cb): cb is a 'connect' listener, called with the socket; a 'drain' follows when
//   nothing is waiting to be sent.
// - write() converts non-strings with String() and always returns false (Espruino: "for node.js
//   compatibility, returns the boolean false"); 'drain' fires once everything written has been sent.
// - end([data]) sends what is queued, closes, then 'end' and 'close'(false).
// - An error fires 'error' {code, message} (never for -1), then 'end', then 'close'(true).
import { readFileSync } from 'node:fs';
// - Nagle's algorithm, as lwIP runs it (Espruino never sets TCP_NODELAY): see `NagleModel` below.
import * as nodeNet from 'node:net';
import type { Socket as NodeSocket } from 'node:net';
import { realClock } from '@proofrig/protocol/clock';
import type { NetworkSocket, SimNetwork } from './network.js';
import type { Realm } from './realm.js';

/** Bytes per 'data' event, as the ESP32 build of Espruino reads them. */
export const NET_CHUNK_SIZE = 536;
/** Simulated time for a connection attempt to be refused while the network is down. */
export const REFUSE_MS = 5;

/** lwIP's TCP_MSS on the ESP32: a segment this full is sent even while earlier data is unacknowledged. */
export const TCP_MSS = 1436;
/** The peer's delayed-ACK time (Linux TCP_DELACK_MIN): when an unanswered segment gets its ACK. */
export const DELAYED_ACK_MS = 40;

/** Espruino's socket error codes (libs/network/socketerrors.h) and their messages. */
export const SOCKET_ERRORS: Readonly<Record<number, string>> = {
  [-1]: 'connection closed',
  [-2]: 'out of memory',
  [-3]: 'timeout',
  [-4]: 'no route',
  [-5]: 'busy',
  [-6]: 'not found',
  [-7]: 'max sockets',
  [-8]: 'unsent data',
  [-9]: 'connection reset',
  [-10]: 'unknown error',
  [-11]: 'no connection',
};

/** Map a Node socket error to Espruino's negative code. */
export function espruinoErrorCode(err: unknown): number {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'ECONNABORTED':
    case 'EPIPE':
      return -9;
    case 'ETIMEDOUT':
      return -3;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
      return -6;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENETDOWN':
    case 'EHOSTDOWN':
      return -4;
    default:
      return -10;
  }
}

export type ConnectFn = (opts: { host: string; port: number }) => NodeSocket;

export interface NetDeps {
  realm: Realm;
  network: SimNetwork;
  connect: ConnectFn;
}

/** Parse Espruino's connect target: {host, port}, "host:port" or a URL. */
export function parseTarget(options: unknown): { host: string; port: number } | undefined {
  if (typeof options === 'string') {
    let s = options;
    let defPort = 80;
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(s);
    if (scheme) {
      if (/^(https|wss)$/i.test(scheme[1])) defPort = 443;
      s = s.slice(scheme[0].length);
    }
    const hostPort = s.split(/[/?#]/)[0];
    const at = hostPort.lastIndexOf('@');
    const hp = at >= 0 ? hostPort.slice(at + 1) : hostPort;
    const colon = hp.lastIndexOf(':');
    const host = colon >= 0 ? hp.slice(0, colon) : hp;
    const port = colon >= 0 ? Number(hp.slice(colon + 1)) : defPort;
    if (!host || !(port > 0 && port < 65536)) return undefined;
    return { host, port };
  }
  if (typeof options === 'object' && options !== null) {
    const o = options as { host?: unknown; port?: unknown };
    const host = o.host === undefined || o.host === null ? 'localhost' : String(o.host);
    const port = o.port === undefined || o.port === null ? 80 : Number(o.port);
    if (!(port > 0 && port < 65536)) return undefined;
    return { host, port };
  }
  return undefined;
}

/** The firmware's require('net'). */
export function createNetModule(deps: NetDeps): Record<string, unknown> {
  const { realm } = deps;
  return realm.obj({
    connect: realm.fn((options: unknown, callback?: unknown) => {
      if (callback !== undefined && typeof callback !== 'function')
        throw realm.err(`Expecting Callback Function but got ${typeof callback}`);
      const target = parseTarget(options);
      if (!target) throw realm.err(`Expecting Options to be an Object but it was ${typeof options}`);
      return new SimSocket(deps, target, callback as Function | undefined).obj;
    }),
  });
}

type State = 'connecting' | 'open' | 'ending' | 'closed';

class SimSocket implements NetworkSocket {
  readonly obj: Record<string, unknown>;
  private state: State = 'connecting';
  private node: NodeSocket | undefined;
  private rx = '';
  private pending = 0;
  private errorCode: number | undefined;
  private unregister: () => void = () => {};
  // Nagle: sent data not yet acknowledged by the peer, and the small writes held behind it.
  private unacked = false;
  private ackGen = 0;
  private held: { bytes: string; sent: () => void }[] = [];
  private heldBytes = 0;
  private heldSince = 0;
  private idleQueued = false;

  constructor(
    private readonly deps: NetDeps,
    target: { host: string; port: number },
    callback: Function | undefined,
  ) {
    const { realm, network } = deps;
    const boot = realm.boot;
    this.obj = realm.obj({
      write: realm.fn((data?: unknown) => this.write(data)),
      end: realm.fn((data?: unknown) => this.end(data)),
      available: realm.fn(() => (realm.helpers.count(this.obj, 'data') > 0 ? 0 : this.rx.length)),
      read: realm.fn((chars?: unknown) => this.read(chars)),
    });
    if (callback) realm.helpers.on(this.obj, 'connect', callback);
    boot.onKill(() => this.kill());
    if (network.down) {
      // The network swallows the SYN: the attempt fails like a refused connection.
      boot.defer(() => this.finish(-9), REFUSE_MS);
      return;
    }
    let node: NodeSocket;
    try {
      node = deps.connect({ host: target.host, port: target.port });
    } catch (e) {
      if (e instanceof RefusedAtOnce) {
        // The interpreter's blocking connect(): it prints this and throws from net.connect itself.
        boot.print('ERROR: Connect failed (err 111)');
        throw internalError(realm, 'Unable to create socket');
      }
      const code = espruinoErrorCode(e);
      boot.defer(() => this.finish(code));
      return;
    }
    this.node = node;
    this.unregister = network.register(this);
    node.on('error', (err: Error) => {
      if (!this.active || this.deps.network.swallowsToDevice) return;
      this.errorCode = espruinoErrorCode(err);
    });
    node.on('connect', () => this.opened());
    node.on('data', (buf: Buffer) => this.received(buf));
    node.on('close', () => {
      if (!this.active || this.deps.network.swallowsToDevice) return; // the host's FIN/RST is lost too
      this.finish(this.errorCode);
    });
    if ((node as { connecting?: boolean }).connecting !== true && !node.destroyed) boot.defer(() => this.opened());
  }

  /** The firmware may still see events from this socket. */
  private get active(): boolean {
    return this.state !== 'closed' && this.deps.realm.boot.live;
  }

  private opened(): void {
    if (!this.active || this.state !== 'connecting') return;
    this.state = 'open';
    const { realm } = this.deps;
    realm.emit(this.obj, 'connect', this.obj);
    if (this.pending === 0 && this.state === 'open') realm.emit(this.obj, 'drain');
    this.flush();
  }

  private received(buf: Buffer): void {
    if (!this.active || this.state === 'ending' || this.deps.network.swallowsToDevice) return;
    this.acked('peer'); // data from the peer carries the ACK of everything we sent before it
    this.rx += buf.toString('latin1');
    this.flush();
  }

  private flush(): void {
    const { realm } = this.deps;
    while (this.rx.length > 0 && this.active && realm.helpers.count(this.obj, 'data') > 0) {
      const chunk = this.rx.slice(0, NET_CHUNK_SIZE);
      this.rx = this.rx.slice(NET_CHUNK_SIZE);
      realm.emit(this.obj, 'data', chunk);
    }
  }

  private read(chars: unknown): string | undefined {
    if (this.rx.length === 0) return undefined;
    const n = Number(chars) > 0 ? Math.floor(Number(chars)) : this.rx.length;
    const out = this.rx.slice(0, n);
    this.rx = this.rx.slice(n);
    return out;
  }

  private write(data: unknown): boolean {
    if (this.state === 'closed' || this.state === 'ending' || data === undefined) return false;
    const s = typeof data === 'string' ? data : String(data);
    if (s.length === 0) return false;
    this.pending++;
    const sent = (): void => {
      this.pending--;
      if (this.pending === 0 && this.state === 'open' && this.active) this.deps.realm.emit(this.obj, 'drain');
    };
    // Espruino queues writes and sends them from its idle loop, so the writes of one callback leave as one segment.
    if (this.held.length === 0) this.heldSince = this.deps.realm.boot.clock.now();
    this.held.push({ bytes: s, sent });
    this.heldBytes += s.length;
    if (!this.idleQueued) {
      this.idleQueued = true;
      // A microtask: after the firmware's current callback, without taking simulated time.
      queueMicrotask(() => {
        this.idleQueued = false;
        if (!this.active) return;
        // Nagle: while earlier data is unacknowledged, less than a full segment waits for the ACK.
        if (!this.unacked || this.heldBytes >= TCP_MSS) this.transmit();
      });
    }
    return false;
  }

  /** Put everything held on the wire as one segment; it is unacknowledged until the peer answers or its delayed ACK fires. */
  private transmit(): void {
    const parts = this.held;
    if (parts.length === 0) return;
    this.held = [];
    this.heldBytes = 0;
    const bytes = parts.length === 1 ? parts[0].bytes : parts.map((p) => p.bytes).join('');
    const sent = (): void => {
      for (const p of parts) p.sent();
    };
    const boot = this.deps.realm.boot;
    const node = this.node;
    if (this.deps.network.swallowsFromDevice || !node || node.destroyed) {
      boot.defer(sent); // the bytes leave the chip and are lost on the way
      return;
    }
    node.write(Buffer.from(bytes, 'latin1'), () => {
      if (this.active) sent();
    });
    this.unacked = true;
    const gen = ++this.ackGen;
    // The peer that sends nothing back acknowledges after its delayed-ACK time.
    boot.defer(() => {
      if (gen !== this.ackGen) return;
      // On the wall clock a busy event loop can run this timer before reading a reply that arrived in
      // time; let Node's I/O phase go first so such a reply counts as the ACK it was.
      if (boot.clock === realClock) setImmediate(() => gen === this.ackGen && this.active && this.acked('delack'));
      else this.acked('delack');
    }, DELAYED_ACK_MS);
  }

  /** Everything sent so far is acknowledged: send what Nagle held. */
  private acked(by: 'peer' | 'delack'): void {
    if (!this.unacked) return;
    this.unacked = false;
    this.ackGen++;
    if (this.held.length === 0 || this.state === 'closed' || this.idleQueued) return;
    this.deps.network.nagleReleased(by, this.deps.realm.boot.clock.now() - this.heldSince);
    this.transmit();
  }

  private end(data: unknown): void {
    if (data !== undefined) this.write(data);
    if (this.state === 'closed' || this.state === 'ending') return;
    this.unacked = false;
    this.transmit(); // a close pushes out whatever Nagle was holding
    const wasConnecting = this.state === 'connecting';
    this.state = 'ending';
    const node = this.node;
    const boot = this.deps.realm.boot;
    if (!node || this.deps.network.down) {
      // During an outage the FIN cannot get through: the chip just drops the connection.
      node?.destroy();
      boot.defer(() => this.finish(undefined));
      return;
    }
    if (wasConnecting && (node as { connecting?: boolean }).connecting === true) {
      node.once('connect', () => node.end());
    } else {
      node.end();
    }
    node.once('finish', () => {
      node.destroy();
      if (this.deps.realm.boot.live) this.finish(undefined);
    });
  }

  /** Close for good and tell the firmware (code: an Espruino error code, or undefined for a clean close). */
  private finish(code: number | undefined): void {
    if (this.state === 'closed') return;
    const { realm } = this.deps;
    this.flush();
    this.state = 'closed';
    this.unregister();
    this.dropNode();
    const hadError = code !== undefined && code !== -1;
    if (hadError) realm.emit(this.obj, 'error', realm.obj({ code, message: SOCKET_ERRORS[code] ?? 'unknown error' }));
    realm.emit(this.obj, 'end');
    realm.emit(this.obj, 'close', hadError);
  }

  /** End of an outage this connection did not survive. */
  outageReset(): void {
    if (this.state === 'closed' || !this.deps.realm.boot.live) return;
    this.finish(-9);
  }

  /** Power loss: the socket vanishes, the firmware hears nothing. */
  private kill(): void {
    this.state = 'closed';
    this.unregister();
    this.dropNode();
  }

  private dropNode(): void {
    const node = this.node;
    if (!node) return;
    node.removeAllListeners('data');
    node.removeAllListeners('connect');
    node.removeAllListeners('close');
    node.removeAllListeners('error');
    node.on('error', () => {}); // whatever the peer does now must not crash the host
    if (!node.destroyed) node.destroy();
  }
}

/** Thrown by a ConnectFn when the connection is refused before connect() returns. */
export class RefusedAtOnce extends Error {}

/** Espruino's InternalError: a plain object ({message, type}), not an instance of Error. */
function internalError(realm: Realm, message: string): unknown {
  const e = realm.obj({ message, type: 'InternalError' });
  Object.defineProperty(e, 'toString', { value: realm.fn(() => 'InternalError: ' + message), enumerable: false });
  return e;
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\])$/i;

/**
 * Whether nothing listens on this loopback TCP port (Linux: read from /proc/net/tcp{,6}, state 0A).
 * undefined when that cannot be told (not loopback, not Linux).
 */
export function loopbackPortClosed(host: string, port: number): boolean | undefined {
  if (!LOOPBACK.test(host)) return undefined;
  let tables: string;
  try {
    tables = readFileSync('/proc/net/tcp', 'latin1') + readFileSync('/proc/net/tcp6', 'latin1');
  } catch {
    return undefined;
  }
  const hexPort = ':' + port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of tables.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length > 3 && f[3] === '0A' && f[1].endsWith(hexPort)) return false;
  }
  return true;
}

/**
 * The default way the simulated chip opens TCP connections. A loopback port with no listener is
 * refused before connect() returns, as the Linux interpreter's blocking connect() does (it throws
 * "Unable to create socket" from net.connect); anything else fails later with an 'error' event.
 */
export const defaultConnect: ConnectFn = (opts) => {
  if (loopbackPortClosed(opts.host, opts.port) === true) throw new RefusedAtOnce(`nothing listens on ${opts.host}:${opts.port}`);
  const s = nodeNet.connect({ host: opts.host, port: opts.port });
  // Nagle is modelled above, on the chip's side; the Node socket must not add its own.
  s.setNoDelay(true);
  return s;
};
