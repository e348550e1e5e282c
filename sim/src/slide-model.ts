// One lead-screw axis of the rig: a step/dir driver (DRV8825: STEP, DIR, nENBL in; nFAULT out) turning
// a screw that moves a carriage, which drives a quadrature encoder and closes the home and limit switches.
//
// The carriage position is mechanical: it is kept in whole microsteps (true mm = steps / steps_per_mm),
// starts at 0 mm, and survives power cuts and reboots. Motion is integrated on a physics tick of the
// injected Clock while a step train runs into an enabled driver; every encoder edge the motion crosses
// is delivered to the pins one by one, stamped with the time of the step that caused it.
import type { StepperDef, SwitchDef } from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import { HARD_STOP_MM, type AxisFaultSpec } from './faults.js';
import type { Gpio, Level } from './gpio.js';
import type { Rng } from './prng.js';

/** Motion is integrated every this many ms of clock time while steps are being taken (no timer when idle). */
export const PHYSICS_TICK_MS = 2;
/** A switch at an end of travel is closed within this distance of travel.min_mm / travel.max_mm. */
export const SWITCH_BAND_MM = 0.05;
/** The driver asserts FAULT this long (seeded, uniform) after the motor stalls against a stop. */
export const STALL_FAULT_MIN_MS = 5;
export const STALL_FAULT_MAX_MS = 15;

/** What the rig reports about an axis: the physical truth, not what the firmware believes. */
export interface AxisState {
  /** True carriage position, mm. */
  pos: number;
  /** Net steps the driver accepted (+ towards +mm), lost ones included, since the rig was built. */
  steps: number;
  /** The driver is powered and its enable input is at the active level. */
  enabled: boolean;
  /** nFAULT is pulled to its active level. */
  faultAsserted: boolean;
  /** A step train (PWM) runs on STEP, whether or not the driver takes it. */
  stepping: boolean;
  /** Its rate, steps/s (0 when none). */
  stepHz: number;
  /** Home switch closed. */
  home: boolean;
  /** limit_max switch closed (false when the axis has none). */
  limit: boolean;
  /** Clock time (ms) this state was integrated to; up to PHYSICS_TICK_MS old while moving. */
  at: number;
}

export type MotionListener = (what: 'start' | 'stop', axis: string) => void;

const EPS = 1e-9;

function mod2(n: number): Level {
  return (((n % 2) + 2) % 2) as Level;
}

export class SlideModel {
  /** Carriage position in microsteps (the mechanical truth). */
  private p: number;
  private steps: number;
  private fault: AxisFaultSpec | null = null;
  /** Position limits in microsteps: the hard stops, narrowed by an obstruction. */
  private lo: number;
  private hi: number;
  private readonly hardLo: number;
  private readonly hardHi: number;
  /** missed_steps: percent accumulated; a step is lost each time it reaches 100. */
  private lossAcc = 0;

  /** Encoder: quarter-count index of the true position, and the levels shown on A and B. */
  private q: number;
  private shownA: Level;
  private shownB: Level;
  private homeClosed = false;
  private limitClosed = false;

  /** Driver inputs as last integrated: train rate (0 = none), direction, enabled. */
  private hz = 0;
  private dir: 1 | -1 = 1;
  private enabled = false;
  private asserted = false;
  /** Time of the first blocked step of the current stall, and when FAULT will assert. */
  private assertAt: number | undefined;
  /** The train's phase (in periods) is phase0 at t0; a rising edge (a step) at every integer phase. */
  private t0 = 0;
  private phase0 = 0;
  /** Integer phases already taken (steps delivered or ignored). */
  private done = 0;
  private lastT: number;
  private stepLevel: Level = 0;
  private tick: TimerHandle | undefined;
  private tickDue = 0;
  private readonly unsubscribe: () => void;
  private readonly spm: number;
  private readonly cpm: number;

