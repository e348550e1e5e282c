// PWM outputs (the ESP32's LEDC, driven with Espruino's analogWrite): a fan whose speed is proven
// by its tachometer (action fan.set), and a hobby servo that has no feedback (action servo.set, which
// can only end unverified). The firmware bundles this file: ES5-compatible code only. The rules the
// firmware uses are members of one object, PWM, not top-level functions: on Espruino every name at
// the bundle's top level makes each lookup of the names after it slower (its scopes are lists
// searched in order), and ten more of them cost a relay command measurably (docs/pwm.md). What only
// the host uses (pwmByName, fanWorstMs) stays outside it, so the bundle leaves it out.
import type { BoardDef, Gpio, Ms } from './board.js';
import { echo } from './check.js';

/** One point of a fan's speed curve: at this duty the fan turns at this speed. */
export interface FanCurvePoint {
  /**
   * Duty, percent.
   * @minimum 1
   * @maximum 100
   */
  duty: number;
  /**
   * Expected speed at that duty, rpm.
   * @exclusiveMinimum 0
   */
  rpm: number;
}

/** A fan's tachometer (the yellow wire of a 3- or 4-wire fan: open collector, pulled up on the board). */
export interface FanTachDef {
  /** The input it is wired to; input-only GPIO 34-39 are fine (with an external pull-up). */
  pin: Gpio;
  pull: 'up' | 'down' | 'external';
  /**
   * Tach pulses per revolution (2 on almost every PC fan).
   * @asType integer
   * @minimum 1
   * @maximum 8
   */
  pulses_per_rev: number;
  /** Expected speed by duty, ascending duty (at least 2 points; linear between them). Below the first duty the fan is not expected to run. */
  curve: FanCurvePoint[];
  /**
   * A measured speed within this many percent of the curve's is `completed`.
   * @minimum 1
   * @maximum 50
   */
  tolerance_pct: number;
  /** Time from a duty change until the speed has settled (also covers spinning down to a stop), ms. */
  spin_up_ms: Ms;
  /** The tach pulses are counted over this window after spin_up_ms, ms (default 500). */
  measure_ms?: Ms;
}

interface PwmBase {
  /**
   * Short id the firmware reports it under, e.g. "fan" or "vent".
   * @pattern ^[a-z][a-z0-9_]{0,15}$
   */
  id: string;
  /** What it drives, in the words people use ("exhaust fan"); tools accept it for the id. */
  label?: string;
  /** An output-capable GPIO (not 34-39, not 6-11, not the DAC pins 25/26). */
  pin: Gpio;
  /**
   * PWM frequency, Hz (a 4-wire fan: 25000; a hobby servo: 50).
   * @minimum 1
   * @maximum 40000000
   */
  freq_hz: number;
  /**
   * LEDC duty resolution, bits (Espruino's ESP32 port uses 10). freq_hz x 2^bits must not exceed the 80 MHz LEDC clock.
   * @asType integer
   * @minimum 1
   * @maximum 20
   */
  resolution_bits?: number;
}

/** A PWM fan (4-wire: 25 kHz PWM input), proven by its tachometer when it has one. */
export interface FanDef extends PwmBase {
  kind: 'fan';
  /** Without a tachometer nothing observes the fan: fan.set ends `unverified`. */
  tach?: FanTachDef;
}

/** A hobby servo: 50 Hz, the pulse width sets the angle; nothing reports where it is. */
export interface ServoDef extends PwmBase {
  kind: 'servo';
  /** Pulse width at angle_deg.min and at angle_deg.max, µs (typically 1000..2000 or 500..2500). */
  pulse_us: { min: number; max: number };
  /** The angles it may be set to, degrees. */
  angle_deg: { min: number; max: number };
  /** How fast it turns (the datasheet's 0.15 s / 60° is 400 °/s; under load slower), °/s. */
  deg_per_s: number;
}

export type PwmDef = FanDef | ServoDef;

export interface FanSetArgs {
  id: string;
  /** Duty 0..100 %; 0 stops the fan. */
  duty: number;
}

export interface ServoSetArgs {
  id: string;
  deg: number;
}

/** The LEDC's source clock on the ESP32 (APB), Hz: frequency x 2^resolution must fit in it. */
export const LEDC_CLOCK_HZ = 80000000;
/** Espruino's ESP32 port drives LEDC at this duty resolution. */
export const ESPRUINO_LEDC_BITS = 10;

function list(board: BoardDef, kind: string): string {
  const s = board.pwm || [];
  const o: string[] = [];
  for (let i = 0; i < s.length; i++) if (s[i].kind === kind) o.push(s[i].id);
  return o.length ? o.join(', ') : 'none';
}

