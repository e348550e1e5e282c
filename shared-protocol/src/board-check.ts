// Full validation of a board definition, for the host and the tools (the firmware trusts the
// config the uploader wrote, which passed this check).
import type { BoardDef } from './board.js';
import { echo, isInt, isMs, isObj } from './check.js';
import { MAX_LABEL_LENGTH } from './constants.js';
import { checkSensors } from './sensor-check.js';
import { checkLoadFeedback } from './load-current.js';
import { checkPwm } from './pwm-check.js';
import { MAX_WIRE_BITS, relaySnapshotPins } from './relay-wire.js';

/** GPIOs an ESP32 (WROOM/WROVER module) can use at all. 6–11 drive the flash chip. */
const ESP32_GPIO = [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 25, 26, 27, 32, 33, 34, 35, 36, 39];
/** Input-only GPIOs: no output driver and no internal pull resistors. */
const ESP32_INPUT_ONLY = [34, 35, 36, 39];
/** GPIOs Espruino's ESP32 port can setWatch (targets/esp32/jshardware.c); elsewhere it only warns. */
const ESP32_WATCHABLE = [0, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 25, 26, 27, 34, 35, 36, 37, 38, 39];
/** Espruino's analogWrite drives the DAC on these, not LEDC PWM: no step pulses. */
const ESP32_DAC = [25, 26];
/** Pins sampled at reset (strapping) or used by the serial console: usable, but wiring can stop the board booting or flashing. */
const ESP32_BOOT_PINS: Record<string, string> = {
  '0': 'GPIO0 is a strapping pin: held low at reset the ESP32 enters its ROM bootloader instead of running Espruino',
  '1': 'GPIO1 is UART0 TX: the Espruino console and flashing use it',
  '2': 'GPIO2 is a strapping pin: it must be low or floating at reset for serial flashing to work',
  '3': 'GPIO3 is UART0 RX: the Espruino console and flashing use it',
  '5': 'GPIO5 is a strapping pin (SDIO timing): a level forced at reset can change how the chip boots',
  '12': 'GPIO12 is a strapping pin (MTDI): held high at reset it selects 1.8 V flash and a WROOM-32 does not boot; relay modules and pull-ups often hold it high',
  '15': 'GPIO15 is a strapping pin (MTDO): held low at reset it silences the boot log and changes SDIO timing',
};


/** `warnings` are legal but risky wiring (strapping pins); `errors` make the board unusable. */
export type BoardCheck = { ok: true; board: BoardDef; warnings: string[] } | { ok: false; errors: string[]; warnings: string[] };

