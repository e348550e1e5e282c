// The executor: frames from an authenticated host (cmd, rack, q) go through the dedupe ring to
// the action table; results go to the ring's outbox and, when the link is up, to the host.
import type {
  BoardDef, CommandFrame, DeviceResultState, DeviceStateWire, ErrorCode, EventFrame, Evidence, QueryFrame, ResultFrame, StateFrame, ToDeviceFrame, WireFrame,
} from '@proofrig/protocol';
import { clip, DEDUPE_RING_SIZE, echo } from '@proofrig/protocol';
import type { Action } from './action';
import { DONE, ringAck, ringAdd, ringDone, ringFind, ringRerun, ringResult, ringRid, ringState, ringUnacked } from './dedupe';
import { RELAY_SET, relayInit, relayState } from './relay';
import { ESTOP_CLEAR, estopPoll, interlockInit, latched } from './interlock';
import { STEPPER_HOME, STEPPER_MOVE, STOP, stepperInit, stepperState } from './stepper';
import { SENSOR_READ, sensorInit, sensorState } from './sensor';
import { FANS } from './fan';
import { SERVOS } from './servo';
import { nowMs, upMs } from './clock';
import { sessionSend, sessionSendJson, sessionUp } from './session';

/** Actions by name. */
const ACTIONS: Action[] = [RELAY_SET, STEPPER_MOVE, STEPPER_HOME, STOP, ESTOP_CLEAR, SENSOR_READ, FANS.act, SERVOS.act];
/** Their names, in the same order (a native indexOf finds one). */
const NAMES: string[] = [];
for (let k = 0; k < ACTIONS.length; k++) NAMES.push(ACTIONS[k].n);
/** Device events (interlocks) take ring slots under ids of this prefix, which commands may not use. */
const EV = 'ev:';
let evn = 0;
let B: BoardDef;
/** When each ring slot's command started executing (ms), for the result's `ms`, and its action. */
const T0: number[] = [];
const AN: string[] = [];

/** A progress frame for the command in slot (sent only while the link is up; never stored). */
function prog(slot: number, pct: number, pos: number): void {
  if (sessionUp()) sessionSend({ t: 'prog', rid: ringRid(slot), pct: pct, pos: pos });
}

/** An interlock acted: kept in the outbox like a result (re-sent until the host's rack), sent now if the link is up. */
function event(k: 'max_on' | 'estop', ch: number, msg: string): void {
  // Built key by key in the order the frame has always had on the wire; the type checks every key set.
  const o = { t: 'evt', id: EV + ++evn, k: k } as WireFrame<EventFrame>;
  if (ch) o.ch = ch;
  o.msg = msg;
  o.s = snapshot();
  const j = JSON.stringify(o);
  const i = ringAdd(o.id);
  if (i >= 0) {
    T0[i] = nowMs();
    AN[i] = '';
    ringDone(i, j);
  }
  if (sessionUp()) sessionSendJson(j);
}

export function execInit(b: BoardDef): void {
  B = b;
  relayInit(b, finish, event);
  stepperInit(b, finish, prog);
  interlockInit(b, event);
  sensorInit(b, finish);
  FANS.init(b, finish);
  SERVOS.init(b);
}

/** Relays always (as bit masks: relay-wire.ts); `axes` only on a board with steppers, so relay-only snapshots stay small. */
export function snapshot(): DeviceStateWire {
  const s: DeviceStateWire = { up: upMs(), r: relayState() };
  if (B && B.steppers && B.steppers.length) s.axes = stepperState();
  if (B && B.estop) s.estop = latched();
  if (B && B.sensors && B.sensors.length) s.sensors = sensorState();
  if (B && B.pwm) {
    if (FANS.n()) s.fans = FANS.state();
    if (SERVOS.n()) s.servos = SERVOS.state();
  }
  return s;
}

function resultJson(rid: string, st: DeviceResultState, ev: Evidence, ver: boolean, ms: number, code?: ErrorCode, msg?: string): string {
  const r = { t: 'res', rid: rid, st: st, ev: ev, ver: ver } as WireFrame<ResultFrame>;
  if (code) r.code = code;
  if (msg) r.msg = clip(msg);
  r.s = snapshot();
  r.ms = ms;
  return JSON.stringify(r);
}

/** An action's outcome: stored in the ring (done, awaiting rack) and sent if the link is up. */
function finish(slot: number, st: DeviceResultState, ev: Evidence, ver: boolean, code?: ErrorCode, msg?: string): void {
  const j = resultJson(ringRid(slot), st, ev, ver, Math.max(0, Math.round(nowMs() - T0[slot])), code, msg);
  ringDone(slot, j);
  if (sessionUp()) sessionSendJson(j);
}

function reject(slot: number, code: ErrorCode, msg: string): void {
  finish(slot, 'rejected', 'none', false, code, msg);
}

function findAction(a: string): Action | null {
  const i = NAMES.indexOf(a);
  return i < 0 ? null : ACTIONS[i];
}

/** Why a command is refused while the e-stop is latched (made once: a literal is lexed at every call). */
const LATCHED = 'e-stop latched: every output is held off until an operator clears it (estop_clear); nothing was done';