export const PWM = {
  /** Tach measurement window when the board gives none, ms. */
  defaultMeasureMs: 500,
  /** A fan counts as stopped below this fraction of its curve's lowest speed. */
  stoppedFraction: 0.1,

  find(board: BoardDef, id: string): PwmDef | undefined {
    const s = board.pwm || [];
    for (let i = 0; i < s.length; i++) if (s[i].id === id) return s[i];
    return undefined;
  },

  /** The speed a fan is expected to turn at a duty, rpm: 0 at duty 0, linear between curve points; -1 below the curve (not expected to run). */
  fanRpm(t: FanTachDef, duty: number): number {
    const c = t.curve;
    if (duty === 0) return 0;
    if (duty < c[0].duty) return -1;
    for (let i = 1; i < c.length; i++)
      if (duty <= c[i].duty) return c[i - 1].rpm + ((c[i].rpm - c[i - 1].rpm) * (duty - c[i - 1].duty)) / (c[i].duty - c[i - 1].duty);
    return c[c.length - 1].rpm;
  },

  /** Below this measured speed a fan counts as stopped, rpm. */
  stoppedRpm(t: FanTachDef): number {
    return t.curve[0].rpm * PWM.stoppedFraction;
  },

  /** The tach's counting window, ms. */
  windowMs(t: FanTachDef): number {
    return t.measure_ms || PWM.defaultMeasureMs;
  },

  /** Time a servo needs to turn from `from` (null: unknown, so the whole range) to `to`, ms. */
  moveMs(s: ServoDef, from: number | null, to: number): number {
    const d = from === null ? s.angle_deg.max - s.angle_deg.min : Math.abs(to - from);
    return Math.ceil((d / s.deg_per_s) * 1000);
  },

  /** The pulse width for an angle, µs (linear between the board's ends). */
  pulseUs(s: ServoDef, deg: number): number {
    return s.pulse_us.min + ((s.pulse_us.max - s.pulse_us.min) * (deg - s.angle_deg.min)) / (s.angle_deg.max - s.angle_deg.min);
  },

  /** null when the arguments name a fan of this board and a duty it can run at, else the INVALID_ARGS reason. */
  checkFan(p: Record<string, unknown>, board: BoardDef): string | null {
    if (typeof p.id !== 'string') return 'id must be a string (fans: ' + list(board, 'fan') + ')';
    const f = PWM.find(board, p.id);
    if (!f || f.kind !== 'fan') return 'fan ' + echo(p.id) + ' does not exist on ' + board.id + '; fans: ' + list(board, 'fan');
    const d = p.duty;
    if (typeof d !== 'number' || !(d >= 0 && d <= 100)) return 'duty must be a number 0..100 (percent; 0 stops the fan), got ' + echo(d);
    if (f.tach && PWM.fanRpm(f.tach, d) < 0)
      return 'duty ' + d + ' % is below ' + f.tach.curve[0].duty + ' %, the lowest duty ' + f.id + ' is known to run at (its curve); use 0 to stop it or at least ' + f.tach.curve[0].duty;
    return null;
  },

  /** null when the arguments name a servo of this board and an angle inside its range, else the INVALID_ARGS reason. */
  checkServo(p: Record<string, unknown>, board: BoardDef): string | null {
    if (typeof p.id !== 'string') return 'id must be a string (servos: ' + list(board, 'servo') + ')';
    const s = PWM.find(board, p.id);
    if (!s || s.kind !== 'servo') return 'servo ' + echo(p.id) + ' does not exist on ' + board.id + '; servos: ' + list(board, 'servo');
    const d = p.deg;
    if (typeof d !== 'number' || !(d >= s.angle_deg.min && d <= s.angle_deg.max))
      return 'deg must be a number ' + s.angle_deg.min + '..' + s.angle_deg.max + ' (the angle range of ' + s.id + '), got ' + echo(d);
    return null;
  },
};

/** A PWM output of one kind by id or label (case-insensitive); undefined when none matches. */
export function pwmByName(board: BoardDef, kind: 'fan' | 'servo', key: string): PwmDef | undefined {
  const k = key.trim().toLowerCase();
  const s = board.pwm || [];
  for (let i = 0; i < s.length; i++)
    if (s[i].kind === kind && (s[i].id === k || (s[i].label !== undefined && s[i].label!.toLowerCase() === k))) return s[i];
  return undefined;
}

/** Worst case of a fan.set on the device, ms: spin-up (or down), then the measurement window. */
export function fanWorstMs(f: FanDef): number {
  return f.tach ? f.tach.spin_up_ms + PWM.windowMs(f.tach) : 0;
}
