// The executor: frames from an authenticated host (cmd, rack, q) go through the dedupe ring to
// the action table; results go to the ring's outbox and, when the link is up, to the host.
import type {
  BoardDef, CommandFrame, DeviceResultState, DeviceState, ErrorCode, Evidence, QueryFrame, ToDeviceFrame,
} from '@proofrig/protocol';
import { DEDUPE_RING_SIZE } from '@proofrig/protocol';
import type { Action } from './action';
import { DONE, ringAck, ringAdd, ringDone, ringFind, ringResult, ringRid, ringState, ringUnacked } from './dedupe';
import { RELAY_SET, relayInit, relayState } from './relay';
import { nowMs, upMs } from './clock';
import { linkSend, linkSendJson, linkUp } from './link';

/** Actions by name. Add stepper.move / stepper.home / stop here. */
const ACTIONS: Action[] = [RELAY_SET];
let B: BoardDef;
/** When each ring slot's command started executing (ms), for the result's `ms`. */
const T0: number[] = [];

export function execInit(b: BoardDef): void {
  B = b;
  relayInit(b);
}

export function snapshot(): DeviceState {
  return { up: upMs(), relays: relayState() };
}

function resultJson(rid: string, st: DeviceResultState, ev: Evidence, ver: boolean, ms: number, code?: ErrorCode, msg?: string): string {
  const r: Record<string, unknown> = { t: 'res', rid: rid, st: st, ev: ev, ver: ver };
  if (code) r.code = code;
  if (msg) r.msg = msg;
  r.s = snapshot();
  r.ms = ms;
  return JSON.stringify(r);
}

/** An action's outcome: stored in the ring (done, awaiting rack) and sent if the link is up. */
function finish(slot: number, st: DeviceResultState, ev: Evidence, ver: boolean, code?: ErrorCode, msg?: string): void {
  const j = resultJson(ringRid(slot), st, ev, ver, Math.max(0, Math.round(nowMs() - T0[slot])), code, msg);
  ringDone(slot, j);
  if (linkUp()) linkSendJson(j);
}

function reject(slot: number, code: ErrorCode, msg: string): void {
  finish(slot, 'rejected', 'none', false, code, msg);
}

function findAction(a: string): Action | null {
  for (let i = 0; i < ACTIONS.length; i++) if (ACTIONS[i].n === a) return ACTIONS[i];
  return null;
}

function onCmd(f: CommandFrame): void {
  const rid = f.rid;
  let i = ringFind(rid);
  if (i >= 0) {
    if (ringState(i) === DONE) linkSendJson(ringResult(i));
    else linkSend({ t: 'ack', rid: rid, st: 'running' });
    return;
  }
  i = ringAdd(rid);
  if (i < 0) {
    linkSendJson(resultJson(rid, 'rejected', 'none', false, 0, 'BUSY',
      'outbox full: all ' + DEDUPE_RING_SIZE + ' result slots are running or await the host\'s rack; nothing was done'));
    return;
  }
  T0[i] = nowMs();
  const a = findAction(f.a);
  if (!a) {
    const names: string[] = [];
    for (let k = 0; k < ACTIONS.length; k++) names.push(ACTIONS[k].n);
    return reject(i, 'UNKNOWN_ACTION', 'this device does not implement "' + String(f.a).slice(0, 40) + '"; it implements ' + names.join(', '));
  }
  let why = a.chk(f.p, B);
  if (why) return reject(i, 'INVALID_ARGS', why);
  why = a.busy(f.p);
  if (why) return reject(i, 'BUSY', why);
  linkSend({ t: 'ack', rid: rid, st: 'accepted' });
  try {
    a.run(i, f.p, finish);
  } catch (e) {
    if (ringState(i) !== DONE) finish(i, 'failed', 'none', false, 'INTERNAL', a.n + ' threw: ' + e);
  }
}

function onQuery(f: QueryFrame): void {
  const o: Record<string, unknown> = { t: 'state', q: f.q, s: snapshot() };
  let i = -1;
  if (f.rid !== undefined) {
    i = ringFind(f.rid);
    o.rid = f.rid;
    o.rst = i < 0 ? 'unknown' : ringState(i) === DONE ? 'done' : 'running';
  }
  linkSend(o);
  if (i >= 0 && ringState(i) === DONE) linkSendJson(ringResult(i));
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
  for (let k = 0; k < p.length; k++) linkSendJson(ringResult(p[k]));
}
