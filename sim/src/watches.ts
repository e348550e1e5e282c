// Espruino's setWatch/clearWatch for one boot: pin edges from the rig delivered as {state, time, lastTime}
// (plus `data`, the level of the options' `data` pin sampled at the edge, when one was given).
//
// As in Espruino (src/jswrap_io.c): ids count up from 1, options are {repeat, edge, debounce, data} or a
// boolean `repeat`, edge defaults to 'both', a non-repeating watch removes itself when it fires,
// clearWatch() clears all, clearWatch(undefined) throws, an unknown id throws "Unknown Watch".
// Callbacks run later from the event loop, never inside the code that caused the edge.
import type { TimerHandle } from '@proofrig/protocol/clock';
import { FLASH_PINS, type Gpio, type Level } from './gpio.js';
import type { Realm } from './realm.js';

interface Watch {
  id: number;
  pin: number;
  fn: Function | string;
  repeat: boolean;
  /** 1 rising, -1 falling, 0 both */
  edge: number;
  debounceMs: number;
  /** Pin sampled at each edge (options.data), reported as e.data. */
  dataPin: number | undefined;
  /** Last level reported (debounced watches) */
  state: Level;
  /** Time (s) of the last change seen on the pin */
  lastTime: number;
  debounceTimer: TimerHandle | undefined;
}

export class BootWatches {
  private nextId = 1;
  private watches = new Map<number, Watch>();
  private unsubscribe: () => void;

  constructor(
    private readonly realm: Realm,
    private readonly gpio: Gpio,
    /** Firmware time (getTime() seconds) of a clock time in ms, or of now. */
    private readonly seconds: (atMs?: number) => number,
    private readonly warn: (line: string) => void,
  ) {
    this.unsubscribe = gpio.onChange((pin, level, atMs) => this.changed(pin, level, atMs));
    realm.boot.onKill(() => this.kill());
  }

  /** `dataPin`: options.data already resolved to a pin by the caller (undefined: none or invalid). */
  set(fn: unknown, pin: number, options: unknown, dataPin?: number): number | undefined {
    if (FLASH_PINS.indexOf(pin) >= 0) {
      this.warn('WARNING: Unable to set watch. GPIO6..11 drive the flash chip and cannot be watched');
      return undefined;
    }
    let repeat = false;
    let debounce = 0;
    let edge = 0;
    if (typeof options === 'object' && options !== null) {
      const o = options as { repeat?: unknown; debounce?: unknown; edge?: unknown };
      repeat = !!o.repeat;
      debounce = Number(o.debounce);
      if (!(debounce > 0)) debounce = 0;
      if (o.edge === undefined) edge = 0;
      else if (o.edge === 'rising' || o.edge === 1) edge = 1;
      else if (o.edge === 'falling' || o.edge === -1) edge = -1;
      else if (o.edge === 'both' || o.edge === 0) edge = 0;
      else
        throw this.realm.err("'edge' in setWatch should be a string - either 'rising', 'falling' or 'both'", 'TypeError');
    } else {
      repeat = !!options;
    }
    if (typeof fn !== 'function' && typeof fn !== 'string') throw this.realm.err('Function or String not supplied!');
    this.gpio.forceWatchInput(pin);
    const id = this.nextId++;
    this.watches.set(id, {
      id,
      pin,
      fn,
      repeat,
      edge,
      debounceMs: debounce,
      dataPin,
      state: this.gpio.level(pin),
      lastTime: this.seconds(),
      debounceTimer: undefined,
    });
    return id;
  }

  clear(args: unknown[]): void {
    if (args.length === 0) {
      for (const w of this.watches.values()) this.stopDebounce(w);
      this.watches.clear();
      return;
    }
    const id = args[0];
    if (id === undefined) throw this.realm.err('clearWatch(undefined) not allowed. Use clearWatch() instead.');
    const w = this.watches.get(Number(id));
    if (!w) throw this.realm.err(`Unknown Watch ${String(id)}`);
    this.stopDebounce(w);
    this.watches.delete(w.id);
  }

  get size(): number {
    return this.watches.size;
  }

  private changed(pin: number, level: Level, atMs?: number): void {
    if (!this.realm.boot.live) return;
    const now = this.seconds(atMs);
    for (const w of [...this.watches.values()]) {
      if (w.pin !== pin) continue;
      // The IRQ samples the data pin at the edge (a quadrature encoder's B when A changes).
      const data = w.dataPin === undefined ? undefined : this.gpio.level(w.dataPin) === 1;
      if (w.debounceMs > 0) {
        this.stopDebounce(w);
        const clock = this.realm.boot.clock;
        w.debounceTimer = clock.setTimeout(() => {
          w.debounceTimer = undefined;
          if (!this.realm.boot.live || this.watches.get(w.id) !== w) return;
          const settled = this.gpio.level(pin);
          if (settled === w.state) return; // bounced back
          w.state = settled;
          this.report(w, settled, now, data);
        }, w.debounceMs);
      } else {
        w.state = level;
        this.report(w, level, now, data);
      }
    }
  }

  private report(w: Watch, level: Level, time: number, data: boolean | undefined): void {
    const lastTime = w.lastTime;
    w.lastTime = time;
    if ((w.edge === 1 && level !== 1) || (w.edge === -1 && level !== 0)) return;
    if (!w.repeat) this.watches.delete(w.id);
    const realm = this.realm;
    const boot = realm.boot;
    boot.defer(() => {
      if (typeof w.fn === 'string') boot.evalString(w.fn);
      else {
        const e = data === undefined ? { state: level === 1, time, lastTime } : { state: level === 1, time, lastTime, data };
        boot.call(w.fn, undefined, [realm.obj(e)]);
      }
    });
  }

  private stopDebounce(w: Watch): void {
    if (w.debounceTimer !== undefined) this.realm.boot.clock.clearTimeout(w.debounceTimer);
    w.debounceTimer = undefined;
  }

  private kill(): void {
    this.unsubscribe();
    for (const w of this.watches.values()) this.stopDebounce(w);
    this.watches.clear();
  }
}
