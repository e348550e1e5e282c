// The in-memory network backend: a fault-injecting fabric between the firmware's sockets (net.ts's
// SimSocket, which takes it as its `connect`) and host-side Links. No real sockets, every delivery
// on the injected Clock, every fault drawn from one seeded Rng, so a run replays exactly.
//
// The fabric plays the host's TCP stack and WebSocket server: it answers the firmware's HTTP upgrade
// with 101, unmasks its frames and hands whole text messages to a Link; the Link's text goes back as
// unmasked WebSocket frames. Faults act on whole messages (drop, duplicate, delay, reorder) and on
// the host as a whole (down: connections refused, existing ones reset). Messages are opaque text:
// nothing here depends on what the frames say.
import { EventEmitter } from 'node:events';
import type { Socket as NodeSocket } from 'node:net';
import type { Clock } from '@proofrig/protocol/clock';
import type { Link } from '@proofrig/protocol';
import { OP_CLOSE, OP_PING, OP_PONG, OP_TEXT, WS_MORE, wsDecode, wsEncode, type WsFrame } from '@proofrig/protocol/wscodec';
import type { ConnectFn } from './net.js';
import type { Rng } from './prng.js';


/** Per-message fault probabilities (0..1) and latency, each direction alike. */
export interface FabricFaults {
  drop: number;
  duplicate: number;
  /** Probability of an extra delay of up to delayMaxMs (later messages queue behind it, as TCP does). */
  delay: number;
  delayMaxMs: number;
  /** Probability that a message overtakes the ones queued before it. */
  reorder: number;
  /** One-way latency, drawn uniformly in [min, max] ms. */
  latencyMs: [number, number];
  /**
   * The device's own time per message, drawn uniformly in [min, max] ms (a chip far slower than a PC):
   * a message to the device is handled only after the ones before it, each taking this long, and a
   * message from it leaves this much later.
   */
  deviceCpuMs?: [number, number];
}

export const NO_FAULTS: FabricFaults = { drop: 0, duplicate: 0, delay: 0, delayMaxMs: 0, reorder: 0, latencyMs: [1, 1] };

export type FabricDirection = 'to_host' | 'to_device';

/** What the fabric did, for event traces and counts. */
export type FabricEvent =
  | { kind: 'connect' | 'refused' | 'reset'; conn: number; dev: string }
  | { kind: 'send' | 'deliver' | 'delivered' | 'drop' | 'duplicate' | 'delay' | 'reorder'; conn: number; dev: string; dir: FabricDirection; text: string };

export interface FabricOptions {
  clock: Clock;
  rng: Rng;
  faults?: FabricFaults;
  /** A new connection finished its upgrade: the host adopts the link (HostCore.attach). */
  accept?: (link: Link, dev: string) => void;
  /** Every fabric event, synchronously. */
  observe?: (e: FabricEvent) => void;
}

export class Fabric {
  faults: FabricFaults;
  /** False while the host is down: connections are refused. */
  hostUp = true;
  accept: ((link: Link, dev: string) => void) | undefined;
  private conns = new Set<Conn>();
  private nextConn = 1;

  constructor(private readonly opts: FabricOptions) {
    this.faults = opts.faults ?? NO_FAULTS;
    this.accept = opts.accept;
  }

  /** A `connect` for one rig (SimRigOptions.connect); `dev` names it in events. */
  connector(dev: string): ConnectFn {
    return () => new FabricSocket(this, dev) as unknown as NodeSocket;
  }

  /** The host died: every connection is reset (the OS answers RST for the dead process) and new ones are refused. */
  hostDown(): void {
    this.hostUp = false;
    for (const c of [...this.conns]) c.reset('host down');
  }

  /** Open connections, for tests. */
  get open(): number {
    return this.conns.size;
  }

  // ---- internals ----

  /** @internal */ emit(e: FabricEvent): void {
    this.opts.observe?.(e);
  }
  /** @internal */ clockOf(): Clock {
    return this.opts.clock;
  }
  /** @internal */ draw(): number {
    return this.opts.rng();
  }
  /** @internal */ latency(): number {
    const [a, b] = this.faults.latencyMs;
    return a + Math.floor(this.draw() * (b - a + 1));
  }
  /** @internal */ register(c: Conn): number {
    this.conns.add(c);
    return this.nextConn++;
  }
  /** @internal */ unregister(c: Conn): void {
    this.conns.delete(c);
  }
}

