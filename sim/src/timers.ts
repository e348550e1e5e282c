// Espruino's setTimeout/setInterval for one boot, scheduled on the injected Clock.
import { realClock, type Clock, type TimerHandle } from '@proofrig/protocol/clock';

/** Shortest interval the simulator repeats at (keeps a 0 ms interval from freezing a virtual clock). */
export const MIN_INTERVAL_MS = 1;

/**
 * On the real clock a timer is armed this many ms early and its last stretch waited turn by turn
 * (setImmediate): Node's timers count whole ms and fire up to ~1 ms late, while Espruino's ESP32
 * build (FreeRTOS at 100 Hz; jshSleep sleeps only whole ticks) busy-waits any wait shorter than a
 * 10 ms tick and runs a timer when it is due, to well under a ms. A 2 ms relay settle then takes
 * 2 ms here too, not 2-3, and setTimeout(f, 0) runs at the next turn, not after 1 ms.
 */
export const SPIN_MS = 2;

/** What the timers need from the boot that owns them. */
export interface TimerHost {
  /** False once the boot is dead (power loss, reboot, shutdown). */
  readonly live: boolean;
  /** Run a firmware callback; exceptions are reported as "Uncaught ..." and swallowed. */
  call(fn: Function, thisArg: unknown, args: unknown[]): unknown;
  /** Evaluate a string of firmware code in the boot's global scope. */
  evalString(code: string): void;
}

interface Entry {
  id: number;
  fn: Function | string;
  args: unknown[];
  /** ms between calls for an interval, undefined for a timeout. */
  interval: number | undefined;
  /** When this entry is due, in ms of now() (the clock's, or performance.now()'s sub-ms on the real clock). */
  due: number;
  handle: TimerHandle | undefined;
  /** The turn-by-turn wait of the last SPIN_MS (the real clock). */
  imm: NodeJS.Immediate | undefined;
}

export class BootTimers {
  private nextId = 1;
  private live = new Map<number, Entry>();
  private readonly precise: boolean;

  constructor(
    private readonly clock: Clock,
    private readonly host: TimerHost,
  ) {
    this.precise = clock === realClock;
  }

  /** Number of timeouts and intervals pending. */
  get size(): number {
    return this.live.size;
  }

  /** What the pending timers hold (callbacks and their arguments): roots of the firmware's memory. */
  held(): unknown[] {
    const out: unknown[] = [];
    for (const e of this.live.values()) out.push(e.fn, ...e.args);
    return out;
  }

  add(fn: Function | string, ms: number, args: unknown[], repeat: boolean): number {
    let delay = Number(ms);
    if (!(delay >= 0)) delay = 0; // NaN, negative, undefined
    const id = this.nextId++;
    const interval = repeat ? Math.max(MIN_INTERVAL_MS, delay) : undefined;
    const wait = interval ?? delay;
    const e: Entry = { id, fn, args, interval, due: this.now() + wait, handle: undefined, imm: undefined };
    this.live.set(id, e);
    this.arm(e);
    return id;
  }

  /** Remove one timer. Returns false if there was none with that id (Espruino then stays silent). */
  clear(id: unknown): boolean {
    const e = this.live.get(Number(id));
    if (!e) return false;
    this.live.delete(e.id);
    this.disarm(e);
    return true;
  }

  /** Espruino's changeInterval: new period, next call one period from now. */
  change(id: unknown, ms: number): boolean {
    const e = this.live.get(Number(id));
    if (!e) return false;
    let p = Number(ms);
    if (!(p >= 0)) p = 0;
    if (e.interval !== undefined) e.interval = Math.max(MIN_INTERVAL_MS, p);
    e.due = this.now() + (e.interval ?? p);
    this.disarm(e);
    this.arm(e);
    return true;
  }

  clearAll(): void {
    for (const e of this.live.values()) this.disarm(e);
    this.live.clear();
  }

  /** The time timers are due in: the clock's ms, or on the real clock performance.now()'s sub-ms ones. */
  private now(): number {
    return this.precise ? performance.now() : this.clock.now();
  }

  private disarm(e: Entry): void {
    this.clock.clearTimeout(e.handle);
    e.handle = undefined;
    if (e.imm) clearImmediate(e.imm);
    e.imm = undefined;
  }

  /** Schedule e's next call; `later` (from a timer of its own) lets a due entry fire now rather than next turn. */
  private arm(e: Entry, later = false): void {
    if (!this.precise) {
      e.handle = this.clock.setTimeout(() => this.fire(e), Math.max(0, e.due - this.now()));
      return;
    }
    const left = e.due - this.now();
    if (left > SPIN_MS) {
      e.handle = this.clock.setTimeout(() => {
        e.handle = undefined;
        this.arm(e, true);
      }, left - SPIN_MS);
    } else if (left <= 0 && later) this.fire(e);
    else
      e.imm = setImmediate(() => {
        e.imm = undefined;
        this.arm(e, true);
      });
  }

  private fire(e: Entry): void {
    if (!this.host.live || this.live.get(e.id) !== e) return;
    if (e.interval !== undefined) {
      e.due += e.interval;
      this.arm(e);
    } else {
      this.live.delete(e.id);
    }
    if (typeof e.fn === 'string') this.host.evalString(e.fn);
    else this.host.call(e.fn, undefined, e.args);
  }
}
