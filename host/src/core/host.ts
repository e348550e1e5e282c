// The host core: journal, device registry and command service behind one object. It talks
// to devices only through Links and reads time only through its Clock.
import { EventEmitter } from 'node:events';
import pino, { type Logger } from 'pino';
import { DEFAULT_HEARTBEAT_MS, type BoardDef, type EventFrame, type ToHostFrame } from '@proofrig/protocol';
import { realClock, type Clock } from '@proofrig/protocol/clock';
import { Commands } from './commands.js';
import type { CommandStatus, SubmitInput } from './command-view.js';
import { Devices, type DeviceView } from './devices.js';
import { DEFAULT_RETENTION, type Retention } from './journal/retention.js';
import { Journal } from './journal/journal.js';
import type { PrunedCommand } from './journal/records.js';
import type { TimerHandle } from '@proofrig/protocol/clock';
import type { Link } from '@proofrig/protocol';
import { Session, type SessionHandler } from './session.js';
import { LogLimiter } from './log-limit.js';

export interface HostOptions {
  /** Journal file, or ':memory:'. */
  db: string;
  /** A journal the caller made (tests use one whose commit can fail); `db` is then unused. */
  journal?: Journal;
  clock?: Clock;
  logger?: Logger;
  heartbeatMs?: number;
  handshakeMs?: number;
  offlineGraceMs?: number;
  queryWaitMs?: number;
  /** Journal retention (default: 30 days, 1,000,000 terminal commands), applied at start and every `pruneEveryMs`. */
  retention?: Partial<Retention>;
  /** How often retention runs (default hourly). */
  pruneEveryMs?: number;
  /** How long a `rack` may wait to share a socket write with the next frame to its device (Session rideMs; default RACK_RIDE_MS on the real clock, 0 on a virtual one). */
  rackRideMs?: number;
}

/**
 * A `rack` waits at most this long for the next frame to its device: long enough for a busy device's
 * next command to take it along, and under the delayed ACK (40 ms on Linux) a
 * silent host would leave the device's Nagle waiting for (the device only frees an outbox slot).
 */
export const RACK_RIDE_MS = 20;

/** How long a device that just dropped counts as reconnecting (booting) rather than offline. */
export const RECONNECT_WINDOW_MS = 5000;

export interface DeviceEvent {
  device_id: string;
  online: boolean;
  reason: string | null;
}

export class HostCore implements SessionHandler {
  /** 'device' (DeviceEvent) when a device goes online/offline, 'state' (device id) on each state observation. */
  readonly events = new EventEmitter();
  /** Devices expected online soon (a simulated rig booting, a device reconnecting): id → until (clock ms). */
  private expected = new Map<string, number>();
  readonly journal: Journal;
  readonly devices: Devices;
  readonly commands: Commands;
  readonly clock: Clock;
  readonly log: Logger;
  private readonly heartbeatMs: number;
  private readonly handshakeMs: number;
  private sessions = new Set<Session>();
  private closing = false;
  readonly retention: Retention;
  private readonly pruneEveryMs: number;
  private pruneTimer: TimerHandle | undefined;
  /** Warnings unauthenticated peers can provoke, limited per remote address across connections. */
  private readonly limiter: LogLimiter;
  private readonly rackRideMs: number;

