// The session with the host over ws.ts: hello → chal → auth → ok, then heartbeats, liveness and
// delivery of validated frames to the executor. The host must prove the secret in its `ok` before
// the link goes up; from then on every frame both ways is sealed with the session key and a
// per-direction counter (@proofrig/protocol seal.ts), and one that is not is refused, counted
// (`bad` in hb) and never acted on. Owns reconnection: exactly one reconnect timer, back-off
// 250 ms doubling to 10 s with ±20 % jitter, reset by a successful `ok`.
import type { DeviceErrorFrame, DeviceHeartbeatFrame, ErrorCode, RigConfig, StateFrame, ToDeviceFrame, ToHostFrame, WireFrame } from '@proofrig/protocol';
import {
  authMessage, DEVICE_DIR, HOST_DIR, hostProofMessage, LIVENESS_MISSES, MAC_BYTES, macInput, PROTOCOL_VERSION,
  parseToDevice, clip, counterOf, seal, SEAL_TAIL, sessionKeyMessage, unseal, withCounter,
} from '@proofrig/protocol';
import { wsClose, wsCtlAt, wsInit, wsIsOpen, wsOpen, wsSend } from './ws';
import type { HmacKey } from './sha256';
import { hmac, hmacKey, same, toHex } from './sha256';
import { JSON_ESCAPES, utf8Dec, utf8Enc } from './utf8';
import { r32 } from './rand';
import { nonce, secretKey } from './ident';
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
let sn = '';
/** Session key of this connection, and the frame counters: last sent, last accepted. */
let FK: HmacKey | undefined;
let txN = 0;
let rxN = 0;
/** Frames refused on this connection (bad seal, MAC or counter). */
let bad = 0;
/**
 * When the last frame from the host was accepted. Liveness counts only these: one lost frame puts the
 * counters out of step for good, and a link whose every frame is refused must be reconnected, not
 * kept alive by the refusals (chaos seed 92: a host heartbeat lost on the wire left the device
 * refusing every command for minutes while both sides kept the connection).
 */
let okAt = 0;
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

/** HMAC(secret, m) in hex: the handshake's proofs. */
function proof(m: string): string {
  return toHex(hmac(secretKey(), utf8Enc(m)));
}

/** The frame MAC of a body given as its UTF-8 bytes, in one direction. */
function fmac(dir: string, bytes: string): string {
  return btoa(hmac(FK as HmacKey, macInput(dir, bytes)).substr(0, MAC_BYTES));
}

/** Send an already serialised frame if the WebSocket is open; sealed once the link is up. */
export function sessionSendJson(j: string): void {
  if (!wsIsOpen()) return;
  // j always comes from JSON.stringify: where that escapes every non-ASCII char (Espruino) it is its own UTF-8.
  if (ph !== 3) {
    wsSend(JSON_ESCAPES ? j : utf8Enc(j));
    return;
  }
  // The counter is spent only once the MAC exists: a MAC that fails (out of memory) must not leave
  // a gap the host would take for a lost frame and refuse everything after.
  const b = JSON_ESCAPES ? withCounter(j, txN + 1) : utf8Enc(withCounter(j, txN + 1));
  const sealed = seal(b, fmac(DEVICE_DIR, b));
  txN++;
  wsSend(sealed);
}

/** Send a frame object if the WebSocket is open (any phase). */
export function sessionSend(o: ToHostFrame | WireFrame<StateFrame>): void {
  sessionSendJson(JSON.stringify(o));
}

/** Authenticated and welcomed: commands flow. */
export function sessionUp(): boolean {
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
  FK = undefined;
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
  FK = undefined;
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
  const idle = nowMs() - Math.max(okAt, wsCtlAt());
  const lim = hb * LIVENESS_MISSES;
  if (idle >= lim) down('nothing from the host for ' + Math.round(idle) + ' ms', false);
  // At least 1 ms: a remainder of a fraction of a microsecond re-armed the check at the same
  // instant, forever on a clock that does not move between callbacks (chaos seed 260).
  else lvT = setTimeout(livenessCheck, Math.max(1, lim - idle));
}

function beat(): void {
  const o: DeviceHeartbeatFrame = { t: 'hb', up: upMs() };
  const p = typeof process !== 'undefined' ? (process as unknown as EspProcess) : undefined;
  // memory(false): no garbage collection per heartbeat (a GC pass costs milliseconds on the chip).
  if (p && p.memory) o.free = p.memory(false).free;
  if (bad) o.bad = bad;
  sessionSend(o);
}

function opened(): void {
  ph = 1;
  cn = nonce();
  sessionSend({ t: 'hello', v: PROTOCOL_VERSION, dev: C.dev, boot: boot, fw: __FW_VERSION__, board: C.board.id, cn: cn });
}

