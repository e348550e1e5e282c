// Frames a device sends to the host, and the validator the host runs on them.
import type { ErrorCode } from './codes.js';
import { isErrorCode } from './codes.js';
import type { DeviceResultState, Evidence } from './states.js';
import { DEVICE_RESULT_STATES, EVIDENCE_KINDS } from './states.js';
import type { DeviceState } from './state.js';
import type { FrameError } from './check.js';
import { bad, checkErr, ID_RULE, isId, isNum, isObj, optStr, parseEnvelope } from './check.js';

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
export interface DeviceHeartbeatFrame { t: 'hb'; up: number; free?: number }
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

function checkState(s: unknown): string | null {
  if (!isObj(s)) return 's must be a state object';
  if (!isNum(s.up)) return 's.up must be a number';
  if (!Array.isArray(s.relays)) return 's.relays must be an array';
  for (const r of s.relays as unknown[]) {
    if (!isObj(r) || !isNum(r.ch)) return 's.relays[] must be objects with a numeric ch';
    for (const k of ['cmd', 'pin', 'aux']) if (r[k] !== null && typeof r[k] !== 'boolean') return 's.relays[].' + k + ' must be boolean or null';
  }
  if (s.axes !== undefined) {
    if (!Array.isArray(s.axes)) return 's.axes must be an array';
    for (const a of s.axes as unknown[]) {
      if (!isObj(a) || typeof a.axis !== 'string' || !isNum(a.pos) || !isNum(a.cmd)) return 's.axes[] must have axis, pos and cmd';
      for (const k of ['moving', 'homed', 'fault', 'home', 'limit']) if (typeof a[k] !== 'boolean') return 's.axes[].' + k + ' must be a boolean';
    }
  }
  if (s.estop !== undefined && typeof s.estop !== 'boolean') return 's.estop must be a boolean';
  return null;
}

/** Validate a text frame arriving at the host. Never throws. */
export function parseToHost(text: unknown): ToHostParse {
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
      if (typeof f.fw !== 'string' || typeof f.board !== 'string') return bad(t, 'fw and board must be strings');
      if (typeof f.cn !== 'string' || f.cn.length < 16 || f.cn.length > 128) return bad(t, 'cn must be a nonce of 16-128 chars');
      break;
    case 'auth':
      if (typeof f.mac !== 'string' || !/^[0-9a-f]{64}$/.test(f.mac)) return bad(t, 'mac must be 64 lowercase hex chars');
      break;
    case 'ack':
      if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if (f.st !== 'accepted' && f.st !== 'running') return bad(t, 'st must be "accepted" or "running"', rid);
      break;
    case 'prog':
      if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if (!isNum(f.pct) || f.pct < 0 || f.pct > 100) return bad(t, 'pct must be 0..100', rid);
      if (!optStr(f.msg)) return bad(t, 'msg must be a string', rid);
      if (f.pos !== undefined && !isNum(f.pos)) return bad(t, 'pos must be a number (mm)', rid);
      break;
    case 'res': {
      if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if ((DEVICE_RESULT_STATES as readonly unknown[]).indexOf(f.st) < 0) return bad(t, 'st must be one of ' + DEVICE_RESULT_STATES.join(', '), rid);
      if ((EVIDENCE_KINDS as readonly unknown[]).indexOf(f.ev) < 0) return bad(t, 'ev must be one of ' + EVIDENCE_KINDS.join(', '), rid);
      if (typeof f.ver !== 'boolean') return bad(t, 'ver must be a boolean', rid);
      if (f.ver && f.ev === 'none') return bad(t, 'ver cannot be true without evidence', rid);
      if (f.st === 'completed' && !f.ver) return bad(t, 'completed requires verified evidence', rid);
      if (f.code !== undefined && !isErrorCode(f.code)) return bad(t, 'code ' + String(f.code) + ' is not a known error code', rid);
      if ((f.st === 'failed' || f.st === 'rejected') && f.code === undefined) return bad(t, f.st + ' requires an error code', rid);
      if (!optStr(f.msg)) return bad(t, 'msg must be a string', rid);
      if (!isNum(f.ms)) return bad(t, 'ms must be a number', rid);
      const e = checkState(f.s);
      if (e) return bad(t, e, rid);
      break;
    }
    case 'state': {
      if (!isId(f.q)) return bad(t, 'q ' + ID_RULE);
      const e = checkState(f.s);
      if (e) return bad(t, e);
      if (f.rid !== undefined && !isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      if (f.rst !== undefined && f.rst !== 'running' && f.rst !== 'done' && f.rst !== 'unknown') return bad(t, 'rst must be running, done or unknown');
      break;
    }
    case 'evt': {
      if (!isId(f.id)) return bad(t, 'id ' + ID_RULE);
      if ((DEVICE_EVENT_KINDS as readonly unknown[]).indexOf(f.k) < 0) return bad(t, 'k must be one of ' + DEVICE_EVENT_KINDS.join(', '), f.id);
      if (f.ch !== undefined && !isNum(f.ch)) return bad(t, 'ch must be a number', f.id);
      if (typeof f.msg !== 'string') return bad(t, 'msg must be a string', f.id);
      const e = checkState(f.s);
      if (e) return bad(t, e, f.id);
      break;
    }
    case 'hb':
      if (!isNum(f.up)) return bad(t, 'up must be a number');
      if (f.free !== undefined && !isNum(f.free)) return bad(t, 'free must be a number');
      break;
    case 'err': {
      const e = checkErr(f);
      if (e) return e;
      break;
    }
    default:
      return { ok: false, code: 'UNKNOWN_FRAME', msg: 'unknown frame type "' + t.slice(0, 32) + '"' };
  }
  return { ok: true, f: f as unknown as ToHostFrame };
}
