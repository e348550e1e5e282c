// Frames a device sends to the host, and the validator the host runs on them.
import type { ErrorCode } from './codes.js';
import { isErrorCode } from './codes.js';
import type { DeviceResultState, Evidence } from './lifecycle.js';
import { DEVICE_RESULT_STATES, EVIDENCE_KINDS } from './lifecycle.js';
import type { DeviceState } from './device-state.js';
import type { RelayDef } from './board.js';
import { decodeRelayWire } from './relay-wire.js';
import type { FrameError } from './check.js';
import { bad, checkErr, ID_RULE, isId, isNum, isObj, echo, isStr, optMsg, parseEnvelope } from './check.js';
import { MAX_ID_LENGTH, MAX_MSG_LENGTH, MAX_STATE_AXES, MAX_STATE_PWM, MAX_STATE_RELAYS, MAX_STATE_SENSORS } from './constants.js';

/** First frame on every connection. `boot` is fresh on every boot; `cn` is the device's nonce. */
export interface HelloFrame { t: 'hello'; v: number; dev: string; boot: string; fw: string; board: string; cn: string }
/** HMAC-SHA256(secret, authMessage(dev, boot, cn, sn)) in lowercase hex. */
export interface AuthFrame { t: 'auth'; mac: string }
/** `accepted`: arguments checked, execution started. `running`: a repeat of a command still executing. */
export interface AckFrame { t: 'ack'; rid: string; st: 'accepted' | 'running' }
/** Progress of a long action, at a bounded rate. `pos`: measured position in mm for a move. */
export interface ProgressFrame { t: 'prog'; rid: string; pct: number; pos?: number; msg?: string }
/** The outcome of `rid`, kept in the device's outbox until the host answers `rack`. */
export interface ResultFrame {
  t: 'res';
  rid: string;
  st: DeviceResultState;
  ev: Evidence;
  /** true only with evidence (ev ≠ none) that confirmed the target. */
  ver: boolean;
  code?: ErrorCode;
  msg?: string;
  /** State snapshot taken when the result was decided. */
  s: DeviceState;
  /** Execution time on the device, ms. */
  ms: number;
}
/** Answer to a query `q`. With `rid`, `rst` tells that command's status on the device. */
export interface StateFrame { t: 'state'; q: string; s: DeviceState; rid?: string; rst?: 'running' | 'done' | 'unknown' }
/** `bad`: frames refused on this connection (MAC, counter or envelope wrong). */
export interface DeviceHeartbeatFrame { t: 'hb'; up: number; free?: number; bad?: number }

/** What an interlock did on the device by itself. */
export const DEVICE_EVENT_KINDS = ['max_on', 'estop'] as const;
export type DeviceEventKind = (typeof DEVICE_EVENT_KINDS)[number];
/**
 * Something the device did on its own, no command asked for it: `max_on` (a relay switched off
 * after its board max_on_ms; `ch` names it), `estop` (the e-stop input latched every output off).
 * Kept in the device's outbox like a result until the host answers `rack` with `id`, and re-sent
 * after every reconnect; `id` is unique within one boot.
 */
export interface EventFrame { t: 'evt'; id: string; k: DeviceEventKind; ch?: number; msg: string; s: DeviceState }
export interface DeviceErrorFrame { t: 'err'; code: ErrorCode; msg: string; ref?: string }

export type ToHostFrame =
  | HelloFrame
  | AuthFrame
  | AckFrame
  | ProgressFrame
  | ResultFrame
  | StateFrame
  | EventFrame
  | DeviceHeartbeatFrame
  | DeviceErrorFrame;

export type ToHostParse = { ok: true; f: ToHostFrame } | FrameError;

const RELAY_KEYS = ['cmd', 'pin', 'aux'];
const AXIS_FLAGS = ['moving', 'homed', 'fault', 'home', 'limit'];

/**
 * Check a state snapshot and rebuild it from its known fields only: whatever else the device
 * sent (extra keys, deep nesting) never reaches the journal, the logs or an MCP answer.
 */