  constructor(opts: HostOptions) {
    this.clock = opts.clock ?? realClock;
    this.log = opts.logger ?? pino({ level: 'silent' });
    this.heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    // Short: a connection that has not proven itself holds a socket and nothing else.
    this.handshakeMs = opts.handshakeMs ?? 5000;
    this.limiter = new LogLimiter(this.clock);
    this.rackRideMs = opts.rackRideMs ?? (this.clock === realClock ? RACK_RIDE_MS : 0);
    // Group commit: on the real clock every write of one event-loop turn (submits, device frames) joins
    // one transaction committed at its end (setImmediate), so many commands cost one fsync; on a virtual
    // clock (simulated runs) each submit's or frame's writes commit when its handler ends. Either way
    // nobody hears of a write before it is on disk.
    this.journal = opts.journal ?? new Journal(opts.db, this.clock === realClock ? (fn) => setImmediate(fn) : undefined);
    this.devices = new Devices(this.journal, this.clock);
    this.commands = new Commands(this.journal, this.devices, this.clock, this.log, {
      offlineGraceMs: opts.offlineGraceMs ?? Math.max(10000, this.heartbeatMs * 5),
      queryWaitMs: opts.queryWaitMs ?? 500,
      connecting: (dev) => {
        for (const s of this.sessions) if (s.dev === dev && !s.authed) return true;
        return false;
      },
      handshakeMs: this.handshakeMs,
    });
    this.journal.onRollback = (e) => this.commands.watch.rolledBack(e);
    this.journal.onBroken = (e) => this.log.fatal({ evt: 'journal_sync_failed', err: e.message }, 'journal fsync failed; it takes no more writes: restart the host');
    // The journal's files became unwritable (immutable, a read-only file system): it takes no more writes and
    // cannot even be closed. Said once; whoever runs the host (the CLI) ends the process on 'journal_lost'.
    this.journal.onUnwritable = (e) => {
      this.log.fatal({ evt: 'journal_unwritable', err: e.message }, 'journal files can no longer be written; the host takes no more commands and must stop');
      this.events.emit('journal_lost', e);
    };
    this.journal.onCheckpointFail = (reason) => this.log.warn({ evt: 'journal_checkpoint_inline', reason }, 'journal checkpoints run inside commits again (the background checkpointer failed)');
    this.journal.onCallbackError = (e) => this.log.error({ evt: 'after_commit_failed', err: (e as Error)?.stack ?? String(e) }, 'a listener failed after a journal commit');
    this.commands.watch.recover();
    this.events.setMaxListeners(0);
    this.devices.onObserve = (dev) => this.events.emit('state', dev);
    this.retention = { ...DEFAULT_RETENTION, ...opts.retention };
    this.pruneEveryMs = opts.pruneEveryMs ?? 3600_000;
    this.prune();
  }

  /** Apply retention now and schedule the next run; returns how many commands were pruned. */
  prune(): number {
    this.clock.clearTimeout(this.pruneTimer);
    const n = this.journal.prune(this.retention, this.clock.now());
    if (n > 0) this.log.info({ evt: 'journal_pruned', commands: n, retention: this.retention }, 'journal retention pruned terminal commands');
    this.pruneTimer = this.clock.setTimeout(() => this.prune(), this.pruneEveryMs);
    return n;
  }

  /** The tombstone of a command that retention pruned. */
  pruned(commandId: string): PrunedCommand | undefined {
    return this.journal.pruned(commandId);
  }

  /** A device should come online within `ms` (its simulated rig is booting); until then it counts as booting. */
  expect(deviceId: string, ms: number): void {
    this.expected.set(deviceId, this.clock.now() + ms);
  }

  /** Provisioned, offline, and expected online soon: a rig booting or a device reconnecting. */
  booting(deviceId: string): boolean {
    const until = this.expected.get(deviceId);
    return until !== undefined && until > this.clock.now() && !this.devices.session(deviceId);
  }

