// The relays' part of a state snapshot as the device sends it (protocol 4): three integers instead of
// an object per relay. Building, serialising, masking and hashing those objects was ~1.8 M of the
// ~9.2 M instructions a relay command cost on the interpreter; the board the host already holds says
// what each bit means, so the host rebuilds the same RelayState[] before anything else sees the frame.
import type { BoardDef, RelayDef } from './board.js';
import type { DeviceState, RelayState } from './device-state.js';

/**
 * `[on, known, levels]`: bit i of `on` = relay i (board order) last commanded on; bit i of `known` =
 * commanded at all since boot; `levels` = the raw levels of the snapshot pins (relaySnapshotPins),
 * the first pin the most significant bit (Espruino's digitalRead of an array).
 */
export type RelayWire = [number, number, number];

/** A snapshot as the device sends it: the relays as their RelayWire. */
export type DeviceStateWire = Omit<DeviceState, 'relays'> & { r: RelayWire };
/** A frame carrying a snapshot, as the device sends it (the host's parser turns it into F). */
export type WireFrame<F extends { s: DeviceState }> = Omit<F, 's'> & { s: DeviceStateWire };

/** Relays and snapshot pins one snapshot can carry: bits of a 31-bit non-negative integer. */
export const MAX_WIRE_BITS = 31;

/** The pins a snapshot reads, in order: each relay's output if observed, then its aux contact if any. */
export function relaySnapshotPins(b: Pick<BoardDef, 'relays'>): number[] {
  const pins: number[] = [];
  for (let i = 0; i < b.relays.length; i++) {
    const r = b.relays[i];
    if (r.feedback.kind !== 'none') pins.push(r.pin);
    if (r.feedback.kind === 'aux_contact') pins.push(r.feedback.pin);
  }
  return pins;
}

function isBits(v: unknown, n: number): v is number {
  return typeof v === 'number' && v >= 0 && v % 1 === 0 && v < Math.pow(2, n);
}

/** Rebuild the relays of a snapshot from its wire form and the device's board (host side). */
export function decodeRelayWire(w: unknown, relays: RelayDef[]): { ok: true; relays: RelayState[] } | { ok: false; msg: string } {
  if (!Array.isArray(w) || w.length !== 3) return { ok: false, msg: 's.r must be [on, known, levels]' };
  const n = relaySnapshotPins({ relays }).length;
  if (!isBits(w[0], relays.length) || !isBits(w[1], relays.length)) return { ok: false, msg: 's.r: on and known must be bit masks of the board\'s ' + relays.length + ' relays' };
  if (!isBits(w[2], n)) return { ok: false, msg: 's.r: levels must be a bit mask of the board\'s ' + n + ' snapshot pins' };
  const on = w[0] as number;
  const known = w[1] as number;
  const lv = w[2] as number;
  if (on & ~known) return { ok: false, msg: 's.r: a relay is on but never commanded' };
  const out: RelayState[] = [];
  let b = n;
  for (let i = 0; i < relays.length; i++) {
    const r = relays[i];
    const fb = r.feedback;
    const pin = fb.kind === 'none' ? null : ((lv >> --b) & 1) === (r.active_low ? 0 : 1);
    const aux = fb.kind === 'aux_contact' ? ((lv >> --b) & 1) === (fb.active_low ? 0 : 1) : null;
    out.push({ ch: r.ch, cmd: (known >> i) & 1 ? ((on >> i) & 1) === 1 : null, pin: pin, aux: aux });
  }
  return { ok: true, relays: out };
}