export function readState(s: unknown, board?: RelayDef[]): { ok: true; s: DeviceState } | { ok: false; msg: string } {
  if (!isObj(s)) return { ok: false, msg: 's must be a state object' };
  if (!isNum(s.up)) return { ok: false, msg: 's.up must be a number' };
  if (s.r !== undefined) {
    if (s.relays !== undefined) return { ok: false, msg: 's has both r and relays' };
    if (!board) return { ok: false, msg: 's.r can be read only with the device\'s board (after authentication)' };
    const w = decodeRelayWire(s.r, board);
    if (!w.ok) return w;
    return readRest(s, { up: s.up, relays: w.relays });
  }
  if (!Array.isArray(s.relays)) return { ok: false, msg: 's.relays must be an array, or s.r the relays\' bit masks' };
  if (s.relays.length > MAX_STATE_RELAYS) return { ok: false, msg: 's.relays has more than ' + MAX_STATE_RELAYS + ' entries' };
  const out: DeviceState = { up: s.up, relays: [] };
  for (let i = 0; i < s.relays.length; i++) {
    const r: unknown = s.relays[i];
    if (!isObj(r) || !isNum(r.ch)) return { ok: false, msg: 's.relays[] must be objects with a numeric ch' };
    for (let k = 0; k < RELAY_KEYS.length; k++) {
      const v = r[RELAY_KEYS[k]];
      if (v !== null && typeof v !== 'boolean') return { ok: false, msg: 's.relays[].' + RELAY_KEYS[k] + ' must be boolean or null' };
    }
    out.relays.push({ ch: r.ch, cmd: r.cmd as boolean | null, pin: r.pin as boolean | null, aux: r.aux as boolean | null });
  }
  return readRest(s, out);
}

/** The parts of a snapshot after its relays. */
function readRest(s: Record<string, unknown>, out: DeviceState): { ok: true; s: DeviceState } | { ok: false; msg: string } {
  if (s.axes !== undefined) {
    if (!Array.isArray(s.axes)) return { ok: false, msg: 's.axes must be an array' };
    if (s.axes.length > MAX_STATE_AXES) return { ok: false, msg: 's.axes has more than ' + MAX_STATE_AXES + ' entries' };
    out.axes = [];
    for (let i = 0; i < s.axes.length; i++) {
      const a: unknown = s.axes[i];
      if (!isObj(a) || !isStr(a.axis, 32) || !isNum(a.pos) || !isNum(a.cmd)) return { ok: false, msg: 's.axes[] must have axis (up to 32 chars), pos and cmd' };
      for (let k = 0; k < AXIS_FLAGS.length; k++) if (typeof a[AXIS_FLAGS[k]] !== 'boolean') return { ok: false, msg: 's.axes[].' + AXIS_FLAGS[k] + ' must be a boolean' };
      out.axes.push({
        axis: a.axis, pos: a.pos, cmd: a.cmd,
        moving: a.moving as boolean, homed: a.homed as boolean, fault: a.fault as boolean, home: a.home as boolean, limit: a.limit as boolean,
      });
    }
  }
  if (s.estop !== undefined) {
    if (typeof s.estop !== 'boolean') return { ok: false, msg: 's.estop must be a boolean' };
    out.estop = s.estop;
  }
  if (s.sensors !== undefined) {
    if (!Array.isArray(s.sensors) || s.sensors.length > MAX_STATE_SENSORS) return { ok: false, msg: 's.sensors must be an array of up to ' + MAX_STATE_SENSORS };
    out.sensors = [];
    for (let i = 0; i < s.sensors.length; i++) {
      const x: unknown = s.sensors[i];
      if (!isObj(x) || !isStr(x.id, 32) || !isStr(x.st, 32) || !isNum(x.at) || (x.v !== null && !isNum(x.v)))
        return { ok: false, msg: 's.sensors[] must have id, st (up to 32 chars), at and v (a number or null)' };
      // A value only with a good reading: whatever the device claims, a failed reading carries no number.
      out.sensors.push({ id: x.id, v: x.st === 'ok' ? (x.v as number | null) : null, st: x.st, at: x.at });
    }
  }
  if (s.fans !== undefined) {
    if (!Array.isArray(s.fans) || s.fans.length > MAX_STATE_PWM) return { ok: false, msg: 's.fans must be an array of up to ' + MAX_STATE_PWM };
    out.fans = [];
    for (let i = 0; i < s.fans.length; i++) {
      const x: unknown = s.fans[i];
      if (!isObj(x) || !isStr(x.id, 32) || !isNum(x.duty) || !isNum(x.at) || (x.rpm !== null && !isNum(x.rpm)))
        return { ok: false, msg: 's.fans[] must have id (up to 32 chars), duty, at and rpm (a number or null)' };
      out.fans.push({ id: x.id, duty: x.duty, rpm: x.rpm as number | null, at: x.at });
    }
  }
  if (s.servos !== undefined) {
    if (!Array.isArray(s.servos) || s.servos.length > MAX_STATE_PWM) return { ok: false, msg: 's.servos must be an array of up to ' + MAX_STATE_PWM };
    out.servos = [];
    for (let i = 0; i < s.servos.length; i++) {
      const x: unknown = s.servos[i];
      if (!isObj(x) || !isStr(x.id, 32) || !isNum(x.move_ms) || !isNum(x.at) || (x.deg !== null && !isNum(x.deg)))
        return { ok: false, msg: 's.servos[] must have id (up to 32 chars), move_ms, at and deg (a number or null)' };
      out.servos.push({ id: x.id, deg: x.deg as number | null, move_ms: x.move_ms, at: x.at });
    }
  }
  return { ok: true, s: out };
}