/**
 * One direction of a connection: message-level faults, then in-order delivery after a latency
 * (a message queues behind earlier ones unless it is reordered).
 */
class Lane {
  tail = 0;
  constructor(
    private readonly f: Fabric,
    private readonly conn: Conn,
    readonly dir: FabricDirection,
    private readonly deliver: (text: string) => void,
  ) {}

  push(text: string): void {
    const f = this.f;
    const fx = f.faults;
    const clock = f.clockOf();
    const ev = { conn: this.conn.id, dev: this.conn.dev, dir: this.dir, text };
    f.emit({ kind: 'send', ...ev });
    if (fx.drop > 0 && f.draw() < fx.drop) return f.emit({ kind: 'drop', ...ev });
    const copies = fx.duplicate > 0 && f.draw() < fx.duplicate ? 2 : 1;
    if (copies === 2) f.emit({ kind: 'duplicate', ...ev });
    const cpuMs = fx.deviceCpuMs;
    for (let k = 0; k < copies; k++) {
      const cpu = cpuMs ? cpuMs[0] + Math.floor(f.draw() * (cpuMs[1] - cpuMs[0] + 1)) : 0;
      let at = clock.now() + f.latency() + (this.dir === 'to_host' ? cpu : 0);
      if (fx.delay > 0 && f.draw() < fx.delay) {
        at += 1 + Math.floor(f.draw() * fx.delayMaxMs);
        f.emit({ kind: 'delay', ...ev });
      }
      if (fx.reorder > 0 && f.draw() < fx.reorder && at < this.tail) f.emit({ kind: 'reorder', ...ev });
      else at = Math.max(at, this.tail);
      // The device handles what reaches it one message at a time.
      if (this.dir === 'to_device') at += cpu;
      this.tail = Math.max(this.tail, at);
      const gen = this.conn.gen;
      clock.setTimeout(() => {
        // After the device's FIN, what it sent before still arrives (TCP delivers data before the FIN).
        if (this.conn.gen !== gen || (this.conn.dead && !(this.conn.fin && this.dir === 'to_host'))) return;
        f.emit({ kind: 'deliver', ...ev });
        try {
          this.deliver(text);
        } finally {
          f.emit({ kind: 'delivered', ...ev });
        }
      }, at - clock.now());
    }
  }
}

/** One TCP connection through the fabric: the device's end is a FabricSocket, the host's a Link. */
class Conn {
  readonly id: number;
  dead = false;
  /** The device ended its side cleanly (FIN): its frames already on the way still reach the host. */
  fin = false;
  gen = 0;
  link: HostLink | undefined;
  toHost: Lane;
  toDevice: Lane;
  constructor(
    readonly f: Fabric,
    readonly dev: string,
    readonly sock: FabricSocket,
  ) {
    this.id = f.register(this);
    this.toHost = new Lane(f, this, 'to_host', (t) => this.link?.deliver(t));
    this.toDevice = new Lane(f, this, 'to_device', (t) => sock.deliverText(t));
  }

  /** Cut both ends now (RST): the device sees close with an error, the host sees onclose. */
  reset(why: string): void {
    if (this.dead) return;
    this.dead = true;
    this.f.unregister(this);
    this.f.emit({ kind: 'reset', conn: this.id, dev: this.dev });
    this.link?.ended(why);
    this.sock.remoteClosed(true);
  }

  /** The device closed its end (FIN, or destroy: no FIN): the host sees onclose after the latency, after a FIN only once the frames sent before it arrived. */
  deviceClosed(fin: boolean): void {
    if (this.dead) return;
    this.dead = true;
    this.fin = fin;
    this.f.unregister(this);
    const l = this.link;
    const clock = this.f.clockOf();
    const at = Math.max(clock.now() + this.f.latency(), fin ? this.toHost.tail : 0);
    clock.setTimeout(() => l?.ended('device closed the connection'), at - clock.now());
  }
}

