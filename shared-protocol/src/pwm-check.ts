// `board check` of the board's PWM outputs (pwm.ts): fans and servos on the ESP32's LEDC, with the
// chip's own limits: an output-capable pin (not the input-only 34-39, not the flash pins 6-11, not
// the DAC pins where Espruino's analogWrite makes a voltage), the LEDC clock (frequency x 2^bits
// <= 80 MHz) and its channels; a fan's tachometer on a pin setWatch can watch, with a speed curve
// and a measurement window long enough to count pulses at its lowest speed. Called by checkBoard.
import { echo } from './check.js';
import { MAX_LABEL_LENGTH } from './constants.js';
import { ESPRUINO_LEDC_BITS, LEDC_CLOCK_HZ, PWM } from './pwm.js';
import { isInt, isMs, isNum, isObj } from './check.js';

/** GPIOs an ESP32 (WROOM/WROVER module) can use at all (as in board-check.ts). */
const GPIO = [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 25, 26, 27, 32, 33, 34, 35, 36, 39];
const INPUT_ONLY = [34, 35, 36, 39];
/** GPIOs Espruino's ESP32 port can setWatch (as in board-check.ts). */
const WATCHABLE = [0, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 25, 26, 27, 34, 35, 36, 37, 38, 39];
const DAC = [25, 26];
/** LEDC channels of one speed mode; every stepper's step train takes one too. */
export const MAX_PWM_CHANNELS = 8;
/** Fewest tach pulses a measurement window must see at the curve's lowest speed. */
export const MIN_WINDOW_PULSES = 4;

type Claim = (pin: number, what: string) => void;
type Obj = Record<string, unknown>;

/** A PWM time in ms: more than 0, at most 10 minutes. */
function isPosMs(x: unknown): x is number {
  return isMs(x) && x > 0;
}

/** Check b.pwm, pushing errors; `steppers` is how many step trains already take LEDC channels. */
export function checkPwm(b: Obj, steppers: number, errors: string[], claim: Claim): void {
  if (b.pwm === undefined) return;
  if (!Array.isArray(b.pwm)) return void errors.push('pwm: must be an array of fans and servos');
  if (b.pwm.length + steppers > MAX_PWM_CHANNELS)
    errors.push(`pwm: ${b.pwm.length} PWM outputs${steppers ? ` and ${steppers} stepper step trains` : ''} need more than the ${MAX_PWM_CHANNELS} LEDC channels of the ESP32`);
  const ids: string[] = [];
  const labels: string[] = [];
  b.pwm.forEach((raw: unknown, i: number) => {
    const at = `pwm[${i}]`;
    if (!isObj(raw)) return errors.push(`${at}: must be an object with a kind ("fan" or "servo")`);
    const p = raw;
    if (typeof p.id !== 'string' || !/^[a-z][a-z0-9_]{0,15}$/.test(p.id)) errors.push(`${at}.id: must be a short lowercase id like "fan" (a-z, 0-9, "_", up to 16)`);
    else if (ids.indexOf(p.id) >= 0) errors.push(`${at}.id: "${p.id}" is defined twice among the PWM outputs`);
    else ids.push(p.id);
    if (p.label !== undefined) {
      if (typeof p.label !== 'string' || p.label.trim().length === 0 || p.label.length > MAX_LABEL_LENGTH)
        errors.push(`${at}.label: must be a name of 1-${MAX_LABEL_LENGTH} characters, e.g. "exhaust fan"`);
      else if (labels.indexOf(p.label.trim().toLowerCase()) >= 0) errors.push(`${at}.label: label "${p.label}" is used twice among the PWM outputs`);
      else labels.push(p.label.trim().toLowerCase());
    }
    if (!isInt(p.pin) || GPIO.indexOf(p.pin) < 0) errors.push(`${at}.pin: GPIO${echo(p.pin)} is not a usable ESP32 GPIO (6-11 drive the flash chip)`);
    else if (INPUT_ONLY.indexOf(p.pin) >= 0) errors.push(`${at}.pin: GPIO${p.pin} is input-only and cannot drive a PWM output`);
    else if (DAC.indexOf(p.pin) >= 0) errors.push(`${at}.pin: GPIO${p.pin} is a DAC pin where Espruino's analogWrite makes a voltage, not a PWM signal; use another output`);
    else claim(p.pin, `${at}.pin`);
    checkLedc(p, at, errors);
    if (p.kind === 'fan') checkFan(p, at, errors, claim);
    else if (p.kind === 'servo') checkServo(p, at, errors);
    else errors.push(`${at}.kind: must be "fan" or "servo"`);
  });
}

