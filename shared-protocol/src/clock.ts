// Time as the host core and the simulator see it (not the firmware, which has Espruino's own
// getTime): injectable so tests can run on a virtual clock and replay exactly.

export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch (real) or since the virtual clock's origin. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(h: TimerHandle | undefined): void;
}

interface RealHandle extends TimerHandle {
  t: ReturnType<typeof setTimeout>;
}

let realIds = 0;

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms): RealHandle {
    return { id: ++realIds, t: setTimeout(fn, ms) };
  },
  clearTimeout(h) {
    if (h) clearTimeout((h as RealHandle).t);
  },
};

/** Node's largest timer delay; larger ones fire after 1 ms. */
const TIMEOUT_MAX = 2147483647;

interface Pending {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told to. Timers due at the same instant fire in the order
 * they were set, so a run is deterministic.
 */
export class VirtualClock implements Clock {
  private t: number;
  private seq = 0;
  private nextId = 1;
  private pending: Pending[] = [];

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    // As Node's setTimeout: a delay above 2^31-1 ms (or NaN) becomes 1 ms, so virtual runs show what real ones do.
    if (!(ms <= TIMEOUT_MAX)) ms = 1;
    const p = { id: this.nextId++, at: this.t + Math.max(0, ms), seq: this.seq++, fn };
    this.pending.push(p);
    return { id: p.id };
  }

  clearTimeout(h: TimerHandle | undefined): void {
    if (!h) return;
    this.pending = this.pending.filter((p) => p.id !== h.id);
  }

  /** Move time forward by `ms`, firing every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: Pending | undefined;
      for (const p of this.pending) if (p.at <= end && (!next || p.at < next.at || (p.at === next.at && p.seq < next.seq))) next = p;
      if (!next) break;
      this.pending.splice(this.pending.indexOf(next), 1);
      this.t = next.at;
      next.fn();
    }
    this.t = end;
  }

  /** When the earliest waiting timer falls due (undefined when none waits). */
  get nextDue(): number | undefined {
    let at: number | undefined;
    for (const p of this.pending) if (at === undefined || p.at < at) at = p.at;
    return at;
  }

  /** Number of timers waiting. */
  get timers(): number {
    return this.pending.length;
  }
}
