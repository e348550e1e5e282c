// relay.set: write the coil input, wait the relay's settle_ms, then let the board's feedback
// say whether it switched (output pin read back, auxiliary contact, load current: load.ts) or say plainly that nothing
// observes it. Per-channel state lives in parallel arrays indexed like board.relays.
import type { BoardDef, RelayDef, RelayWire } from '@proofrig/protocol';
import { checkRelaySetArgs, relaySnapshotPins } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinInput, pinOutput, pinRead, pinsRead, pinWrite } from './hal';
import { nowMs } from './clock';
import { loadVerdict } from './load';

let RL: RelayDef[] = [];
/** Channel numbers, indexed like RL (a native indexOf finds a channel). */
let CHS: number[] = [];
/** Level last commanded (true = on), null until the first command since boot. */
const CMD: (boolean | null)[] = [];
/** The same as bits for the snapshot (relay-wire.ts): commanded on, and commanded at all since boot. */
let ON = 0;
let KN = 0;
/** Ring slot of the command executing on the channel, -1 when idle. */
const SLOT: number[] = [];
/** Level written by that command. */
const LV: number[] = [];
/** One settle callback per channel, made once at init (none per command). */
const SETTLE: (() => void)[] = [];
/** Pending settle timer per channel, and the max on-time (auto-off) timer with its callback. */
const ST: (TimerId | undefined)[] = [];
const AO: (TimerId | undefined)[] = [];
const AOF: (() => void)[] = [];
/** When the channel last went off (from on, or at boot), device ms: its min_off_ms counts from here. */
const OFFAT: number[] = [];
/** Every pin a snapshot reads (relaySnapshotPins: each observed output, then its aux contact), read in one call. */
let SNAP: number[] = [];
let done: Done;
let ev: (k: 'max_on', ch: number, msg: string) => void;

/** Output level that energises the coil. */
function onLevel(r: RelayDef): number {
  return r.active_low ? 0 : 1;
}

function idx(ch: unknown): number {
  return CHS.indexOf(ch as number);
}

/**
 * The settle time passed: the verdict of the board's feedback. Each verdict and its message is its
 * own function, since Espruino lexes a function's whole text at every call, skipped branches too.
 */
function settle(i: number): void {
  ST[i] = undefined;
  const slot = SLOT[i];
  if (slot < 0) return;
  const r = RL[i];
  const fb = r.feedback;
  SLOT[i] = -1;
  if (fb.kind === 'none') return unobserved(slot, r, i);
  const got = pinRead(r.pin);
  if (got !== LV[i]) return mismatch(slot, r, LV[i], got);
  if (fb.kind === 'load_current') return loadVerdict(slot, r, fb, CMD[i] === true, done);
  if (fb.kind === 'aux_contact') return auxVerdict(slot, r, fb, CMD[i] === true);
  done(slot, 'completed', 'pin_readback', true, undefined, r.name + ' (GPIO' + r.pin + '): read back ' + got + ' after ' + r.settle_ms + ' ms (only the MCU pin is observed)');
}

function unobserved(slot: number, r: RelayDef, i: number): void {
  done(slot, 'unverified', 'none', false, undefined,
    r.name + ' (GPIO' + r.pin + '): wrote ' + LV[i] + ' to switch ' + (CMD[i] === true ? 'on' : 'off') + '; nothing observes this output, so the relay is not verified');
}

function mismatch(slot: number, r: RelayDef, lv: number, got: number): void {
  done(slot, 'failed', 'pin_readback', false, 'READBACK_MISMATCH', r.name + ' (GPIO' + r.pin + '): wrote ' + lv + ', read back ' + got + ' after ' + r.settle_ms + ' ms');
}

function auxVerdict(slot: number, r: RelayDef, fb: { pin: number; active_low?: boolean }, on: boolean): void {
  const closed = pinRead(fb.pin) === (fb.active_low ? 0 : 1);
  const sw = on ? 'on' : 'off';
  if (closed !== on) {
    return done(slot, 'failed', 'aux_contact', false, 'NO_FEEDBACK',
      r.name + ': aux contact on GPIO' + fb.pin + ' stayed ' + (on ? 'open' : 'closed') + ' ' + r.settle_ms + ' ms after switching ' + sw);
  }
  done(slot, 'completed', 'aux_contact', true, undefined,
    r.name + ': aux contact on GPIO' + fb.pin + ' ' + (on ? 'closed' : 'opened') + ' within ' + r.settle_ms + ' ms of switching ' + sw);
}

function settler(i: number): () => void {
  return function () {
    settle(i);
  };
}