/**
 * A command frame. The common case (a new request_id for a known action) stays in this short
 * function and start(); everything rare is out of line in cmdRare(), since Espruino lexes a
 * function's whole text, skipped branches included, at every call.
 */
function onCmd(f: CommandFrame): void {
  // A rack riding along comes first, as its own frame would have.
  if (f.k !== undefined) ringAck(f.k);
  const a = findAction(f.a);
  const i = a && ringFind(f.rid) < 0 && f.rid.indexOf(EV) !== 0 ? take(f, a) : cmdRare(f, a);
  if (i >= 0) start(i, f, a as Action);
}

/** A slot for a new request_id, or -1 when the outbox is full (then answered here). */
function take(f: CommandFrame, a: Action | null): number {
  const i = ringAdd(f.rid);
  if (i >= 0) return i;
  if (a && a.al && a.pre && !a.chk(f.p, B)) {
    // A stop still halts the axes with the outbox full; there is no slot to verify it from.
    a.pre(f.p);
    sessionSendJson(resultJson(f.rid, 'unverified', 'none', false, 0, undefined, 'steps switched off, not verified: the outbox is full'));
    return -1;
  }
  sessionSendJson(resultJson(f.rid, 'rejected', 'none', false, 0, 'BUSY',
    'outbox full: all ' + DEDUPE_RING_SIZE + ' result slots are running or await the host\'s rack; nothing was done'));
  return -1;
}

/** A reserved request_id, a repeat, or an unknown action: the slot to run it in (a repeated stop), else -1 (answered here). */
function cmdRare(f: CommandFrame, a: Action | null): number {
  const rid = f.rid;
  if (rid.indexOf(EV) === 0) {
    sessionSendJson(resultJson(rid, 'rejected', 'none', false, 0, 'INVALID_ARGS', 'request ids starting with "' + EV + '" are reserved for device events; nothing was done'));
    return -1;
  }
  let i = ringFind(rid);
  if (i >= 0) {
    // An always-executing action (stop) is never deduplicated away: it runs again and its fresh
    // result replaces the stored one. Anything else replays, or says it is still running.
    if (!a || !a.al || AN[i] !== a.n) {
      if (ringState(i) === DONE) sessionSendJson(ringResult(i));
      else sessionSend({ t: 'ack', rid: rid, st: 'running' });
      return -1;
    }
    ringRerun(i);
    return i;
  }
  // An unknown action: refused, and remembered like any result.
  i = take(f, a);
  if (i < 0) return -1;
  T0[i] = nowMs();
  AN[i] = '';
  const names: string[] = [];
  for (let k = 0; k < ACTIONS.length; k++) names.push(ACTIONS[k].n);
  reject(i, 'UNKNOWN_ACTION', 'this device does not implement ' + echo(f.a) + '; it implements ' + names.join(', '));
  return -1;
}

/** Check a command in slot i against its action and the interlocks, then start it (or refuse it, remembered). */
function start(i: number, f: CommandFrame, a: Action): void {
  T0[i] = nowMs();
  AN[i] = a.n;
  const p = f.p;
  let why = a.chk(p, B);
  if (why) return reject(i, 'INVALID_ARGS', why);
  estopPoll();
  if (latched() && !a.al && !a.ro && a !== ESTOP_CLEAR) return reject(i, 'ESTOP_LATCHED', LATCHED);
  if (a.nh && (why = a.nh(p))) return reject(i, 'NOT_HOMED', why);
  if ((why = a.busy(p))) return reject(i, 'BUSY', why);
  if (a.rest && (why = a.rest(p))) return reject(i, 'MIN_OFF_TIME', why);
  try {
    if (a.pre) a.pre(p);
    if (a.ak) sessionSend({ t: 'ack', rid: f.rid, st: 'accepted' });
    a.run(i, p, finish);
  } catch (e) {
    if (ringState(i) !== DONE) finish(i, 'failed', 'none', false, 'INTERNAL', a.n + ' threw: ' + clip('' + e, 200));
  }
}

function onQuery(f: QueryFrame): void {
  const o: WireFrame<StateFrame> = { t: 'state', q: f.q, s: snapshot() };
  let i = -1;
  if (f.rid !== undefined) {
    i = ringFind(f.rid);
    o.rid = f.rid;
    o.rst = i < 0 ? 'unknown' : ringState(i) === DONE ? 'done' : 'running';
  }
  sessionSend(o);
  if (i >= 0 && ringState(i) === DONE) sessionSendJson(ringResult(i));
}

/** A validated frame from the authenticated host. */
export function execFrame(f: ToDeviceFrame): void {
  if (f.t === 'cmd') onCmd(f);
  else if (f.t === 'rack') ringAck(f.rid);
  else if (f.t === 'q') onQuery(f);
}

/** The link came up: send every result the host has not confirmed, oldest first. */
export function execResend(): void {
  const p = ringUnacked();
  for (let k = 0; k < p.length; k++) sessionSendJson(ringResult(p[k]));
}
