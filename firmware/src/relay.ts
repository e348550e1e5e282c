// relay.set: write the coil input, wait the relay's settle_ms, then let the board's feedback
// say whether it switched (output pin read back, auxiliary contact) or say plainly that nothing
// observes it. Per-channel state lives in parallel arrays indexed like board.relays.
import type { BoardDef, RelayDef, RelayState } from '@proofrig/protocol';
import { checkRelaySetArgs } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinInput, pinOutput, pinRead, pinWrite } from './hal';

let RL: RelayDef[] = [];
/** Level last commanded (true = on), null until the first command since boot. */
const CMD: (boolean | null)[] = [];
/** Ring slot of the command executing on the channel, -1 when idle. */
const SLOT: number[] = [];
/** Level written by that command. */
const LV: number[] = [];
/** One settle callback per channel, made once at init (none per command). */
const SETTLE: (() => void)[] = [];
let done: Done;

/** Output level that energises the coil. */
function onLevel(r: RelayDef): number {
  return r.active_low ? 0 : 1;
}

function idx(ch: unknown): number {
  for (let i = 0; i < RL.length; i++) if (RL[i].ch === ch) return i;
  return -1;
}

function settle(i: number): void {
  const r = RL[i];
  const fb = r.feedback;
  const slot = SLOT[i];
  const lv = LV[i];
  const on = CMD[i] === true;
  const sw = on ? 'on' : 'off';
  SLOT[i] = -1;
  if (fb.kind === 'none') {
    return done(slot, 'unverified', 'none', false, undefined,
      r.name + ' (GPIO' + r.pin + '): wrote ' + lv + ' to switch ' + sw + '; nothing observes this output, so the relay is not verified');
  }
  const got = pinRead(r.pin);
  if (got !== lv) {
    return done(slot, 'failed', 'pin_readback', false, 'READBACK_MISMATCH',
      r.name + ' (GPIO' + r.pin + '): wrote ' + lv + ', read back ' + got + ' after ' + r.settle_ms + ' ms');
  }
  if (fb.kind === 'aux_contact') {
    const closed = pinRead(fb.pin) === (fb.active_low ? 0 : 1);
    if (closed !== on) {
      return done(slot, 'failed', 'aux_contact', false, 'NO_FEEDBACK',
        r.name + ': aux contact on GPIO' + fb.pin + ' stayed ' + (on ? 'open' : 'closed') + ' ' + r.settle_ms + ' ms after switching ' + sw);
    }
    return done(slot, 'completed', 'aux_contact', true, undefined,
      r.name + ': aux contact on GPIO' + fb.pin + ' ' + (on ? 'closed' : 'opened') + ' within ' + r.settle_ms + ' ms of switching ' + sw);
  }
  done(slot, 'completed', 'pin_readback', true, undefined,
    r.name + ' (GPIO' + r.pin + '): read back ' + got + ' after ' + r.settle_ms + ' ms (only the MCU pin is observed)');
}

function settler(i: number): () => void {
  return function () {
    settle(i);
  };
}

/** Drive every relay output to its off level and set up the feedback inputs. */
export function relayInit(b: BoardDef): void {
  RL = b.relays;
  for (let i = 0; i < RL.length; i++) {
    const r = RL[i];
    pinOutput(r.pin, onLevel(r) ^ 1);
    if (r.feedback.kind === 'aux_contact') pinInput(r.feedback.pin, r.feedback.pull);
    CMD[i] = null;
    SLOT[i] = -1;
    LV[i] = onLevel(r) ^ 1;
    SETTLE[i] = settler(i);
  }
}

function busy(p: Record<string, unknown>): string | null {
  const i = idx(p.ch);
  return SLOT[i] >= 0 ? RL[i].name + ' (ch ' + RL[i].ch + ') is still executing a command; ask again when it has a result' : null;
}

function run(slot: number, p: Record<string, unknown>, d: Done): void {
  const i = idx(p.ch);
  const r = RL[i];
  const on = p.on === true;
  const lv = on ? onLevel(r) : onLevel(r) ^ 1;
  done = d;
  pinWrite(r.pin, lv);
  CMD[i] = on;
  LV[i] = lv;
  SLOT[i] = slot;
  setTimeout(SETTLE[i], r.settle_ms);
}

export const RELAY_SET: Action = { n: 'relay.set', chk: checkRelaySetArgs, busy: busy, run: run };

/** Relay part of the state snapshot, read live from the pins. */
export function relayState(): RelayState[] {
  const o: RelayState[] = [];
  for (let i = 0; i < RL.length; i++) {
    const r = RL[i];
    const fb = r.feedback;
    o.push({
      ch: r.ch,
      cmd: CMD[i],
      pin: fb.kind === 'none' ? null : pinRead(r.pin) === onLevel(r),
      aux: fb.kind === 'aux_contact' ? pinRead(fb.pin) === (fb.active_low ? 0 : 1) : null,
    });
  }
  return o;
}
