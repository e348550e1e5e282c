// The host core: journal, device registry and command service behind one object. It talks
// to devices only through Links and reads time only through its Clock.
import pino, { type Logger } from 'pino';
import { DEFAULT_HEARTBEAT_MS, type BoardDef, type ToHostFrame } from '@proofrig/protocol';
import { realClock, type Clock } from '@proofrig/protocol/clock';
import { Commands, type CommandStatus, type SubmitInput } from './commands.js';
import { Devices, type DeviceView } from './devices.js';
import { DEFAULT_RETENTION, Journal, type PrunedCommand, type Retention } from './journal.js';
import type { TimerHandle } from '@proofrig/protocol/clock';
import type { Link } from './link.js';
import { Session, type SessionHandler } from './session.js';
import { LogLimiter } from './log-limit.js';

export interface HostOptions {
  /** Journal file, or ':memory:'. */
  db: string;
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
}

export class HostCore implements SessionHandler {
  readonly journal: Journal;
  readonly devices: Devices;
  readonly commands: Commands;
  readonly clock: Clock;
  readonly log: Logger;
  private readonly heartbeatMs: number;
  private readonly handshakeMs: number;
  private sessions = new Set<Session>();
  readonly retention: Retention;
  private readonly pruneEveryMs: number;
  private pruneTimer: TimerHandle | undefined;
  /** Warnings unauthenticated peers can provoke, limited per remote address across connections. */
  private readonly limiter: LogLimiter;

  constructor(opts: HostOptions) {
    this.clock = opts.clock ?? realClock;
    this.log = opts.logger ?? pino({ level: 'silent' });
    this.heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    // Short: a connection that has not proven itself holds a socket and nothing else.
    this.handshakeMs = opts.handshakeMs ?? 5000;
    this.limiter = new LogLimiter(this.clock);
    this.journal = new Journal(opts.db);
    this.devices = new Devices(this.journal, this.clock);
    this.commands = new Commands(this.journal, this.devices, this.clock, this.log, {
      offlineGraceMs: opts.offlineGraceMs ?? Math.max(10000, this.heartbeatMs * 5),
      queryWaitMs: opts.queryWaitMs ?? 500,
    });
    this.commands.recover();
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

  /** Register a device's secret and board (the uploader and simulated rigs do this). */
  provision(deviceId: string, secret: string, board: BoardDef): void {
    this.journal.provision(deviceId, secret, board);
    this.devices.reprovisioned(deviceId);
  }

  /** A new device connection (from the gateway or an in-memory pair). */
  attach(link: Link): Session {
    const s = new Session(link, this, this.clock, this.log, { heartbeatMs: this.heartbeatMs, handshakeMs: this.handshakeMs, limiter: this.limiter });
    this.sessions.add(s);
    return s;
  }

  submit(input: SubmitInput): CommandStatus {
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
    this.clock.clearTimeout(this.pruneTimer);
    for (const s of this.sessions) s.close('host shutting down');
    this.commands.close();
    this.journal.close();
  }

  // ---- SessionHandler -------------------------------------------------------------

  credentials(dev: string) {
    const d = this.journal.device(dev);
    return d ? { secret: d.secret, boardId: d.board.id } : undefined;
  }

  online(s: Session): void {
    const previousBoot = this.devices.lastBoot(s.dev!);
    const old = this.devices.online(s);
    if (old && old !== s) old.close('replaced by a new connection from the same device');
    this.log.info({ evt: 'device_online', device_id: s.dev, boot: s.boot, fw: s.fw, remote: s.link.remote, previous_boot: previousBoot }, 'device online');
    this.commands.online(s, previousBoot);
    // Fill the state cache and take a first round-trip measurement.
    void this.devices.query(s.dev!, undefined, 2000);
  }

  offline(s: Session, reason: string): void {
    this.sessions.delete(s);
    if (s.authed && this.devices.offline(s)) this.log.info({ evt: 'device_offline', device_id: s.dev, boot: s.boot, reason }, 'device offline');
  }

  frame(s: Session, f: ToHostFrame): void {
    switch (f.t) {
      case 'ack':
        // Answer at once: this segment carries the TCP ACK the device's Nagle waits for before it sends
        // the `res` (or `prog`) that follows; a silent host would delay that ACK ~40 ms.
        s.send({ t: 'hb', ack: f.rid });
        return this.commands.ack(s, f);
      case 'prog':
        s.send({ t: 'hb', ack: f.rid });
        return this.commands.progress(s, f);
      case 'res':
        return this.commands.result(s, f);
      case 'state':
        return this.devices.answer(s.dev!, f);
      case 'hb':
      case 'err':
        return;
    }
  }
}
