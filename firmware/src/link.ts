// The session with the host over ws.ts: hello → chal → auth → ok, then heartbeats, liveness and
// delivery of validated frames to the executor. Owns reconnection: exactly one reconnect timer,
// back-off 250 ms doubling to 10 s with ±20 % jitter, reset by a successful `ok`.
import type { RigConfig, ToDeviceFrame } from '@proofrig/protocol';
import { authMessage, clip, LIVENESS_MISSES, PROTOCOL_VERSION, parseToDevice } from '@proofrig/protocol';
import { wsClose, wsInit, wsIsOpen, wsOpen, wsRxAt, wsSend } from './ws';
import { hmacSha256Hex } from './sha256';
import { r32, randHex } from './rand';
import { nowMs, upMs } from './clock';

const BACKOFF_MIN = 250;
const BACKOFF_MAX = 10000;
/** From starting a connection to the host's `ok`. */
const HANDSHAKE_MS = 10000;

/** 0 no session, 1 hello sent, 2 auth sent, 3 up (after `ok`). */
let ph = 0;
let C: RigConfig;
let boot = '';
let cn = '';
let hb = 0;
let backoff = BACKOFF_MIN;
let onFrame: (f: ToDeviceFrame) => void;
let onUp: () => void;
let reT: TimerId | undefined;
let hsT: TimerId | undefined;
let hbT: TimerId | undefined;
let lvT: TimerId | undefined;

function log(s: string): void {
  console.log('proofrig link: ' + s);
}

/** Send a frame object if the WebSocket is open (any phase). */
export function linkSend(o: object): void {
  if (wsIsOpen()) wsSend(JSON.stringify(o));
}

/** Send an already serialised frame if the WebSocket is open. */
export function linkSendJson(j: string): void {
  if (wsIsOpen()) wsSend(j);
}

/** Authenticated and welcomed: commands flow. */
export function linkUp(): boolean {
  return ph === 3;
}

function stopTimers(): void {
  if (hsT !== undefined) clearTimeout(hsT);
  if (hbT !== undefined) clearInterval(hbT);
  if (lvT !== undefined) clearTimeout(lvT);
  hsT = hbT = lvT = undefined;
}

function connect(): void {
  reT = undefined;
  ph = 0;
  hsT = setTimeout(handshakeTimeout, HANDSHAKE_MS);
  if (!wsOpen(C.host)) down('could not open a socket to ' + C.host, false);
}

function schedule(): void {
  if (reT !== undefined) return;
  const d = Math.round(backoff * (0.8 + 0.4 * (r32() / 4294967296)));
  backoff = Math.min(backoff * 2, BACKOFF_MAX);
  reT = setTimeout(connect, d);
  log('reconnecting in ' + d + ' ms');
}

/** End this connection (if any) and schedule the one reconnect. */
function down(why: string, long: boolean): void {
  log('down: ' + why);
  if (long) backoff = BACKOFF_MAX;
  ph = 0;
  stopTimers();
  wsClose();
  schedule();
}

function handshakeTimeout(): void {
  hsT = undefined;
  down('no welcome from the host within ' + HANDSHAKE_MS + ' ms', false);
}

function livenessCheck(): void {
  lvT = undefined;
  const idle = nowMs() - wsRxAt();
  const lim = hb * LIVENESS_MISSES;
  if (idle >= lim) down('nothing from the host for ' + Math.round(idle) + ' ms', false);
  else lvT = setTimeout(livenessCheck, lim - idle);
}

function beat(): void {
  const o: Record<string, unknown> = { t: 'hb', up: upMs() };
  const p = typeof process !== 'undefined' ? (process as unknown as EspProcess) : undefined;
  if (p && p.memory) o.free = p.memory().free;
  linkSend(o);
}

function opened(): void {
  ph = 1;
  cn = randHex(32);
  linkSend({ t: 'hello', v: PROTOCOL_VERSION, dev: C.dev, boot: boot, fw: __FW_VERSION__, board: C.board.id, cn: cn });
}

function welcomed(period: number): void {
  ph = 3;
  backoff = BACKOFF_MIN;
  hb = period;
  if (hsT !== undefined) clearTimeout(hsT);
  hsT = undefined;
  hbT = setInterval(beat, hb);
  lvT = setTimeout(livenessCheck, hb * LIVENESS_MISSES);
  log('up');
  onUp();
}

function answerBad(code: string, msg: string, ref?: string): void {
  const e: Record<string, unknown> = { t: 'err', code: code, msg: msg };
  if (ref !== undefined) e.ref = ref;
  linkSend(e);
}

function dispatch(s: string): void {
  const r = parseToDevice(s);
  if (!r.ok) {
    answerBad(r.code, r.msg, r.ref);
    // Before the host is known, one bad frame ends the connection: no answer storm.
    if (ph !== 3) down('bad frame before the welcome', false);
    return;
  }
  const f = r.f;
  if (f.t === 'err') {
    log('host says ' + f.code + ': ' + clip(f.msg, 200));
    if (f.code === 'AUTH_FAILED' || f.code === 'PROTOCOL_VERSION') down('refused by the host', true);
  } else if (f.t === 'chal') {
    if (ph !== 1) return;
    ph = 2;
    linkSend({ t: 'auth', mac: hmacSha256Hex(C.secret, authMessage(C.dev, boot, cn, f.sn)) });
  } else if (f.t === 'ok') {
    if (ph === 2) welcomed(f.hb);
  } else if (ph === 3 && f.t !== 'hb') {
    try {
      onFrame(f);
    } catch (e) {
      const o: Record<string, unknown> = { t: 'err', code: 'INTERNAL', msg: 'device failed handling ' + f.t + ': ' + clip('' + e, 200) };
      if (f.t === 'cmd' || f.t === 'rack') o.ref = f.rid;
      linkSend(o);
    }
  }
}

/** Every text frame: parse and dispatch never take the link down by throwing. */
function text(s: string): void {
  try {
    dispatch(s);
  } catch (e) {
    answerBad('INTERNAL', 'device failed reading a frame: ' + clip('' + e, 200));
  }
}

function closed(why: string): void {
  down(why, false);
}

/** Start the session loop; frames from a welcomed host go to frame(), up() runs on every `ok`. */
export function linkStart(cfg: RigConfig, bootId: string, frame: (f: ToDeviceFrame) => void, up: () => void): void {
  C = cfg;
  boot = bootId;
  onFrame = frame;
  onUp = up;
  wsInit(opened, text, closed);
  connect();
}
