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
  fn: (() => void) | undefined;
}

/** Earlier due time first; same instant: the one set first. */
const before = (a: Pending, b: Pending): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/**
 * A clock that moves only when told to. Timers due at the same instant fire in the order
 * they were set, so a run is deterministic. The timers wait in a binary heap (a chaos run keeps
 * hundreds waiting and fires tens of thousands); a cleared one is emptied and skipped when it surfaces.
 */
export class VirtualClock implements Clock {
  private t: number;
  private seq = 0;
  private nextId = 1;
  private heap: Pending[] = [];
  private live = new Map<number, Pending>();

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
    this.live.set(p.id, p);
    this.push(p);
    return { id: p.id };
  }

  clearTimeout(h: TimerHandle | undefined): void {
    if (!h) return;
    const p = this.live.get(h.id);
    if (!p) return;
    this.live.delete(h.id);
    p.fn = undefined;
  }

  /** Move time forward by `ms`, firing every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const next = this.peek();
      if (!next || next.at > end) break;
      this.pop();
      this.live.delete(next.id);
      const fn = next.fn!;
      next.fn = undefined;
      this.t = next.at;
      fn();
    }
    this.t = end;
  }

  /** When the earliest waiting timer falls due (undefined when none waits). */
  get nextDue(): number | undefined {
    return this.peek()?.at;
  }

  /** Number of timers waiting. */
  get timers(): number {
    return this.live.size;
  }

  /** The earliest live timer (cleared ones on top are dropped on the way). */
  private peek(): Pending | undefined {
    while (this.heap.length && this.heap[0].fn === undefined) this.pop();
    return this.heap[0];
  }

  private push(p: Pending): void {
    const h = this.heap;
    let i = h.push(p) - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (!before(p, h[up])) break;
      h[i] = h[up];
      i = up;
    }
    h[i] = p;
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const c = l + 1 < h.length && before(h[l + 1], h[l]) ? l + 1 : l;
      if (!before(h[c], last)) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = last;
  }
}
