// Espruino's setTimeout/setInterval for one boot, scheduled on the injected Clock.
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';

/** Shortest interval the simulator repeats at (keeps a 0 ms interval from freezing a virtual clock). */
export const MIN_INTERVAL_MS = 1;

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
  /** Clock time (ms) this entry is due. */
  due: number;
  handle: TimerHandle | undefined;
}

export class BootTimers {
  private nextId = 1;
  private live = new Map<number, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly host: TimerHost,
  ) {}

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
    const e: Entry = { id, fn, args, interval, due: this.clock.now() + (interval ?? delay), handle: undefined };
    this.live.set(id, e);
    this.arm(e);
    return id;
  }

  /** Remove one timer. Returns false if there was none with that id (Espruino then stays silent). */
  clear(id: unknown): boolean {
    const e = this.live.get(Number(id));
    if (!e) return false;
    this.live.delete(e.id);
    this.clock.clearTimeout(e.handle);
    return true;
  }

  /** Espruino's changeInterval: new period, next call one period from now. */
  change(id: unknown, ms: number): boolean {
    const e = this.live.get(Number(id));
    if (!e) return false;
    let p = Number(ms);
    if (!(p >= 0)) p = 0;
    if (e.interval !== undefined) e.interval = Math.max(MIN_INTERVAL_MS, p);
    e.due = this.clock.now() + (e.interval ?? p);
    this.clock.clearTimeout(e.handle);
    this.arm(e);
    return true;
  }

  clearAll(): void {
    for (const e of this.live.values()) this.clock.clearTimeout(e.handle);
    this.live.clear();
  }

  private arm(e: Entry): void {
    e.handle = this.clock.setTimeout(() => this.fire(e), Math.max(0, e.due - this.clock.now()));
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
