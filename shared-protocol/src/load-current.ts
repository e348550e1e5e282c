// A relay proven by its load current (feedback kind load_current): the board check of the feedback,
// and the one place the firmware's result text and the host's reading of it meet. The firmware
// writes "<name>: load current <amps> A on <sensor>..." in its result message (firmware/src/load.ts);
// the host takes the amps from there for its sentence ("verified by its load current (2.1 A)").
import { echo, isNum, isObj } from './check.js';

type Obj = Record<string, unknown>;

/** What a current sensor is, in the words of the check's messages; null when the sensor measures current. */
function notCurrent(s: Obj): string | null {
  if (s.kind === 'ina219') return s.quantity === 'current' ? null : `measures ${String(s.quantity)}, not current`;
  if (s.kind === 'adc') return s.unit === 'A' ? null : `reads ${echo(s.unit)}, not A`;
  return `is an ${String(s.kind).toUpperCase()} (${String(s.quantity)}), not a current sensor`;
}

/**
 * Check every relay feedback of kind load_current against the board's sensors, pushing errors. The
 * sensors themselves are checked by checkSensors; this checks only what the feedback asks of them.
 */
export function checkLoadFeedback(b: Obj, errors: string[]): void {
  if (!Array.isArray(b.relays)) return;
  const sensors = Array.isArray(b.sensors) ? (b.sensors.filter(isObj) as Obj[]) : [];
  b.relays.forEach((r: unknown, i: number) => {
    if (!isObj(r) || !isObj(r.feedback) || r.feedback.kind !== 'load_current') return;
    const fb = r.feedback;
    const at = `relays[${i}].feedback`;
    const s = sensors.find((x) => x.id === fb.sensor);
    if (typeof fb.sensor !== 'string' || !s) {
      const ids = sensors.map((x) => String(x.id));
      errors.push(`${at}.sensor: ${echo(fb.sensor)} is not a sensor of this board (sensors: ${ids.length ? ids.join(', ') : 'none'}); name the current sensor in series with the load`);
    } else {
      const why = notCurrent(s);
      if (why) return void errors.push(`${at}.sensor: ${fb.sensor} ${why}; name an INA219 with quantity "current" or an ADC input whose unit is "A"`);
    }
    const onOk = isNum(fb.on_above) && fb.on_above > 0;
    const offOk = isNum(fb.off_below) && fb.off_below > 0;
    if (!onOk) errors.push(`${at}.on_above: must be the amps the load draws when on, a number above 0 (switched on is verified only above it)`);
    if (!offOk) errors.push(`${at}.off_below: must be a number of amps above 0 (switched off is verified only below it; a zero would never be undercut by a noisy reading)`);
    if (onOk && offOk && (fb.off_below as number) > (fb.on_above as number))
      errors.push(`${at}.off_below: ${fb.off_below} A is above on_above ${fb.on_above} A; the off threshold must not exceed the on threshold`);
    const range = s && isObj(s.range) && isNum(s.range.min) && isNum(s.range.max) ? { min: s.range.min, max: s.range.max } : null;
    if (range && onOk && (fb.on_above as number) >= range.max)
      errors.push(`${at}.on_above: ${fb.on_above} A is not inside ${fb.sensor}'s plausible range ${range.min}..${range.max} A, so no valid reading could ever exceed it`);
    if (range && offOk && (fb.off_below as number) <= range.min)
      errors.push(`${at}.off_below: ${fb.off_below} A is not inside ${fb.sensor}'s plausible range ${range.min}..${range.max} A, so no valid reading could ever be below it`);
    if (s && isNum(s.conversion_ms) && isNum(r.settle_ms) && isNum(r.operate_ms) && isNum(r.release_ms)) {
      const need = Math.max(r.operate_ms, r.release_ms) + s.conversion_ms;
      if (r.settle_ms < need)
        errors.push(`relays[${i}].settle_ms: ${r.settle_ms} ms is too short for load_current feedback: it must cover the worst of operate_ms and release_ms plus ${fb.sensor}'s conversion_ms (${need} ms), or the current read may predate the contact`);
    }
    if (s && isObj(s.supply) && s.supply.ch === r.ch)
      errors.push(`${at}.sensor: ${fb.sensor} is powered by this relay's own contact, so it cannot measure the load switched off`);
  });
}

/** The text the firmware puts after the relay's name: "K1: load current 2.1 A on heater_amps ...". */
const AMPS = /: load current (-?\d+(?:\.\d+)?(?:e-?\d+)?) A on /;

/** The amps a load_current result measured, from its detail; null when the detail carries none. */
export function loadAmpsOf(detail: string | null | undefined): number | null {
  const m = detail ? AMPS.exec(detail) : null;
  return m ? Number(m[1]) : null;
}
