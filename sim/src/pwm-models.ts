// The rig's PWM outputs: fans whose rotor follows the duty on their PWM pin with inertia (a
// first-order lag whose settling, five time constants, is the board's spin_up_ms) towards the
// speed of the board's curve, and whose tachometer pulls its input low pulses_per_rev times per
// revolution (a square wave: every edge at its own time, as the encoder's are); and hobby servos
// that turn towards the angle of their pulse width at deg_per_s and report nothing. Both engines
// reach them through the pins: analogWrite on the vm (context.ts) and in the Espruino shim.
// Fan faults: stalled (the rotor is blocked: no turning, no pulses), unplugged (the fan turns but
// its tach wire is off: the input sits at its pull-up), tach_noise (a glitch after about every
// second pulse on the tach line: an extra falling edge the firmware counts).
import type { BoardDef, FanDef, ServoDef } from '@proofrig/protocol';
import { PWM } from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import type { Gpio, Level } from './gpio.js';
import type { Rng } from './prng.js';

export type FanFault = 'stalled' | 'unplugged' | 'tach_noise';
export const FAN_FAULTS: readonly FanFault[] = ['stalled', 'unplugged', 'tach_noise'];

/** Integration step of the fan's rotor, ms. */
const FAN_TICK_MS = 10;
/** A fan without a tachometer settles in this long (nothing measures it; the state shows it), ms. */
const UNTACHED_SPIN_UP_MS = 2000;
/** Full speed of a fan without a curve, rpm (only shown in its state). */
const UNTACHED_RPM = 3000;
/** A coasting rotor stops below this speed (bearing friction), rpm. */
const FRICTION_RPM = 60;
/** A glitch on the tach line lasts this long, ms. */
const GLITCH_MS = 0.05;

/** The physical truth of a fan. */
export interface FanTruth {
  rpm: number;
  /** Duty on its PWM pin, % (0 without a signal). */
  duty: number;
  /** Tach pulses (falling edges) its rotor made since the rig was built. */
  pulses: number;
  fault: FanFault | null;
}

/** The physical truth of a servo: where the horn is, where its pulse sends it. */
export interface ServoTruth {
  deg: number;
  /** The angle of the pulse it receives; null while it gets none. */
  target: number | null;
  moving: boolean;
}

class FanModel {
  rpm = 0;
  duty = 0;
  pulses = 0;
  fault: FanFault | null = null;
  private target = 0;
  private halves = 0;
  private shown: Level = 1;
  private lastT: number;
  private tick: TimerHandle | undefined;
  private readonly tau: number;

  constructor(
    readonly def: FanDef,
    private readonly gpio: Gpio,
    private readonly clock: Clock,
    private readonly rng: Rng,
  ) {
    this.lastT = clock.now();
    this.tau = (def.tach ? def.tach.spin_up_ms : UNTACHED_SPIN_UP_MS) / 5;
    const t = def.tach;
    if (t) gpio.attach(t.pin, { drive: () => (this.fault !== 'unplugged' && this.shown === 0 ? 0 : undefined), pull: () => (t.pull === 'external' ? 1 : undefined) });
  }

  /** The PWM pin (or power) changed: integrate up to now, then aim at the new duty's speed. */
  inputs(): void {
    const now = this.clock.now();
    this.advanceTo(now);
    const g = this.gpio;
    const pwm = g.isPowered ? g.pwm(this.def.pin) : undefined;
    this.duty = pwm ? Math.round(pwm.duty * 1000) / 10 : 0;
    const t = this.def.tach;
    const want = t ? PWM.fanRpm(t, this.duty) : (this.duty / 100) * UNTACHED_RPM;
    this.target = Math.max(0, want);
    this.schedule();
  }

  setFault(f: FanFault | null): void {
    this.advanceTo(this.clock.now());
    this.fault = f;
    if (f === 'stalled') this.rpm = 0;
    this.schedule();
  }

  catchUp(t: number): void {
    this.advanceTo(Math.min(t, this.clock.now()));
  }

  dispose(): void {
    if (this.tick !== undefined) this.clock.clearTimeout(this.tick);
    this.tick = undefined;
    if (this.def.tach) this.gpio.detach(this.def.tach.pin);
  }

  private schedule(): void {
    if (this.tick !== undefined || (this.rpm === 0 && this.target === 0)) return;
    this.tick = this.clock.setTimeout(() => {
      this.tick = undefined;
      this.advanceTo(this.clock.now());
      this.schedule();
    }, FAN_TICK_MS);
  }

  /** The rotor from lastT to t in steps of at most FAN_TICK_MS; every tach edge at its own time. */
  private advanceTo(t: number): void {
    while (this.lastT < t) {
      const t0 = this.lastT;
      const t1 = Math.min(t, t0 + FAN_TICK_MS);
      const r0 = this.rpm;
      let r1 = this.fault === 'stalled' ? 0 : this.target + (r0 - this.target) * Math.exp(-(t1 - t0) / this.tau);
      if (this.target === 0 && r1 < FRICTION_RPM) r1 = 0;
      this.rpm = r1;
      this.lastT = t1;
      const ppr = this.def.tach ? this.def.tach.pulses_per_rev : 2;
      const h0 = this.halves;
      const h1 = h0 + (((r0 + r1) / 2) * ppr * 2 * (t1 - t0)) / 60000;
      this.halves = h1;
      for (let k = Math.floor(h0) + 1; k <= h1; k++) this.edge(t0 + ((k - h0) / (h1 - h0)) * (t1 - t0));
    }
  }

