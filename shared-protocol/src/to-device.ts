// Frames the host sends to a device, and the validator the firmware runs on them.
import type { ErrorCode } from './codes.js';
import type { ActionName } from './actions.js';
import type { FrameError } from './check.js';
import { bad, checkErr, echo, ID_RULE, isId, isNum, isObj, parseEnvelope } from './check.js';
import { PROTOCOL_VERSION } from './constants.js';

/** Sent after `hello`: prove you hold the device secret by MACing this nonce. */
export interface ChallengeFrame { t: 'chal'; v: number; sn: string }
/**
 * Sent after a valid `auth`: heartbeat every `hb` ms. `mac` = HMAC-SHA256(secret,
 * hostProofMessage(dev, boot, cn, sn, hb)) in lowercase hex: the host's proof that it knows the
 * secret; the device goes up only when it checks out.
 */
export interface WelcomeFrame { t: 'ok'; hb: number; mac: string }
/**
 * Execute an action. `rid` is the request_id: a repeat never executes twice. `k`, when present, is a
 * `rack` riding along (the host journaled the result of request `k`): the device drops that result from
 * its outbox before it looks at this command, as if a `rack` frame had come first.
 */
export interface CommandFrame { t: 'cmd'; rid: string; a: ActionName; p: Record<string, unknown>; k?: string }
/**
 * The host has journaled the result of `rid`: drop it from the outbox. It may wait up to the host's
 * RACK_RIDE_MS (20 ms) to share a socket write with the next frame to the device; it always comes
 * before that frame, and inside it (`k`) when that frame is a `cmd`.
 */
export interface ResultAckFrame { t: 'rack'; rid: string }
/** Report your state now (a `state` frame with the same `q`); with `rid`, also that command's status. */
export interface QueryFrame { t: 'q'; q: string; rid?: string }
/**
 * Heartbeat. With `ack`, the host's immediate answer to the device's `ack` or `prog` of that rid: the device
 * ignores it, but the data segment carries the TCP ACK of the `ack` at once. Without it the device's
 * Nagle (lwIP has it on; Espruino sets no TCP_NODELAY) holds the `res` that follows until the host's
 * delayed ACK (~40 ms on Linux). One answer covers every frame of one read (it names the newest); an
 * ack whose `res` came in the same read gets none (nothing is held; the `rack`, at most RACK_RIDE_MS
 * later, carries the ACK).
 */
export interface HostHeartbeatFrame { t: 'hb'; ack?: string }
export interface ErrorFrame { t: 'err'; code: ErrorCode; msg: string; ref?: string }

export type ToDeviceFrame =
  | ChallengeFrame
  | WelcomeFrame
  | CommandFrame
  | ResultAckFrame
  | QueryFrame
  | HostHeartbeatFrame
  | ErrorFrame;

export type ToDeviceParse = { ok: true; f: ToDeviceFrame } | FrameError;

/** Validate a text frame arriving at the device. Never throws. */
export function parseToDevice(text: unknown): ToDeviceParse {
  const env = parseEnvelope(text);
  if (!env.ok) return env;
  const f = env.f;
  const t = f.t as string;
  // The frames of every command (cmd, the host's hb answer to its ack, rack) are checked first with
  // no switch: Espruino lexes through every case it skips, on every frame.
  if (t === 'cmd') {
    if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
    if (typeof f.a !== 'string' || f.a.length === 0 || f.a.length > 32) return bad(t, 'a must name an action (up to 32 chars)', f.rid as string);
    if (!isObj(f.p)) return bad(t, 'p must be an object of arguments', f.rid as string);
    if (f.k !== undefined && !isId(f.k)) return bad(t, 'k (a rack riding along) ' + ID_RULE, f.rid as string);
  } else if (t === 'hb') {
    if (f.ack !== undefined && !isId(f.ack)) return bad(t, 'ack ' + ID_RULE);
  } else if (t === 'rack') {
    if (!isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
  } else return parseRare(f, t);
  return { ok: true, f: f as unknown as ToDeviceFrame };
}

/** The frames that are not part of every command: handshake, queries, errors, unknown types. */
function parseRare(f: Record<string, unknown>, t: string): ToDeviceParse {
  switch (t) {
    case 'chal':
      if (f.v !== PROTOCOL_VERSION) return bad(t, 'protocol version ' + echo(f.v) + ' is not ' + PROTOCOL_VERSION);
      if (typeof f.sn !== 'string' || f.sn.length < 16 || f.sn.length > 128) return bad(t, 'sn must be a nonce of 16-128 chars');
      break;
    case 'ok':
      if (!isNum(f.hb) || f.hb < 50 || f.hb > 600000) return bad(t, 'hb must be a heartbeat period of 50..600000 ms');
      if (typeof f.mac !== 'string' || f.mac.length !== 64 || !/^[0-9a-f]+$/.test(f.mac)) return bad(t, 'mac must be 64 lowercase hex chars');
      break;
    case 'q':
      if (!isId(f.q)) return bad(t, 'q ' + ID_RULE);
      if (f.rid !== undefined && !isId(f.rid)) return bad(t, 'rid ' + ID_RULE);
      break;
    case 'err': {
      const e = checkErr(f);
      if (e) return e;
      break;
    }
    default:
      return { ok: false, code: 'UNKNOWN_FRAME', msg: 'unknown frame type ' + echo(t) };
  }
  return { ok: true, f: f as unknown as ToDeviceFrame };
}
