// Full validation of a board definition, for the host and the tools (the firmware trusts the
// config the uploader wrote, which passed this check).
import type { BoardDef } from './board.js';

/** GPIOs an ESP32 (WROOM/WROVER module) can use at all. 6–11 drive the flash chip. */
const ESP32_GPIO = [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 25, 26, 27, 32, 33, 34, 35, 36, 39];
/** Input-only GPIOs: no output driver and no internal pull resistors. */
const ESP32_INPUT_ONLY = [34, 35, 36, 39];

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
function isInt(x: unknown): x is number {
  return typeof x === 'number' && Math.floor(x) === x && isFinite(x);
}
function isMs(x: unknown): x is number {
  return typeof x === 'number' && isFinite(x) && x >= 0 && x <= 600000;
}

export type BoardCheck = { ok: true; board: BoardDef } | { ok: false; errors: string[] };

export function checkBoard(raw: unknown): BoardCheck {
  const errors: string[] = [];
  if (!isObj(raw)) return { ok: false, errors: ['board: must be a JSON object'] };
  const b = raw;
  if (typeof b.id !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,31}$/.test(b.id))
    errors.push('id: must be 1-32 chars of a-z, 0-9, "_" or "-"');
  if (typeof b.name !== 'string' || b.name.length === 0) errors.push('name: must be a non-empty string');
  if (b.mcu !== 'esp32') errors.push('mcu: only "esp32" is supported');
  if (typeof b.module !== 'string') errors.push('module: must name the dev board');
  if (!isMs(b.device_processing_max_ms)) errors.push('device_processing_max_ms: must be a number of ms (0..600000)');
  if (!Array.isArray(b.relays)) errors.push('relays: must be an array (may be empty)');
  const used: Record<string, string> = {};
  const claim = (pin: number, what: string) => {
    const prev = used[String(pin)];
    if (prev !== undefined) errors.push(`${what}: GPIO${pin} is already used by ${prev}`);
    used[String(pin)] = what;
  };
  const chans: number[] = [];
  if (Array.isArray(b.relays)) {
    b.relays.forEach((r: unknown, i: number) => {
      const at = `relays[${i}]`;
      if (!isObj(r)) return errors.push(`${at}: must be an object`);
      if (!isInt(r.ch) || r.ch < 1 || r.ch > 64) errors.push(`${at}.ch: must be an integer 1..64`);
      else if (chans.indexOf(r.ch) >= 0) errors.push(`${at}.ch: channel ${r.ch} is defined twice`);
      else chans.push(r.ch);
      if (typeof r.name !== 'string') errors.push(`${at}.name: must be a string`);
      if (!isInt(r.pin) || ESP32_GPIO.indexOf(r.pin) < 0) errors.push(`${at}.pin: GPIO${String(r.pin)} is not a usable ESP32 GPIO`);
      else if (ESP32_INPUT_ONLY.indexOf(r.pin) >= 0) errors.push(`${at}.pin: GPIO${r.pin} is input-only and cannot drive a relay`);
      else claim(r.pin, `${at}.pin`);
      if (typeof r.active_low !== 'boolean') errors.push(`${at}.active_low: must be true or false`);
      for (const k of ['operate_ms', 'release_ms', 'settle_ms']) if (!isMs(r[k])) errors.push(`${at}.${k}: must be a number of ms`);
      const fb = r.feedback;
      if (!isObj(fb)) return errors.push(`${at}.feedback: must be an object with a kind`);
      if (fb.kind === 'aux_contact') {
        if (!isInt(fb.pin) || ESP32_GPIO.indexOf(fb.pin) < 0) errors.push(`${at}.feedback.pin: GPIO${String(fb.pin)} is not a usable ESP32 GPIO`);
        else claim(fb.pin, `${at}.feedback.pin`);
        if (typeof fb.active_low !== 'boolean') errors.push(`${at}.feedback.active_low: must be true or false`);
        if (fb.pull !== 'up' && fb.pull !== 'down' && fb.pull !== 'external')
          errors.push(`${at}.feedback.pull: must be "up", "down" or "external"`);
        else if (fb.pull !== 'external' && isInt(fb.pin) && ESP32_INPUT_ONLY.indexOf(fb.pin) >= 0)
          errors.push(`${at}.feedback.pull: GPIO${fb.pin} has no internal pull resistor; wire one and say "external"`);
        if (isMs(r.settle_ms) && isMs(r.operate_ms) && isMs(r.release_ms) && r.settle_ms < Math.max(r.operate_ms, r.release_ms))
          errors.push(`${at}.settle_ms: must cover the worst of operate_ms and release_ms`);
      } else if (fb.kind !== 'pin_readback' && fb.kind !== 'none') {
        errors.push(`${at}.feedback.kind: must be "aux_contact", "pin_readback" or "none"`);
      }
    });
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, board: b as unknown as BoardDef };
}