  constructor(
    readonly def: StepperDef,
    private readonly gpio: Gpio,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly onMotion: MotionListener,
    /** Mechanics carried over from a previous model of the same axis (board reloaded). */
    carried?: { p: number; steps: number },
  ) {
    this.spm = def.steps_per_mm;
    this.cpm = def.encoder.counts_per_mm;
    this.hardLo = Math.ceil((def.travel.min_mm - HARD_STOP_MM) * this.spm - EPS);
    this.hardHi = Math.floor((def.travel.max_mm + HARD_STOP_MM) * this.spm + EPS);
    this.lo = this.hardLo;
    this.hi = this.hardHi;
    this.p = carried ? carried.p : Math.round(def.travel.min_mm * this.spm);
    this.steps = carried ? carried.steps : 0;
    this.q = this.quarterOf(this.p);
    this.shownA = this.levelA(this.q);
    this.shownB = this.levelB(this.q);
    this.homeClosed = this.homeNow();
    this.limitClosed = this.limitNow();
    this.lastT = clock.now();

    const d = def.driver;
    const enableInactive: Level = d.enable_active_low ? 1 : 0;
    // A resistor on the board holds nENBL at "disabled" while the MCU does not drive it (boot, power cut).
    gpio.attach(d.enable_pin, { pull: () => enableInactive });
    this.attachSwitch(d.fault, () => this.asserted);
    this.attachSwitch(def.home, () => this.homeClosed);
    if (def.limit_max) this.attachSwitch(def.limit_max, () => this.limitClosed);
    // Open-collector encoder outputs: they pull low, a resistor (external, or the MCU's own pull) makes high.
    const encPull = (): Level | undefined => (def.encoder.pull === 'external' ? 1 : undefined);
    gpio.attach(def.encoder.a_pin, { drive: () => (this.shownA === 0 ? 0 : undefined), pull: encPull });
    gpio.attach(def.encoder.b_pin, { drive: () => (this.shownB === 0 ? 0 : undefined), pull: encPull });

    this.unsubscribe = gpio.onRefresh((pin) => {
      if (pin === d.step_pin || pin === d.dir_pin || pin === d.enable_pin) this.inputsChanged();
    });
    this.inputsChanged();
  }

  get axis(): string {
    return this.def.axis;
  }

  /** The mechanics to carry over to a rebuilt model. */
  mechanics(): { p: number; steps: number } {
    return { p: this.p, steps: this.steps };
  }

  getFault(): AxisFaultSpec | null {
    return this.fault;
  }

  /** State as of the last integration (observing never moves the simulation on). */
  state(): AxisState {
    return {
      pos: this.p / this.spm,
      steps: this.steps,
      enabled: this.enabled,
      faultAsserted: this.asserted,
      stepping: this.hz > 0,
      stepHz: this.hz,
      home: this.homeClosed,
      limit: this.limitClosed,
      at: this.lastT,
    };
  }

  /** Inject a fault (replacing the previous one) or clear it with null. */
  setFault(spec: AxisFaultSpec | null): void {
    const now = this.clock.now();
    this.advanceTo(now);
    const before = this.fault;
    this.fault = spec;
    this.lo = this.hardLo;
    this.hi = this.hardHi;
    if (spec && spec.fault === 'stall') {
      // The carriage is on one side of the obstruction and stays there.
      if (this.p <= spec.mm * this.spm + EPS) this.hi = Math.min(this.hardHi, Math.floor(spec.mm * this.spm + EPS));
      else this.lo = Math.max(this.hardLo, Math.ceil(spec.mm * this.spm - EPS));
    }
    if (spec && spec.fault === 'missed_steps') this.lossAcc = this.rng() * 100;
    if (before && before.fault === 'encoder_dead' && !(spec && spec.fault === 'encoder_dead')) {
      // The encoder comes back showing where the carriage really is (A and B may jump together).
      this.show(this.levelA(this.q), this.levelB(this.q), now);
    }
    this.updateSwitches(now);
    this.schedule(now);
  }

  /**
   * Integrate the running train up to clock time t (ms; at most now): every step and encoder edge
   * before t is emitted. For an engine whose firmware must not read the encoder ahead of the physics
   * tick (the Espruino engine's barrier before a firmware timer).
   */
  catchUp(t: number): void {
    this.advanceTo(Math.min(t, this.clock.now()));
  }