  /** Resolve true as soon as the device is online, false after `ms` (or an abort). */
  waitOnline(deviceId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.devices.session(deviceId)) return Promise.resolve(true);
    if (ms <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        this.events.off('device', onDevice);
        this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve(!!this.devices.session(deviceId));
      };
      const onDevice = (e: DeviceEvent) => {
        if (e.device_id === deviceId && e.online) done();
      };
      const timer = this.clock.setTimeout(done, ms);
      this.events.on('device', onDevice);
      signal?.addEventListener('abort', done);
    });
  }

  /** Forget a device (its secret and board; commands stay as history), refused while it has open commands; drops its connection. */
  removeDevice(deviceId: string): { ok: true } | { ok: false; reason: string } {
    const r = this.journal.removeDevice(deviceId);
    if (r.ok) {
      this.devices.session(deviceId)?.close('device removed from this host');
      this.expected.delete(deviceId);
    }
    return r;
  }

  /** Register a device's secret and board (the uploader and simulated rigs do this). */
  provision(deviceId: string, secret: string, board: BoardDef, simulated = false): void {
    this.journal.provision(deviceId, secret, board, simulated);
    this.devices.reprovisioned(deviceId);
  }

  /** A new device connection (from the gateway or an in-memory pair). */
  attach(link: Link): Session {
    const s = new Session(link, this, this.clock, this.log, { heartbeatMs: this.heartbeatMs, handshakeMs: this.handshakeMs, limiter: this.limiter, answerAtReadEnd: this.clock === realClock, rideMs: this.rackRideMs });
    this.sessions.add(s);
    return s;
  }

  /** Resolves once the command (sent, or refused) is on disk; see Commands.submit. */
  submit(input: SubmitInput): Promise<CommandStatus> {
    return this.commands.submit(input);
  }

  status(commandId: string): CommandStatus | undefined {
    return this.commands.status(commandId);
  }

  waitTerminal(commandId: string, ms: number, signal?: AbortSignal) {
    return this.commands.waitTerminal(commandId, ms, signal);
  }

  listDevices(): DeviceView[] {
    return this.devices.ids().map((d) => this.devices.view(d)!);
  }

  /** Device status from the cache, or (refresh) from the device itself; undefined for an unknown device. */
  async deviceStatus(deviceId: string, refresh: boolean): Promise<(DeviceView & { source: 'cache' | 'device'; refresh_error: string | null }) | undefined> {
    const v = this.devices.view(deviceId);
    if (!v) return undefined;
    if (!refresh) return { ...v, source: 'cache', refresh_error: null };
    if (!v.online) return { ...v, source: 'cache', refresh_error: `DEVICE_OFFLINE: device ${deviceId} is offline; this is the last cached state` };
    const wait = Math.max(1000, this.devices.rttMax(deviceId) * 3);
    const f = await this.devices.query(deviceId, undefined, wait);
    const now = this.devices.view(deviceId)!;
    if (!f) return { ...now, source: 'cache', refresh_error: `TIMEOUT: device ${deviceId} did not answer within ${wait} ms; this is the last cached state` };
    this.devices.markRefreshed(deviceId);
    return { ...now, source: 'device', refresh_error: null };
  }

  close(): void {
    this.closing = true;
    this.clock.clearTimeout(this.pruneTimer);
    for (const s of this.sessions) s.close('host shutting down');
    this.commands.watch.close();
    this.journal.close();
  }

  /**
   * An interlock acted on the device by itself (max on-time auto-off, e-stop latch): journaled once
   * per boot and id, the state cache updated, then confirmed so the device drops it from its outbox.
   */
  private deviceEvent(s: Session, f: EventFrame): void {
    const fresh = this.journal.deviceEvent({
      device_id: s.dev!, boot_id: s.boot!, event_id: f.id, at: this.clock.now(), kind: f.k, ch: f.ch ?? null, msg: f.msg, device_state: f.s,
    });
    this.devices.observe(s.dev!, f.s);
    this.journal.afterCommit(() => {
      if (fresh) this.log.warn({ evt: 'device_event', device_id: s.dev, boot: s.boot, kind: f.k, ch: f.ch, msg: f.msg }, 'interlock acted on the device');
      s.sendWithNext({ t: 'rack', rid: f.id });
    });
  }

  // ---- SessionHandler -------------------------------------------------------------

  credentials(dev: string) {
    const d = this.journal.device(dev);
    return d ? { secret: d.secret, boardId: d.board.id, relays: d.board.relays } : undefined;
  }

  online(s: Session): void {
    const previousBoot = this.devices.lastBoot(s.dev!);
    const old = this.devices.online(s);
    if (old && old !== s) old.close('replaced by a new connection from the same device');
    this.log.info({ evt: 'device_online', device_id: s.dev, boot: s.boot, fw: s.fw, remote: s.link.remote, previous_boot: previousBoot }, 'device online');
    this.expected.delete(s.dev!);
    this.commands.online(s);
    this.events.emit('device', { device_id: s.dev!, online: true, reason: null } satisfies DeviceEvent);
    // Fill the state cache and take a first round-trip measurement.
    void this.devices.query(s.dev!, undefined, 2000);
  }

  offline(s: Session, reason: string): void {
    this.sessions.delete(s);
    if (s.authed && this.devices.offline(s)) {
      this.log.info({ evt: 'device_offline', device_id: s.dev, boot: s.boot, reason }, 'device offline');
      if (!this.closing && this.journal.device(s.dev!)) this.expected.set(s.dev!, this.clock.now() + RECONNECT_WINDOW_MS);
      this.events.emit('device', { device_id: s.dev!, online: false, reason } satisfies DeviceEvent);
    }
  }

  frame(s: Session, f: ToHostFrame): void {
    switch (f.t) {
      case 'ack':
        // The device's Nagle holds the `res` (or `prog`) that follows until this is acknowledged.
        s.releaseDeviceNagle(f.rid);
        return this.commands.ack(s, f);
      case 'prog':
        s.releaseDeviceNagle(f.rid);
        return this.commands.progress(s, f);
      case 'res':
        s.resultIn(f.rid);
        return this.commands.result(s, f);
      case 'state':
        return this.devices.answer(s.dev!, f);
      case 'evt':
        return this.deviceEvent(s, f);
      case 'hb':
      case 'err':
        return;
    }
  }
}