/** Switch channel i to its off level now and forget any auto-off; true when it was commanded on. */
function off(i: number): boolean {
  const r = RL[i];
  pinWrite(r.pin, onLevel(r) ^ 1);
  LV[i] = onLevel(r) ^ 1;
  if (AO[i] !== undefined) clearTimeout(AO[i]);
  AO[i] = undefined;
  const was = CMD[i] === true;
  if (CMD[i] !== null) CMD[i] = false;
  ON &= ~(1 << i);
  if (was) OFFAT[i] = nowMs();
  return was;
}

/** max_on_ms after the off→on switch: off, whatever any host says, and reported as an event. */
function autoOff(i: number): void {
  AO[i] = undefined;
  if (CMD[i] !== true) return;
  const r = RL[i];
  off(i);
  const slot = SLOT[i];
  if (slot >= 0) {
    SLOT[i] = -1;
    if (ST[i] !== undefined) clearTimeout(ST[i]);
    ST[i] = undefined;
    done(slot, 'failed', 'none', false, 'MAX_ON_TIME', r.name + ': switched off by its maximum on-time (' + r.max_on_ms + ' ms) before this command had its result; it is off');
  }
  ev('max_on', r.ch, r.name + ' (ch ' + r.ch + ') switched off by the device: on for its board maximum of ' + r.max_on_ms + ' ms');
}

function autoOffer(i: number): () => void {
  return function () {
    autoOff(i);
  };
}

/** E-stop: every output off; a command still settling ends failed ESTOP_LATCHED. */
export function relayAllOff(): void {
  for (let i = 0; i < RL.length; i++) {
    off(i);
    const slot = SLOT[i];
    if (slot < 0) continue;
    SLOT[i] = -1;
    if (ST[i] !== undefined) clearTimeout(ST[i]);
    ST[i] = undefined;
    done(slot, 'failed', 'none', false, 'ESTOP_LATCHED', RL[i].name + ': the e-stop switched it off before its result; it is off');
  }
}

/** Drive every relay output to its off level and set up the feedback inputs. */
export function relayInit(b: BoardDef, d: Done, e: (k: 'max_on', ch: number, msg: string) => void): void {
  RL = b.relays;
  CHS = [];
  SNAP = relaySnapshotPins(b);
  ON = KN = 0;
  done = d;
  ev = e;
  for (let i = 0; i < RL.length; i++) {
    const r = RL[i];
    pinOutput(r.pin, onLevel(r) ^ 1);
    if (r.feedback.kind === 'aux_contact') pinInput(r.feedback.pin, r.feedback.pull);
    CHS.push(r.ch);
    CMD[i] = null;
    SLOT[i] = -1;
    LV[i] = onLevel(r) ^ 1;
    SETTLE[i] = settler(i);
    AOF[i] = autoOffer(i);
    ST[i] = AO[i] = undefined;
    // Boot switched every output off: a load that needs its rest (a compressor) gets it after a reset too.
    OFFAT[i] = nowMs();
  }
}

function busy(p: Record<string, unknown>): string | null {
  const i = idx(p.ch);
  return SLOT[i] >= 0 ? RL[i].name + ' (ch ' + RL[i].ch + ') is still executing a command; ask again when it has a result' : null;
}

/** Switching on again too soon after off is refused, so max_on_ms and min_off_ms bound the duty cycle. */
function rest(p: Record<string, unknown>): string | null {
  const i = idx(p.ch);
  const r = RL[i];
  if (p.on !== true || CMD[i] === true || !r.min_off_ms) return null;
  const left = Math.ceil(OFFAT[i] + r.min_off_ms - nowMs());
  return left > 0 ? r.name + ' (ch ' + r.ch + ') is off for its board minimum off-time of ' + r.min_off_ms + ' ms; nothing was switched: switch it on with a new command in ' + left + ' ms' : null;
}

function run(slot: number, p: Record<string, unknown>, d: Done): void {
  const i = idx(p.ch);
  const r = RL[i];
  const on = p.on === true;
  const lv = on ? onLevel(r) : onLevel(r) ^ 1;
  done = d;
  // The on-time counts from the off→on switch: repeating "on" never extends it.
  if (!on) off(i);
  else if (CMD[i] !== true && r.max_on_ms) AO[i] = setTimeout(AOF[i], r.max_on_ms);
  pinWrite(r.pin, lv);
  CMD[i] = on;
  ON = on ? ON | (1 << i) : ON & ~(1 << i);
  KN |= 1 << i;
  LV[i] = lv;
  SLOT[i] = slot;
  ST[i] = setTimeout(SETTLE[i], r.settle_ms);
}

export const RELAY_SET: Action = { n: 'relay.set', chk: checkRelaySetArgs, busy: busy, rest: rest, run: run };

/** Relay part of the state snapshot: the command bits and every snapshot pin's level, read live in one call. */
export function relayState(): RelayWire {
  return [ON, KN, SNAP.length ? pinsRead(SNAP) : 0];
}