  /** Stop for good: cancel the tick and unplug from the pins. */
  dispose(): void {
    if (this.tick !== undefined) this.clock.clearTimeout(this.tick);
    this.tick = undefined;
    this.unsubscribe();
    const d = this.def;
    const pins = [d.driver.enable_pin, d.driver.fault.pin, d.home.pin, d.encoder.a_pin, d.encoder.b_pin];
    if (d.limit_max) pins.push(d.limit_max.pin);
    for (const pin of pins) this.gpio.detach(pin);
  }

  // ---- driver inputs ---------------------------------------------------------------------------------

  /** STEP, DIR, enable or the power changed (or may have): integrate up to now, then take the new inputs. */
  private inputsChanged(): void {
    const now = this.clock.now();
    this.advanceTo(now);
    const d = this.def.driver;
    const g = this.gpio;
    const powered = g.isPowered;
    const enabled = powered && g.level(d.enable_pin) === (d.enable_active_low ? 0 : 1);
    const pwm = powered ? g.pwm(d.step_pin) : undefined;
    const mode = g.getMode(d.step_pin);
    const driving = mode === 'output' || mode === 'af_output';
    const hz = pwm && driving && pwm.duty > 0 && pwm.duty < 1 && pwm.freq > 0 ? pwm.freq : 0;
    const level = g.level(d.step_pin);
    // A rising edge on STEP outside a pulse train (digitalPulse, digitalWrite) is one step.
    const single = level === 1 && this.stepLevel === 0 && !pwm && this.hz === 0;
    this.stepLevel = level;

    const wasRunning = this.hz > 0;
    if (hz !== this.hz) {
      if (!wasRunning) {
        this.t0 = now; // the LEDC output rises at once: the first step is at the start
        this.phase0 = 0;
        this.done = 0;
      } else if (hz > 0) {
        this.phase0 = this.phase0 + ((now - this.t0) * this.hz) / 1000; // a rate change keeps the phase
        this.t0 = now;
      }
      this.hz = hz;
    }
    this.dir = g.level(d.dir_pin) === d.dir_positive_level ? 1 : -1;
    this.enabled = enabled;
    if (!enabled || hz === 0) {
      this.assertAt = undefined; // a stall needs steps pushing against the stop
      if (this.asserted) this.setAsserted(false, now);
    }
    if (single && this.gateOpen()) this.stepOnce(now);
    if (wasRunning !== hz > 0) this.onMotion(hz > 0 ? 'start' : 'stop', this.def.axis);
    this.schedule(now);
  }

  /** The driver turns steps into motion. */
  private gateOpen(): boolean {
    return this.enabled && !this.asserted;
  }

  // ---- integration -----------------------------------------------------------------------------------

  /** Take every step of the running train up to time t (ms), in order. */
  private advanceTo(t: number): void {
    if (t < this.lastT) t = this.lastT;
    if (this.hz > 0) {
      const total = Math.ceil(this.phase0 + ((t - this.t0) * this.hz) / 1000 - EPS);
      if (this.gateOpen()) {
        for (let n = this.done; n < total; n++) {
          let ts = this.t0 + ((n - this.phase0) * 1000) / this.hz;
          ts = Math.min(t, Math.max(this.lastT, ts));
          if (this.assertAt !== undefined && ts >= this.assertAt) {
            this.setAsserted(true, this.assertAt);
            break;
          }
          this.stepOnce(ts);
        }
      }
      if (total > this.done) this.done = total;
    }
    if (this.assertAt !== undefined && !this.asserted && t >= this.assertAt) this.setAsserted(true, this.assertAt);
    this.lastT = t;
  }