  /** Half a tach period passed at time at: the open collector lets go or pulls low. */
  private edge(at: number): void {
    this.shown = this.shown === 1 ? 0 : 1;
    if (this.shown === 0) this.pulses++;
    if (!this.def.tach) return;
    this.gpio.refresh(this.def.tach.pin, at);
    if (this.fault === 'tach_noise' && this.shown === 0 && this.rng() < 0.5) {
      // Ringing after the fall: up and down again within a few tens of µs.
      this.shown = 1;
      this.gpio.refresh(this.def.tach.pin, at + GLITCH_MS / 2);
      this.shown = 0;
      this.gpio.refresh(this.def.tach.pin, at + GLITCH_MS);
    }
  }
}

class ServoModel {
  private from: number;
  private t0: number;
  target: number | null = null;

  constructor(
    readonly def: ServoDef,
    private readonly gpio: Gpio,
    private readonly clock: Clock,
    deg: number | undefined,
  ) {
    this.from = deg ?? (def.angle_deg.min + def.angle_deg.max) / 2;
    this.t0 = clock.now();
  }

  /** The pulse changed: the horn heads for the angle of its width from where it is now. */
  inputs(): void {
    const now = this.clock.now();
    this.from = this.deg(now);
    this.t0 = now;
    const g = this.gpio;
    const pwm = g.isPowered ? g.pwm(this.def.pin) : undefined;
    if (!pwm || pwm.duty <= 0 || pwm.freq <= 0) return void (this.target = null);
    const us = (pwm.duty * 1e6) / pwm.freq;
    const d = this.def;
    const lo = PWM.pulseUs(d, d.angle_deg.min);
    const hi = PWM.pulseUs(d, d.angle_deg.max);
    const clamped = Math.max(Math.min(lo, hi), Math.min(Math.max(lo, hi), us));
    this.target = d.angle_deg.min + ((clamped - lo) * (d.angle_deg.max - d.angle_deg.min)) / (hi - lo);
  }

  deg(now: number): number {
    if (this.target === null) return this.from;
    const step = (this.def.deg_per_s * (now - this.t0)) / 1000;
    const d = this.target - this.from;
    return Math.abs(d) <= step ? this.target : this.from + Math.sign(d) * step;
  }
}

/** Every PWM output of a board: its fans and servos, their faults, wired to the pins. */
export class PwmModels {
  private readonly fans = new Map<string, FanModel>();
  private readonly servos = new Map<string, ServoModel>();
  private readonly byPin = new Map<number, FanModel | ServoModel>();
  private readonly unsubscribe: () => void;

  constructor(
    board: BoardDef,
    gpio: Gpio,
    private readonly clock: Clock,
    rng: Rng,
    carried?: { faults: Map<string, FanFault>; angles: Map<string, number> },
  ) {
    for (const d of board.pwm ?? []) {
      if (d.kind === 'fan') {
        const m = new FanModel(d, gpio, clock, rng);
        const f = carried?.faults.get(d.id);
        if (f) m.setFault(f);
        this.fans.set(d.id, m);
        this.byPin.set(d.pin, m);
      } else {
        const m = new ServoModel(d, gpio, clock, carried?.angles.get(d.id));
        this.servos.set(d.id, m);
        this.byPin.set(d.pin, m);
      }
    }
    this.unsubscribe = gpio.onRefresh((pin) => this.byPin.get(pin)?.inputs());
    for (const m of this.byPin.values()) m.inputs();
  }

  /** Inject (or clear, with null) a fault on fan `id`. */
  setFault(id: string, fault: FanFault | null): void {
    const m = this.fans.get(id);
    if (!m) throw new Error(`no fan "${id}" on this rig; fans: ${[...this.fans.keys()].join(', ') || 'none'}`);
    if (fault !== null && FAN_FAULTS.indexOf(fault) < 0) throw new Error(`unknown fan fault "${String(fault)}"; faults: ${FAN_FAULTS.join(', ')}`);
    m.setFault(fault);
  }

  fan(id: string): FanTruth {
    const m = this.fans.get(id);
    if (!m) throw new Error(`fan("${id}"): no such fan on this rig; fans: ${[...this.fans.keys()].join(', ') || 'none'}`);
    m.catchUp(this.clock.now());
    return { rpm: Math.round(m.rpm), duty: m.duty, pulses: m.pulses, fault: m.fault };
  }

  servo(id: string): ServoTruth {
    const m = this.servos.get(id);
    if (!m) throw new Error(`servo("${id}"): no such servo on this rig; servos: ${[...this.servos.keys()].join(', ') || 'none'}`);
    const deg = m.deg(this.clock.now());
    return { deg, target: m.target, moving: m.target !== null && deg !== m.target };
  }

  /** Integrate every fan up to clock time t (the Espruino engine's barrier before a firmware timer). */
  catchUp(t: number): void {
    for (const m of this.fans.values()) m.catchUp(t);
  }

  /** Fan faults and servo angles, to carry over when the board is read again. */
  carry(): { faults: Map<string, FanFault>; angles: Map<string, number> } {
    const faults = new Map<string, FanFault>();
    for (const [id, m] of this.fans) if (m.fault) faults.set(id, m.fault);
    const angles = new Map<string, number>();
    for (const [id, m] of this.servos) angles.set(id, m.deg(this.clock.now()));
    return { faults, angles };
  }

  dispose(): void {
    this.unsubscribe();
    for (const m of this.fans.values()) m.dispose();
  }
}