export function checkBoard(raw: unknown): BoardCheck {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (!isObj(raw)) return { ok: false, errors: ['board: must be a JSON object'], warnings };
  // "$schema" is for editors only; it never reaches a device.
  const b: Record<string, unknown> = {};
  for (const k in raw) if (k !== '$schema') b[k] = raw[k];
  if (typeof b.id !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,31}$/.test(b.id))
    errors.push('id: must be 1-32 chars of a-z, 0-9, "_" or "-"');
  if (typeof b.name !== 'string' || b.name.length === 0) errors.push('name: must be a non-empty string');
  if (b.mcu !== 'esp32') errors.push('mcu: only "esp32" is supported');
  if (typeof b.module !== 'string') errors.push('module: must name the dev board');
  if (b.area !== undefined && (typeof b.area !== 'string' || b.area.trim().length === 0 || b.area.length > MAX_LABEL_LENGTH))
    errors.push(`area: must be a place of 1-${MAX_LABEL_LENGTH} characters, e.g. "lab bench"`);
  if (!isMs(b.device_processing_max_ms)) errors.push('device_processing_max_ms: must be a number of ms (0..600000)');
  if (!Array.isArray(b.relays)) errors.push('relays: must be an array (may be empty)');
  const used: Record<string, string> = {};
  const claim = (pin: number, what: string) => {
    const prev = used[String(pin)];
    if (prev !== undefined) errors.push(`${what}: GPIO${pin} is already used by ${prev}`);
    else if (ESP32_BOOT_PINS[String(pin)]) warnings.push(`${what}: ${ESP32_BOOT_PINS[String(pin)]}`);
    used[String(pin)] = what;
  };
  const chans: number[] = [];
  const relayLabels: string[] = [];
  if (Array.isArray(b.relays)) {
    b.relays.forEach((r: unknown, i: number) => {
      const at = `relays[${i}]`;
      if (!isObj(r)) return errors.push(`${at}: must be an object`);
      if (!isInt(r.ch) || r.ch < 1 || r.ch > 64) errors.push(`${at}.ch: must be an integer 1..64`);
      else if (chans.indexOf(r.ch) >= 0) errors.push(`${at}.ch: channel ${r.ch} is defined twice`);
      else chans.push(r.ch);
      if (typeof r.name !== 'string') errors.push(`${at}.name: must be a string`);
      else checkDeviceText(r.name, `${at}.name`, errors);
      checkLabel(r.label, `${at}.label`, relayLabels, errors);
      if (!isInt(r.pin) || ESP32_GPIO.indexOf(r.pin) < 0) errors.push(`${at}.pin: GPIO${echo(r.pin)} is not a usable ESP32 GPIO`);
      else if (ESP32_INPUT_ONLY.indexOf(r.pin) >= 0) errors.push(`${at}.pin: GPIO${r.pin} is input-only and cannot drive a relay`);
      else claim(r.pin, `${at}.pin`);
      if (typeof r.active_low !== 'boolean') errors.push(`${at}.active_low: must be true or false`);
      for (const k of ['operate_ms', 'release_ms', 'settle_ms']) if (!isMs(r[k])) errors.push(`${at}.${k}: must be a number of ms`);
      if (r.max_on_ms !== undefined && (!isMs(r.max_on_ms) || r.max_on_ms <= 0 || (isMs(r.settle_ms) && r.max_on_ms <= r.settle_ms)))
        errors.push(`${at}.max_on_ms: must be a number of ms (1..600000) above settle_ms, or absent for no limit`);
      if (r.min_off_ms !== undefined && (!isMs(r.min_off_ms) || r.min_off_ms <= 0))
        errors.push(`${at}.min_off_ms: must be a number of ms (1..600000), or absent for no minimum off-time`);
      const fb = r.feedback;
      if (!isObj(fb)) return errors.push(`${at}.feedback: must be an object with a kind`);
      if (fb.kind === 'aux_contact') {
        if (!isInt(fb.pin) || ESP32_GPIO.indexOf(fb.pin) < 0) errors.push(`${at}.feedback.pin: GPIO${echo(fb.pin)} is not a usable ESP32 GPIO`);
        else claim(fb.pin, `${at}.feedback.pin`);
        if (typeof fb.active_low !== 'boolean') errors.push(`${at}.feedback.active_low: must be true or false`);
        if (fb.pull !== 'up' && fb.pull !== 'down' && fb.pull !== 'external')
          errors.push(`${at}.feedback.pull: must be "up", "down" or "external"`);
        else if (fb.pull !== 'external' && isInt(fb.pin) && ESP32_INPUT_ONLY.indexOf(fb.pin) >= 0)
          errors.push(`${at}.feedback.pull: GPIO${fb.pin} has no internal pull resistor; wire one and say "external"`);
        if (isMs(r.settle_ms) && isMs(r.operate_ms) && isMs(r.release_ms) && r.settle_ms < Math.max(r.operate_ms, r.release_ms))
          errors.push(`${at}.settle_ms: must cover the worst of operate_ms and release_ms`);
      } else if (fb.kind !== 'pin_readback' && fb.kind !== 'none' && fb.kind !== 'load_current') {
        errors.push(`${at}.feedback.kind: must be "aux_contact", "pin_readback", "load_current" or "none"`);
      }
    });
  }
  if (Array.isArray(b.relays) && b.relays.every((r) => isObj(r) && isObj(r.feedback))) {
    // A snapshot carries the relays and their read-back pins as 31-bit masks (relay-wire.ts).
    const pins = relaySnapshotPins(b as unknown as Pick<BoardDef, 'relays'>).length;
    if (b.relays.length > MAX_WIRE_BITS || pins > MAX_WIRE_BITS)
      errors.push(`relays: ${b.relays.length} relays with ${pins} read-back pins and aux contacts; a state snapshot carries at most ${MAX_WIRE_BITS} of each`);
  }
  if (b.steppers !== undefined) {
    if (!Array.isArray(b.steppers)) errors.push('steppers: must be an array');
    else {
      const axes: string[] = [];
      const axisLabels: string[] = [];
      b.steppers.forEach((st: unknown, i: number) => {
        checkStepper(st, `steppers[${i}]`, axes, errors, claim);
        if (isObj(st)) checkLabel(st.label, `steppers[${i}].label`, axisLabels, errors);
      });
    }
  }
  if (b.estop !== undefined) checkInput(b.estop, 'estop', errors, claim);
  if (b.watchdog_s !== undefined && (!isInt(b.watchdog_s) || b.watchdog_s < 1 || b.watchdog_s > 60))
    errors.push('watchdog_s: must be a whole number of seconds 1..60 (the ESP32 rounds to seconds), or absent for 5');
  checkSensors(b, chans, errors, claim);
  checkLoadFeedback(b, errors);
  checkPwm(b, Array.isArray(b.steppers) ? b.steppers.length : 0, errors, claim);
  if (errors.length > 0) return { ok: false, errors, warnings };
  return { ok: true, board: b as unknown as BoardDef, warnings };
}

