// One power-on session of the simulated chip: its generation number, timers, internal tasks and the
// single gate every callback into the firmware passes through (so nothing of a dead boot ever runs).
import vm from 'node:vm';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import { uncaughtLines } from './format.js';
import { BootTimers, type TimerHost } from './timers.js';

export interface BootDeps {
  /** 1 for the first boot, then 2, 3, ... */
  gen: number;
  clock: Clock;
  /** True while `gen` is still the rig's current boot. */
  isCurrent: (gen: number) => boolean;
  /** Console output of this boot (may contain newlines). */
  print: (text: string) => void;
  /** File name the firmware is evaluated under (for stack traces). */
  scriptName: string;
}

export class Boot implements TimerHost {
  readonly gen: number;
  readonly clock: Clock;
  readonly timers: BootTimers;
  readonly scriptName: string;
  /** The firmware's vm context, set by the context builder. */
  context: vm.Context | undefined;
  /** Offered an uncaught exception first (process.on('uncaughtException')); true when it took it. */
  uncaughtHandler: ((e: unknown) => boolean) | undefined;
  private alive = true;
  private nextTask = 1;
  private tasks = new Map<number, TimerHandle>();
  private hooks: (() => void)[] = [];
  private readonly deps: BootDeps;

  constructor(deps: BootDeps) {
    this.deps = deps;
    this.gen = deps.gen;
    this.clock = deps.clock;
    this.scriptName = deps.scriptName;
    this.timers = new BootTimers(deps.clock, this);
  }

  /** The generation check: alive and still the rig's current boot. */
  get live(): boolean {
    return this.alive && this.deps.isCurrent(this.gen);
  }

  print(text: string): void {
    if (this.live) this.deps.print(text);
  }

  /** Enter the firmware. Nothing happens for a dead boot; an exception becomes "Uncaught ...". */
  call(fn: Function, thisArg: unknown, args: unknown[]): unknown {
    if (!this.live) return undefined;
    const t0 = performance.now();
    try {
      return Reflect.apply(fn, thisArg, args);
    } catch (e) {
      this.uncaught(e);
      return undefined;
    } finally {
      this.stalled(t0);
    }
  }

  /**
   * E.enableWatchdog in auto mode: Espruino kicks it from its idle loop, so one entry into the
   * firmware running longer than this (wall time: a virtual clock stands still inside a callback)
   * is a stalled main loop, and the chip resets. undefined: no auto watchdog.
   */
  stallLimitMs: number | undefined;
  onStall: ((ms: number) => void) | undefined;

  private stalled(t0: number): void {
    if (this.stallLimitMs === undefined || !this.live) return;
    const ms = performance.now() - t0;
    if (ms > this.stallLimitMs) this.onStall?.(Math.round(ms));
  }

  /** Evaluate firmware source text in this boot's global scope (setTimeout("code"), the firmware file). */
  evalString(code: string, filename?: string): void {
    if (!this.live || !this.context) return;
    const t0 = performance.now();
    try {
      new vm.Script(code, { filename: filename ?? 'eval' }).runInContext(this.context);
    } catch (e) {
      this.uncaught(e);
    } finally {
      this.stalled(t0);
    }
  }

  uncaught(e: unknown): void {
    if (!this.live) return;
    if (this.uncaughtHandler) {
      try {
        if (this.uncaughtHandler(e)) return;
      } catch (e2) {
        e = e2;
      }
    }
    this.print(uncaughtLines(e, this.scriptName).join('\n'));
  }

  /** Schedule internal work (event delivery, simulated latency) that dies with this boot. */
  defer(fn: () => void, ms = 0): void {
    if (!this.live) return;
    const id = this.nextTask++;
    const h = this.clock.setTimeout(() => {
      this.tasks.delete(id);
      if (this.live) fn();
    }, Math.max(0, ms));
    this.tasks.set(id, h);
  }

  /** Wrap a host function exposed to the firmware: a no-op returning undefined once the boot is dead. */
  guard<A extends unknown[], R>(f: (this: unknown, ...args: A) => R): (...args: A) => R | undefined {
    const boot = this;
    return function (this: unknown, ...args: A): R | undefined {
      if (!boot.live) return undefined;
      return f.apply(this, args);
    };
  }

  onKill(fn: () => void): void {
    if (this.alive) this.hooks.push(fn);
    else fn();
  }

  get isAlive(): boolean {
    return this.alive;
  }

  /** The chip stops: every timer, task, watch, socket and callback of this boot is dropped. Idempotent. */
  kill(): void {
    if (!this.alive) return;
    this.alive = false;
    this.timers.clearAll();
    for (const h of this.tasks.values()) this.clock.clearTimeout(h);
    this.tasks.clear();
    const hooks = this.hooks;
    this.hooks = [];
    for (const h of hooks) {
      try {
        h();
      } catch {
        // teardown must complete whatever one part does
      }
    }
    this.context = undefined;
    this.uncaughtHandler = undefined;
  }
}