class HostLink implements Link {
  onmessage?: (text: string) => void;
  onclose?: (reason: string) => void;
  closed = false;
  readonly remote: string;
  constructor(private readonly c: Conn) {
    this.remote = `fabric ${c.dev}#${c.id}`;
  }
  send(text: string): void {
    if (this.closed || this.c.dead) return;
    this.c.toDevice.push(text);
  }
  close(reason = 'closed'): void {
    if (this.closed) return;
    const c = this.c;
    // A WebSocket close frame then FIN: the device sees it after the latency, the host's onclose fires now-ish.
    c.f.clockOf().setTimeout(() => {
      if (c.dead) return;
      c.dead = true;
      c.f.unregister(c);
      c.sock.deliverClose();
    }, c.f.latency());
    this.ended(reason);
  }
  /** @internal */ deliver(text: string): void {
    if (!this.closed) this.onmessage?.(text);
  }
  /** @internal */ ended(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    const cb = this.onclose;
    this.c.f.clockOf().setTimeout(() => cb?.(reason), 0);
  }
}

/** The device's end, shaped like the subset of node:net.Socket that net.ts's SimSocket uses. */
class FabricSocket extends EventEmitter {
  connecting = true;
  destroyed = false;
  private conn: Conn | undefined;
  private rx = '';
  private upgraded = false;
  private readonly fr: WsFrame = { fin: true, op: 0, d: '' };

  constructor(
    private readonly f: Fabric,
    private readonly dev: string,
  ) {
    super();
    const clock = f.clockOf();
    if (!f.hostUp || !f.accept) {
      f.emit({ kind: 'refused', conn: 0, dev });
      clock.setTimeout(() => this.fail('ECONNREFUSED'), f.latency());
      return;
    }
    const c = new Conn(f, dev, this);
    this.conn = c;
    f.emit({ kind: 'connect', conn: c.id, dev });
    clock.setTimeout(() => {
      if (this.destroyed || c.dead) return;
      this.connecting = false;
      this.emit('connect');
    }, f.latency() * 2);
  }

  write(buf: Buffer | string, cb?: () => void): boolean {
    const c = this.conn;
    if (this.destroyed || !c || c.dead) return false;
    this.rx += typeof buf === 'string' ? buf : buf.toString('latin1');
    this.f.clockOf().setTimeout(() => cb?.(), 0);
    this.parse(c);
    return true;
  }

  end(): this {
    const c = this.conn;
    this.f.clockOf().setTimeout(() => this.emit('finish'), 0);
    c?.deviceClosed(true);
    return this;
  }

  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.conn?.deviceClosed(false);
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  /** Bytes from the device: the upgrade request first, then masked WebSocket frames. */
  private parse(c: Conn): void {
    if (!this.upgraded) {
      const e = this.rx.indexOf('\r\n\r\n');
      if (e < 0) return;
      this.rx = this.rx.slice(e + 4);
      this.upgraded = true;
      const link = new HostLink(c);
      c.link = link;
      this.rawToDevice('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      this.f.accept!(link, this.dev);
    }
    for (;;) {
      const n = wsDecode(this.rx, this.fr);
      if (n === WS_MORE) return;
      if (n < 0) return c.reset('bad frame from device');
      this.rx = this.rx.slice(n);
      const op = this.fr.op;
      if (op === OP_TEXT) c.toHost.push(Buffer.from(this.fr.d, 'latin1').toString('utf8'));
      else if (op === OP_PING) this.rawToDevice(wsEncode(OP_PONG, this.fr.d, ''));
      else if (op === OP_CLOSE) return c.deviceClosed(true);
    }
  }

  private rawToDevice(bytes: string): void {
    const clock = this.f.clockOf();
    const c = this.conn!;
    const gen = c.gen;
    clock.setTimeout(() => {
      if (!c.dead && c.gen === gen) this.emit('data', Buffer.from(bytes, 'latin1'));
    }, this.f.latency());
  }

  /** @internal */ deliverText(text: string): void {
    if (this.destroyed) return;
    this.emit('data', Buffer.from(wsEncode(OP_TEXT, Buffer.from(text, 'utf8').toString('latin1'), ''), 'latin1'));
  }

  /** @internal */ deliverClose(): void {
    if (this.destroyed) return;
    this.emit('data', Buffer.from(wsEncode(OP_CLOSE, String.fromCharCode(3, 232), ''), 'latin1'));
    this.remoteClosed(false);
  }

  /** @internal */ remoteClosed(error: boolean): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (error) this.emit('error', Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
    this.emit('close', error);
  }

  private fail(code: string): void {
    this.destroyed = true;
    this.emit('error', Object.assign(new Error(code), { code }));
    this.emit('close', true);
  }
}