/** The LEDC divides its 80 MHz clock into 2^bits steps per period: frequency x 2^bits must fit. */
function checkLedc(p: Obj, at: string, errors: string[]): void {
  const bits = p.resolution_bits === undefined ? ESPRUINO_LEDC_BITS : p.resolution_bits;
  if (!isInt(bits) || bits < 1 || bits > ESPRUINO_LEDC_BITS)
    return void errors.push(`${at}.resolution_bits: must be a whole number 1..${ESPRUINO_LEDC_BITS} (Espruino's ESP32 port drives the LEDC at ${ESPRUINO_LEDC_BITS} bits), or absent for ${ESPRUINO_LEDC_BITS}`);
  if (!isNum(p.freq_hz) || p.freq_hz <= 0) return void errors.push(`${at}.freq_hz: must be a frequency in Hz (a 4-wire fan 25000, a servo 50)`);
  if (p.freq_hz * Math.pow(2, bits) > LEDC_CLOCK_HZ)
    errors.push(`${at}.freq_hz: ${p.freq_hz} Hz x 2^${bits} (resolution_bits) = ${p.freq_hz * Math.pow(2, bits)} exceeds the LEDC's 80 MHz clock; at ${bits} bits the highest frequency is ${Math.floor(LEDC_CLOCK_HZ / Math.pow(2, bits))} Hz`);
}

