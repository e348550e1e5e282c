// The device registry: who is online (from the session and its heartbeats), last seen,
// measured round-trip times, and a state cache that always carries its observation time.
import { EventEmitter } from 'node:events';
import type { BoardDef, DeviceState, StateFrame } from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import type { Journal } from './journal/journal.js';
import type { Session } from './session.js';
import { newRequestId } from './ids.js';
import { isoTime } from './iso.js';

/** Used until a round trip has been measured: a slow Wi-Fi link, not a LAN cable. */
const DEFAULT_RTT_MS = 200;
/** Never plan with less than this, whatever was measured. */
const MIN_RTT_MS = 20;
const RTT_SAMPLES = 16;

interface Live {
  session: Session | undefined;
  rtts: number[];
  state: DeviceState | null;
  stateAt: number | null;
  /** When someone last asked for the device's real state explicitly (get_device_status refresh). */
  refreshedAt: number | null;
  queries: Map<string, { sentAt: number; done: (f: StateFrame | null) => void; timer: TimerHandle }>;
  /** The board the online session authenticated with. */
  board?: BoardDef;
}

export interface DeviceView {
  device_id: string;
  online: boolean;
  board_id: string;
  board_name: string;
  boot_id: string | null;
  firmware: string | null;
  last_seen: string | null;
  last_seen_age_ms: number | null;
  rtt_max_ms: number;
  state: DeviceState | null;
  state_observed_at: string | null;
  state_age_ms: number | null;
  /** Frames refused on the current connection (bad MAC, counter or seal): by the host, and by the device per its last heartbeat. */
  refused_frames: { by_host: number; by_device: number } | null;
  /** What the device's interlocks did by themselves (max on-time auto-off, e-stop), newest first. */
  interlock_events: { at: string; boot_id: string; kind: string; ch: number | null; msg: string }[];
}

/** How many recent interlock events a device view carries. */
const VIEW_EVENTS = 10;

/** Emits 'change' (device id) when a device comes online, goes offline or reports its state. */
export class Devices extends EventEmitter {
  private live = new Map<string, Live>();

  constructor(
    private readonly journal: Journal,
    private readonly clock: Clock,
  ) {
    super();
    this.setMaxListeners(0);
  }

  private entry(dev: string): Live {
    let l = this.live.get(dev);
    if (!l) {
      l = { session: undefined, rtts: [], state: null, stateAt: null, refreshedAt: null, queries: new Map() };
      this.live.set(dev, l);
    }
    return l;
  }

  /** The device's board: while it is online, the one it authenticated with (no SELECT + JSON.parse per command). */
  board(dev: string): BoardDef | undefined {
    const l = this.live.get(dev);
    if (l?.session && l.board) return l.board;
    return this.journal.device(dev)?.board;
  }

  /** The device was (re-)provisioned: read its board from the journal again. */
  reprovisioned(dev: string): void {
    const l = this.live.get(dev);
    if (l) l.board = undefined;
  }

  session(dev: string): Session | undefined {
    return this.live.get(dev)?.session;
  }

  online(s: Session): Session | undefined {
    const l = this.entry(s.dev!);
    const previous = l.session;
    l.session = s;
    l.board = this.journal.device(s.dev!)?.board;
    this.journal.seen(s.dev!, s.boot!, this.clock.now());
    this.emit('change', s.dev!);
    return previous;
  }

  offline(s: Session): boolean {
    const l = this.live.get(s.dev!);
    if (!l || l.session !== s) return false;
    l.session = undefined;
    l.board = undefined;
    this.journal.seen(s.dev!, s.boot!, this.clock.now());
    for (const [q, w] of l.queries) {
      this.clock.clearTimeout(w.timer);
      l.queries.delete(q);
      w.done(null);
    }
    this.emit('change', s.dev!);
    return true;
  }

  lastBoot(dev: string): string | null {
    return this.journal.device(dev)?.last_boot ?? null;
  }

  /** Called after every new state observation (resources tell their subscribers). */
  onObserve: ((dev: string) => void) | undefined;

  observe(dev: string, state: DeviceState): void {
    const l = this.entry(dev);
    l.state = state;
    l.stateAt = this.clock.now();
    this.emit('change', dev);
    this.onObserve?.(dev);
  }

  markRefreshed(dev: string): void {
    this.entry(dev).refreshedAt = this.clock.now();
  }

  refreshedAt(dev: string): number | null {
    return this.live.get(dev)?.refreshedAt ?? null;
  }

  state(dev: string): DeviceState | null {
    return this.live.get(dev)?.state ?? null;
  }

  rtt(dev: string, ms: number): void {
    const l = this.entry(dev);
    l.rtts.push(ms);
    if (l.rtts.length > RTT_SAMPLES) l.rtts.shift();
  }

  rttMax(dev: string): number {
    const r = this.live.get(dev)?.rtts ?? [];
    return r.length === 0 ? DEFAULT_RTT_MS : Math.max(MIN_RTT_MS, ...r);
  }

  /** Ask the device for its state (and a command's status); null when offline or no answer within waitMs. */
  query(dev: string, rid: string | undefined, waitMs: number): Promise<StateFrame | null> {
    const l = this.live.get(dev);
    const s = l?.session;
    if (!l || !s) return Promise.resolve(null);
    const q = newRequestId();
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        l.queries.delete(q);
        resolve(null);
      }, waitMs);
      l.queries.set(q, { sentAt: this.clock.now(), done: resolve, timer });
      s.send(rid ? { t: 'q', q, rid } : { t: 'q', q });
    });
  }

  /** A state frame arrived: update the cache and answer the query that asked for it. */
  answer(dev: string, f: StateFrame): void {
    this.observe(dev, f.s);
    const l = this.live.get(dev);
    const w = l?.queries.get(f.q);
    if (!l || !w) return;
    l.queries.delete(f.q);
    this.clock.clearTimeout(w.timer);
    this.rtt(dev, this.clock.now() - w.sentAt);
    w.done(f);
  }

  view(dev: string): DeviceView | undefined {
    const rec = this.journal.device(dev);
    if (!rec) return undefined;
    const l = this.live.get(dev);
    const s = l?.session;
    const now = this.clock.now();
    const seen = s ? s.lastRx : rec.last_seen;
    return {
      device_id: dev,
      online: !!s,
      board_id: rec.board.id,
      board_name: rec.board.name,
      boot_id: s?.boot ?? rec.last_boot,
      firmware: s?.fw ?? null,
      last_seen: seen == null ? null : isoTime(seen),
      last_seen_age_ms: seen == null ? null : now - seen,
      rtt_max_ms: this.rttMax(dev),
      state: l?.state ?? null,
      state_observed_at: l?.stateAt == null ? null : isoTime(l.stateAt),
      state_age_ms: l?.stateAt == null ? null : now - l.stateAt,
      refused_frames: s ? { by_host: s.refusedFrames, by_device: s.refusedByDevice } : null,
      interlock_events: this.journal.deviceEvents(dev, VIEW_EVENTS).map((e) => ({
        at: isoTime(e.at), boot_id: e.boot_id, kind: e.kind, ch: e.ch, msg: e.msg,
      })),
    };
  }

  ids(): string[] {
    return this.journal.devices().map((d) => d.device_id);
  }
}