  /** One step accepted by the driver at time t. */
  private stepOnce(t: number): void {
    this.steps += this.dir;
    const f = this.fault;
    if (f && f.fault === 'missed_steps') {
      this.lossAcc += f.percent;
      if (this.lossAcc >= 100) {
        this.lossAcc -= 100;
        return;
      }
    }
    const next = this.p + this.dir;
    if (next < this.lo || next > this.hi) {
      // Against a stop: the rotor cannot follow. Only a running train stalls the driver into FAULT.
      if (this.assertAt === undefined && this.hz > 0) {
        this.assertAt = t + STALL_FAULT_MIN_MS + (STALL_FAULT_MAX_MS - STALL_FAULT_MIN_MS) * this.rng();
      }
      return;
    }
    this.assertAt = undefined;
    this.p = next;
    const q = this.quarterOf(next);
    while (this.q !== q) {
      this.q += q > this.q ? 1 : -1;
      if (!(this.fault && this.fault.fault === 'encoder_dead')) this.show(this.levelA(this.q), this.levelB(this.q), t);
    }
    this.updateSwitches(t);
  }

  private setAsserted(on: boolean, t: number): void {
    this.asserted = on;
    this.assertAt = undefined;
    this.gpio.refresh(this.def.driver.fault.pin, t);
  }

  private schedule(now: number): void {
    const needed = this.hz > 0 && this.gateOpen();
    if (!needed) {
      if (this.tick !== undefined) this.clock.clearTimeout(this.tick);
      this.tick = undefined;
      return;
    }
    const due = now + (this.assertAt !== undefined ? Math.max(0, Math.min(PHYSICS_TICK_MS, this.assertAt - now)) : PHYSICS_TICK_MS);
    if (this.tick !== undefined && this.tickDue <= due) return;
    if (this.tick !== undefined) this.clock.clearTimeout(this.tick);
    this.tickDue = due;
    this.tick = this.clock.setTimeout(() => {
      this.tick = undefined;
      const t = this.clock.now();
      this.advanceTo(t);
      this.schedule(t);
    }, due - now);
  }

  // ---- encoder and switches --------------------------------------------------------------------------

  /** floor(2 · x · counts_per_mm): A changes at whole counts, B half a count later (B lags A moving +). */
  private quarterOf(p: number): number {
    return Math.floor((2 * p * this.cpm) / this.spm + EPS);
  }

  /** A = floor(u) mod 2 with u = x · counts_per_mm. */
  private levelA(q: number): Level {
    return mod2(Math.floor(q / 2));
  }

  /** B = floor(u − 0.5) mod 2. */
  private levelB(q: number): Level {
    return mod2(Math.floor((q - 1) / 2));
  }

  /** Put levels on A and B as separate edges, A first. */
  private show(a: Level, b: Level, t: number): void {
    if (a !== this.shownA) {
      this.shownA = a;
      this.gpio.refresh(this.def.encoder.a_pin, t);
    }
    if (b !== this.shownB) {
      this.shownB = b;
      this.gpio.refresh(this.def.encoder.b_pin, t);
    }
  }

  private homeNow(): boolean {
    return this.p / this.spm <= this.def.travel.min_mm + SWITCH_BAND_MM + EPS;
  }

  private limitNow(): boolean {
    if (!this.def.limit_max) return false;
    if (this.fault && this.fault.fault === 'limit_stuck') return true;
    return this.p / this.spm >= this.def.travel.max_mm - SWITCH_BAND_MM - EPS;
  }

  private updateSwitches(t: number): void {
    const home = this.homeNow();
    if (home !== this.homeClosed) {
      this.homeClosed = home;
      this.gpio.refresh(this.def.home.pin, t);
    }
    const limit = this.limitNow();
    if (limit !== this.limitClosed && this.def.limit_max) {
      this.limitClosed = limit;
      this.gpio.refresh(this.def.limit_max.pin, t);
    }
  }

  /** A contact (or open-drain output) to its active level when closed; open, the board's pull shows. */
  private attachSwitch(sw: SwitchDef, closed: () => boolean): void {
    const active: Level = sw.active_low ? 0 : 1;
    const inactive: Level = sw.active_low ? 1 : 0;
    this.gpio.attach(sw.pin, {
      drive: () => (closed() ? active : undefined),
      // 'external' is a resistor on the board; 'up'/'down' are the MCU's own pulls, for the firmware to switch on.
      pull: () => (sw.pull === 'external' ? inactive : undefined),
    });
  }
}