function checkFan(p: Obj, at: string, errors: string[], claim: Claim): void {
  if (isNum(p.freq_hz) && (p.freq_hz < 21000 || p.freq_hz > 28000))
    errors.push(`${at}.freq_hz: a 4-wire fan's PWM input expects 21000..28000 Hz (25000 nominal), not ${p.freq_hz}`);
  if (p.tach === undefined) return;
  const t = p.tach;
  const ta = `${at}.tach`;
  if (!isObj(t)) return void errors.push(`${ta}: must be {pin, pull, pulses_per_rev, curve, tolerance_pct, spin_up_ms}`);
  if (!isInt(t.pin) || GPIO.indexOf(t.pin) < 0) errors.push(`${ta}.pin: GPIO${echo(t.pin)} is not a usable ESP32 GPIO`);
  else if (WATCHABLE.indexOf(t.pin) < 0) errors.push(`${ta}.pin: Espruino cannot setWatch GPIO${t.pin} on the ESP32, so its pulses cannot be counted; use one of ${WATCHABLE.join(', ')}`);
  else claim(t.pin, `${ta}.pin`);
  if (t.pull !== 'up' && t.pull !== 'down' && t.pull !== 'external') errors.push(`${ta}.pull: must be "up", "down" or "external" (a tach output is open collector: it needs a pull-up)`);
  else if (t.pull !== 'external' && isInt(t.pin) && INPUT_ONLY.indexOf(t.pin) >= 0)
    errors.push(`${ta}.pull: GPIO${t.pin} has no internal pull resistor; wire a pull-up to 3.3 V and say "external"`);
  if (!isInt(t.pulses_per_rev) || t.pulses_per_rev < 1 || t.pulses_per_rev > 8) errors.push(`${ta}.pulses_per_rev: must be a whole number 1..8 (2 on almost every PC fan)`);
  if (!isNum(t.tolerance_pct) || t.tolerance_pct < 1 || t.tolerance_pct > 50) errors.push(`${ta}.tolerance_pct: must be a percentage 1..50 (how far the measured speed may be from the curve's)`);
  if (!isPosMs(t.spin_up_ms)) errors.push(`${ta}.spin_up_ms: must be a number of ms (1..600000): the time the speed needs to settle after a duty change`);
  const measure = t.measure_ms === undefined ? PWM.defaultMeasureMs : t.measure_ms;
  if (!isPosMs(measure)) errors.push(`${ta}.measure_ms: must be a number of ms (1..600000), or absent for ${PWM.defaultMeasureMs}`);
  const c = t.curve;
  if (!Array.isArray(c) || c.length < 2 || c.length > 8) return void errors.push(`${ta}.curve: must list 2..8 points {duty, rpm} in ascending duty`);
  for (let k = 0; k < c.length; k++) {
    const pt: unknown = c[k];
    const prev: unknown = k > 0 ? c[k - 1] : undefined;
    if (!isObj(pt) || !isNum(pt.duty) || pt.duty < 1 || pt.duty > 100 || !isNum(pt.rpm) || pt.rpm <= 0)
      return void errors.push(`${ta}.curve[${k}]: must be {duty: 1..100, rpm: above 0}`);
    if (isObj(prev) && isNum(prev.duty) && isNum(prev.rpm) && (pt.duty <= prev.duty || pt.rpm < prev.rpm))
      return void errors.push(`${ta}.curve[${k}]: duty must rise (${prev.duty} then ${pt.duty}) and rpm must not fall (${prev.rpm} then ${pt.rpm})`);
  }
  const low = c[0] as { duty: number; rpm: number };
  if (isInt(t.pulses_per_rev) && isPosMs(measure) && (low.rpm * t.pulses_per_rev * measure) / 60000 < MIN_WINDOW_PULSES)
    errors.push(
      `${ta}.measure_ms: at the curve's lowest ${low.rpm} rpm a ${measure} ms window sees ${((low.rpm * t.pulses_per_rev * measure) / 60000).toFixed(1)} tach pulses; ` +
        `it needs at least ${MIN_WINDOW_PULSES}, so make it ${Math.ceil((MIN_WINDOW_PULSES * 60000) / (low.rpm * t.pulses_per_rev))} ms or more`,
    );
}

function checkServo(p: Obj, at: string, errors: string[]): void {
  if (isNum(p.freq_hz) && (p.freq_hz < 40 || p.freq_hz > 400)) errors.push(`${at}.freq_hz: a hobby servo takes 40..400 Hz (50 for an analog one), not ${p.freq_hz}`);
  const u = p.pulse_us;
  if (!isObj(u) || !isNum(u.min) || !isNum(u.max) || !(u.max > u.min) || u.min < 400 || u.max > 2600)
    errors.push(`${at}.pulse_us: must be {min, max} µs with 400 <= min < max <= 2600 (typically 1000..2000 or 500..2500)`);
  else if (isNum(p.freq_hz) && p.freq_hz > 0 && u.max >= 1e6 / p.freq_hz)
    errors.push(`${at}.pulse_us.max: a ${u.max} µs pulse does not fit in the ${Math.round(1e6 / p.freq_hz)} µs period of ${p.freq_hz} Hz`);
  const a = p.angle_deg;
  if (!isObj(a) || !isNum(a.min) || !isNum(a.max) || !(a.max > a.min) || a.min < -360 || a.max > 360)
    errors.push(`${at}.angle_deg: must be {min, max} degrees with min < max (e.g. {"min": 0, "max": 180})`);
  if (!isNum(p.deg_per_s) || p.deg_per_s <= 0 || p.deg_per_s > 5000)
    errors.push(`${at}.deg_per_s: must be the servo's speed in °/s, above 0 (a datasheet's 0.15 s/60° is 400)`);
}