/**
 * A relay's or axis's name is text the firmware itself puts in its results and messages. Printable
 * ASCII only: other text takes the firmware's slow text path (its UTF-8 code runs per character in
 * JavaScript, far slower than the native string functions; an ESP32 build
 * has no Unicode strings either). Labels and the board's own name never reach the firmware's text
 * (only the host shows them), so they may use any characters.
 */
function checkDeviceText(s: string, at: string, errors: string[]): void {
  if (/[^\x20-\x7e]/.test(s))
    errors.push(`${at}: "${s}" must be printable ASCII (the firmware sends this name in its messages; other characters take its slow text path, see docs/performance.md); keep any other spelling in the label`);
}

/** Optional label: 1-40 chars, not a bare number (that would read as a channel), unique on the board. */
function checkLabel(label: unknown, at: string, seen: string[], errors: string[]): void {
  if (label === undefined) return;
  if (typeof label !== 'string' || label.trim().length === 0 || label.length > MAX_LABEL_LENGTH) return void errors.push(`${at}: must be a name of 1-${MAX_LABEL_LENGTH} characters, e.g. "bench lamp"`);
  if (/^\d+$/.test(label.trim())) return void errors.push(`${at}: must not be a bare number ("${label}" would read as a channel number)`);
  const k = label.trim().toLowerCase();
  if (seen.indexOf(k) >= 0) return void errors.push(`${at}: label "${label}" is used twice on this board`);
  seen.push(k);
}

function isPos(x: unknown): x is number {
  return typeof x === 'number' && isFinite(x) && x > 0;
}

/** An input the firmware reads; `watched` when it must interrupt (setWatch), not just be polled. */
function checkInput(sw: unknown, at: string, errors: string[], claim: (pin: number, what: string) => void, watched = true): void {
  if (!isObj(sw)) return void errors.push(`${at}: must be an object with pin, active_low, pull`);
  if (!isInt(sw.pin) || ESP32_GPIO.indexOf(sw.pin) < 0) errors.push(`${at}.pin: GPIO${echo(sw.pin)} is not a usable ESP32 GPIO`);
  else if (watched && ESP32_WATCHABLE.indexOf(sw.pin) < 0)
    errors.push(`${at}.pin: Espruino cannot setWatch GPIO${sw.pin} on the ESP32; use one of ${ESP32_WATCHABLE.join(', ')}`);
  else claim(sw.pin, `${at}.pin`);
  if (sw.active_low !== undefined && typeof sw.active_low !== 'boolean') errors.push(`${at}.active_low: must be true or false`);
  if (sw.pull !== 'up' && sw.pull !== 'down' && sw.pull !== 'external') errors.push(`${at}.pull: must be "up", "down" or "external"`);
  else if (sw.pull !== 'external' && isInt(sw.pin) && ESP32_INPUT_ONLY.indexOf(sw.pin) >= 0)
    errors.push(`${at}.pull: GPIO${sw.pin} has no internal pull resistor; wire one and say "external"`);
}

function checkOutput(pin: unknown, at: string, errors: string[], claim: (pin: number, what: string) => void): void {
  if (!isInt(pin) || ESP32_GPIO.indexOf(pin) < 0) errors.push(`${at}: GPIO${echo(pin)} is not a usable ESP32 GPIO`);
  else if (ESP32_INPUT_ONLY.indexOf(pin) >= 0) errors.push(`${at}: GPIO${pin} is input-only and cannot be an output`);
  else claim(pin, at);
}