/**
 * Validate a text frame arriving at the host and rebuild it from its known fields. Never throws.
 * `board`: the device's relays, which give the bits of a snapshot's `s.r` their meaning.
 */
export function parseToHost(text: unknown, board?: RelayDef[]): ToHostParse {
  const env = parseEnvelope(text);
  if (!env.ok) return env;
  const f = env.f;
  const t = f.t as string;
  const rid = typeof f.rid === 'string' ? f.rid : undefined;
  switch (t) {
    case 'hello':
      if (!isNum(f.v)) return bad(t, 'v must be the protocol version number');
      if (!isId(f.dev)) return bad(t, 'dev ' + ID_RULE);
      if (!isId(f.boot)) return bad(t, 'boot ' + ID_RULE);
      if (!isStr(f.fw, MAX_ID_LENGTH) || !isStr(f.board, MAX_ID_LENGTH)) return bad(t, 'fw and board must be strings of up to ' + MAX_ID_LENGTH + ' chars');
      if (typeof f.cn !== 'string' || f.cn.length < 16 || f.cn.length > 128) return bad(t, 'cn must be a nonce of 16-128 chars');
      return { ok: true, f: { t: t, v: f.v, dev: f.dev, boot: f.boot, fw: f.fw, board: f.board, cn: f.cn } };
    case 'auth':
      if (typeof f.mac !== 'string' || f.mac.length !== 64 || !/^[0-9a-f]+$/.test(f.mac)) return bad(t, 'mac must be 64 lowercase hex chars');
      return { ok: true, f: { t: t, mac: f.mac } };
    case 'ack':
      if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if (f.st !== 'accepted' && f.st !== 'running') return bad(t, 'st must be "accepted" or "running"', rid);
      return { ok: true, f: { t: t, rid: f.rid, st: f.st } };
    case 'prog': {
      if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if (!isNum(f.pct) || f.pct < 0 || f.pct > 100) return bad(t, 'pct must be 0..100', rid);
      if (!optMsg(f.msg)) return bad(t, 'msg must be a string of up to ' + MAX_MSG_LENGTH + ' chars', rid);
      if (f.pos !== undefined && !isNum(f.pos)) return bad(t, 'pos must be a number (mm)', rid);
      const p: ProgressFrame = { t: t, rid: f.rid, pct: f.pct };
      if (f.pos !== undefined) p.pos = f.pos as number;
      if (f.msg !== undefined) p.msg = f.msg as string;
      return { ok: true, f: p };
    }
    case 'res': {
      if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if ((DEVICE_RESULT_STATES as readonly unknown[]).indexOf(f.st) < 0) return bad(t, 'st must be one of ' + DEVICE_RESULT_STATES.join(', '), rid);
      if ((EVIDENCE_KINDS as readonly unknown[]).indexOf(f.ev) < 0) return bad(t, 'ev must be one of ' + EVIDENCE_KINDS.join(', '), rid);
      if (typeof f.ver !== 'boolean') return bad(t, 'ver must be a boolean', rid);
      if (f.ver && f.ev === 'none') return bad(t, 'ver cannot be true without evidence', rid);
      if (f.st === 'completed' && !f.ver) return bad(t, 'completed requires verified evidence', rid);
      if (f.code !== undefined && !isErrorCode(f.code)) return bad(t, 'code must be a known error code', rid);
      if ((f.st === 'failed' || f.st === 'rejected') && f.code === undefined) return bad(t, f.st + ' requires an error code', rid);
      if (!optMsg(f.msg)) return bad(t, 'msg must be a string of up to ' + MAX_MSG_LENGTH + ' chars', rid);
      if (!isNum(f.ms)) return bad(t, 'ms must be a number', rid);
      const st = readState(f.s, board);
      if (!st.ok) return bad(t, st.msg, rid);
      const r: ResultFrame = { t: t, rid: f.rid, st: f.st as DeviceResultState, ev: f.ev as Evidence, ver: f.ver, s: st.s, ms: f.ms };
      if (f.code !== undefined) r.code = f.code as ErrorCode;
      if (f.msg !== undefined) r.msg = f.msg as string;
      return { ok: true, f: r };
    }
    case 'state': {
      if (!isId(f.q)) return bad(t, 'q ' + ID_RULE);
      const st = readState(f.s, board);
      if (!st.ok) return bad(t, st.msg);
      if (f.rid !== undefined && !isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if (f.rst !== undefined && f.rst !== 'running' && f.rst !== 'done' && f.rst !== 'unknown') return bad(t, 'rst must be running, done or unknown');
      const o: StateFrame = { t: t, q: f.q, s: st.s };
      if (f.rid !== undefined) o.rid = f.rid as string;
      if (f.rst !== undefined) o.rst = f.rst as StateFrame['rst'];
      return { ok: true, f: o };
    }
    case 'evt': {
      if (!isId(f.id)) return bad(t, 'id ' + ID_RULE);
      if ((DEVICE_EVENT_KINDS as readonly unknown[]).indexOf(f.k) < 0) return bad(t, 'k must be one of ' + DEVICE_EVENT_KINDS.join(', '), f.id);
      if (f.ch !== undefined && !isNum(f.ch)) return bad(t, 'ch must be a number', f.id);
      if (!isStr(f.msg, MAX_MSG_LENGTH)) return bad(t, 'msg must be a string of up to ' + MAX_MSG_LENGTH + ' chars', f.id);
      const st = readState(f.s, board);
      if (!st.ok) return bad(t, st.msg, f.id);
      const ev: EventFrame = { t: t, id: f.id, k: f.k as DeviceEventKind, msg: f.msg, s: st.s };
      if (f.ch !== undefined) ev.ch = f.ch as number;
      return { ok: true, f: ev };
    }
    case 'hb': {
      if (!isNum(f.up)) return bad(t, 'up must be a number');
      if (f.free !== undefined && !isNum(f.free)) return bad(t, 'free must be a number');
      if (f.bad !== undefined && !isNum(f.bad)) return bad(t, 'bad must be a number');
      const h: DeviceHeartbeatFrame = { t: t, up: f.up };
      if (f.free !== undefined) h.free = f.free as number;
      if (f.bad !== undefined) h.bad = f.bad as number;
      return { ok: true, f: h };
    }
    case 'err': {
      const e = checkErr(f);
      if (e) return e;
      const o: DeviceErrorFrame = { t: t, code: f.code as ErrorCode, msg: f.msg as string };
      if (f.ref !== undefined) o.ref = f.ref as string;
      return { ok: true, f: o };
    }
    default:
      return { ok: false, code: 'UNKNOWN_FRAME', msg: 'unknown frame type ' + echo(t) };
  }
}