function welcomed(period: number): void {
  FK = hmacKey(hmac(secretKey(), utf8Enc(sessionKeyMessage(C.dev, boot, cn, sn))));
  txN = rxN = bad = 0;
  okAt = nowMs();
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

function answerBad(code: ErrorCode, msg: string, ref?: string): void {
  const e: DeviceErrorFrame = { t: 'err', code: code, msg: msg };
  if (ref !== undefined) e.ref = ref;
  sessionSend(e);
}

/** A frame that is not the next sealed frame from the host: refused, counted, never acted on. */
function refused(why: string): void {
  bad++;
  if (!(bad & (bad - 1))) log('refused ' + bad + ' frame(s) from the host; last: ' + why);
}

/** A frame with the host's MAC and a later counter: one was lost, and every later one would be refused too. */
const LOST = 'a frame from the host was lost';

/** Why s (UTF-8 bytes) is not the next sealed frame from the host, or '' when it is. */
function unsealFail(s: string): string {
  const u = unseal(s);
  if (!u) return 'not sealed';
  if (!same(u.mac, fmac(HOST_DIR, u.body))) return 'bad MAC';
  const n = counterOf(u.body);
  if (n !== rxN + 1) return n > rxN + 1 ? LOST : 'counter is not ' + (rxN + 1);
  return '';
}

/** A command, rack or query from the welcomed host to the executor; what it throws is answered, not raised. */
function deliver(f: ToDeviceFrame): void {
  try {
    onFrame(f);
  } catch (e) {
    const o: DeviceErrorFrame = { t: 'err', code: 'INTERNAL', msg: 'device failed handling ' + f.t + ': ' + clip('' + e, 200) };
    if (f.t === 'cmd' || f.t === 'rack') o.ref = f.rid;
    sessionSend(o);
  }
}

function dispatch(s: string): void {
  if (ph === 3) {
    const why = unsealFail(s);
    if (why) {
      refused(why);
      // Reconnect now: the host re-syncs what it sent (chaos seed 3934 was the mirror case on the host).
      if (why === LOST) down(why, false);
      return;
    }
    rxN++;
    okAt = nowMs();
    s = s.substr(0, s.length - SEAL_TAIL) + '}';
  }
  s = utf8Dec(s);
  const r = parseToDevice(s);
  if (!r.ok) {
    answerBad(r.code, r.msg, r.ref);
    // Before the host is known, one bad frame ends the connection: no answer storm.
    if (ph !== 3) down('bad frame before the welcome', false);
    return;
  }
  const f = r.f;
  const t = f.t;
  // The frames of every command first: one test, then straight to the executor. The handshake's
  // frames are out of line: Espruino lexes a function's whole text at every call.
  if (t === 'cmd' || t === 'rack' || t === 'q') {
    if (ph === 3) deliver(f);
  } else if (t !== 'hb') handshake(f);
}

/** err, chal and ok from the host. */
function handshake(f: ToDeviceFrame): void {
  if (f.t === 'err') {
    log('host says ' + f.code + ': ' + clip(f.msg, 200));
    if (f.code === 'AUTH_FAILED' || f.code === 'PROTOCOL_VERSION') down('refused by the host', true);
  } else if (f.t === 'chal') {
    if (ph !== 1) return;
    ph = 2;
    sn = f.sn;
    sessionSend({ t: 'auth', mac: proof(authMessage(C.dev, boot, cn, sn)) });
  } else if (f.t === 'ok') {
    if (ph !== 2) return;
    if (same(f.mac, proof(hostProofMessage(C.dev, boot, cn, sn, f.hb)))) return welcomed(f.hb);
    const why = 'the host could not prove it knows the secret';
    sessionSend({ t: 'err', code: 'AUTH_FAILED', msg: why });
    down(why, true);
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

/** A frame too long for free memory was refused unread; its sealed counter cannot be checked, so a fresh session follows. */
function tooBig(n: number, need: number, free: number): void {
  answerBad('FRAME_TOO_LARGE', 'a frame of ' + n + ' bytes needs about ' + need + ' JsVars to receive and parse; ' + free + ' are free: refused unread');
  down('refused a frame of ' + n + ' bytes that does not fit in memory', false);
}

function closed(why: string): void {
  down(why, false);
}

/** Start the session loop; frames from a welcomed host go to frame(), up() runs on every `ok`. */
export function sessionStart(cfg: RigConfig, bootId: string, frame: (f: ToDeviceFrame) => void, up: () => void): void {
  C = cfg;
  boot = bootId;
  onFrame = frame;
  onUp = up;
  wsInit(opened, text, closed, tooBig);
  connect();
}