function checkStepper(raw: unknown, at: string, axes: string[], errors: string[], claim: (pin: number, what: string) => void): void {
  if (!isObj(raw)) return void errors.push(`${at}: must be an object`);
  const s = raw;
  if (typeof s.axis !== 'string' || !/^[a-z][a-z0-9_]{0,15}$/.test(s.axis)) errors.push(`${at}.axis: must be a short lowercase name like "x"`);
  else if (axes.indexOf(s.axis) >= 0) errors.push(`${at}.axis: axis "${s.axis}" is defined twice`);
  else axes.push(s.axis);
  if (typeof s.name !== 'string') errors.push(`${at}.name: must be a string`);
  else checkDeviceText(s.name, `${at}.name`, errors);
  const d = s.driver;
  if (!isObj(d)) errors.push(`${at}.driver: must be an object`);
  else {
    if (typeof d.part !== 'string') errors.push(`${at}.driver.part: must name the driver chip`);
    checkOutput(d.step_pin, `${at}.driver.step_pin`, errors, claim);
    if (isInt(d.step_pin) && ESP32_DAC.indexOf(d.step_pin) >= 0)
      errors.push(`${at}.driver.step_pin: GPIO${d.step_pin} is a DAC pin where Espruino's analogWrite makes a voltage, not step pulses`);
    checkOutput(d.dir_pin, `${at}.driver.dir_pin`, errors, claim);
    checkOutput(d.enable_pin, `${at}.driver.enable_pin`, errors, claim);
    if (d.dir_positive_level !== 0 && d.dir_positive_level !== 1) errors.push(`${at}.driver.dir_positive_level: must be 0 or 1`);
    if (typeof d.enable_active_low !== 'boolean') errors.push(`${at}.driver.enable_active_low: must be true or false`);
    checkInput(d.fault, `${at}.driver.fault`, errors, claim);
    for (const k of ['min_pulse_us', 'dir_setup_us', 'max_step_hz']) if (!isPos(d[k])) errors.push(`${at}.driver.${k}: must be a positive number`);
  }
  const e = s.encoder;
  if (!isObj(e)) errors.push(`${at}.encoder: must be an object`);
  else {
    checkInput({ pin: e.a_pin, pull: e.pull }, `${at}.encoder.a`, errors, claim);
    checkInput({ pin: e.b_pin, pull: e.pull }, `${at}.encoder.b`, errors, claim, false);
    if (!isPos(e.counts_per_mm)) errors.push(`${at}.encoder.counts_per_mm: must be a positive number`);
  }
  checkInput(s.home, `${at}.home`, errors, claim);
  if (s.limit_max !== undefined) checkInput(s.limit_max, `${at}.limit_max`, errors, claim);
  const t = s.travel;
  if (!isObj(t) || typeof t.min_mm !== 'number' || typeof t.max_mm !== 'number' || !(t.max_mm > t.min_mm))
    errors.push(`${at}.travel: must be {min_mm, max_mm} with max_mm > min_mm`);
  const sl = s.soft_limits;
  if (sl !== undefined) {
    if (!isObj(sl) || typeof sl.min_mm !== 'number' || typeof sl.max_mm !== 'number' || !(sl.max_mm > sl.min_mm))
      errors.push(`${at}.soft_limits: must be {min_mm, max_mm} with max_mm > min_mm`);
    else if (isObj(t) && typeof t.min_mm === 'number' && typeof t.max_mm === 'number' && (sl.min_mm < t.min_mm || sl.max_mm > t.max_mm))
      errors.push(`${at}.soft_limits: ${sl.min_mm}..${sl.max_mm} mm must lie within travel ${t.min_mm}..${t.max_mm} mm`);
  }
  for (const k of ['steps_per_mm', 'max_speed_mm_s', 'accel_mm_s2', 'home_speed_mm_s', 'tolerance_mm'])
    if (!isPos(s[k])) errors.push(`${at}.${k}: must be a positive number`);
  if (isObj(d) && isPos(d.max_step_hz) && isPos(s.steps_per_mm) && isPos(s.max_speed_mm_s) && s.max_speed_mm_s * s.steps_per_mm > d.max_step_hz)
    errors.push(`${at}.max_speed_mm_s: ${s.max_speed_mm_s} mm/s needs ${s.max_speed_mm_s * s.steps_per_mm} steps/s, above driver.max_step_hz ${d.max_step_hz}`);
  if (isObj(e) && isPos(e.counts_per_mm) && isPos(s.tolerance_mm) && s.tolerance_mm * e.counts_per_mm < 2)
    errors.push(`${at}.tolerance_mm: must span at least 2 encoder counts`);
}
