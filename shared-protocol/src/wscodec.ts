// RFC 6455 framing and the HTTP upgrade, as pure functions over byte strings (one char per
// byte). No sockets here: the firmware's ws.ts drives them, the simulator's WebSocket fabric
// (sim/src/fabric.ts) frames with them too, the tests call them directly. A subpath of the
// protocol package (@proofrig/protocol/wscodec): the firmware bundles it, the host does not need it.

/**
 * The parts of Espruino's global `E` the codec uses, when there is one (on the chip, and in the
 * simulator's vm context); in Node there is none and the codec works on plain strings instead.
 */
declare const E:
  | {
      toString(data: ArrayBuffer | Uint8Array): string;
      toUint8Array?: (s: string) => Uint8Array;
      toArrayBuffer?: (s: string) => ArrayBuffer;
    }
  | undefined;

export const OP_CONT = 0;
export const OP_TEXT = 1;
export const OP_CLOSE = 8;
export const OP_PING = 9;
export const OP_PONG = 10;

/** Largest payload either direction: 7-bit and 16-bit lengths only. */
export const WS_MAX = 65535;

/** Result of ws decoding, filled in place (one object reused for every frame). */
export interface WsFrame {
  /** FIN bit. */
  fin: boolean;
  op: number;
  /** Payload bytes, unmasked. */
  d: string;
}

/** Decode needs more bytes. */
export const WS_MORE = 0;
/** The frame declares a 64-bit length: more than this client accepts (answer close 1009). */
export const WS_TOO_BIG = -1;
/** Reserved bits set, or a control frame that is fragmented or longer than 125 (close 1002). */
export const WS_BAD = -2;

/** 16 zero bytes: wsMask pads with PAD.substr(n & 15) to a multiple of 16. */
const PAD = '\0'.repeat(16);

/**
 * Does E.toArrayBuffer give a view of the string itself (Espruino: a reference, so writes through a
 * typed array change the string) rather than of a copy (the vm simulation)? Masking through a flat
 * copy (E.toUint8Array, then E.toString) cost much of the firmware's instructions per relay command,
 * mostly in finding room for the flat buffers (docs/performance.md, "Measurements behind the code").
 */
export const IN_PLACE = ((): boolean => {
  if (typeof E === 'undefined' || !E.toArrayBuffer) return false;
  const c = PAD.substr(0, 4) + PAD.substr(0, 4);
  new Uint8Array(E.toArrayBuffer(c))[0] = 65;
  return c.charCodeAt(0) === 65;
})();

/**
 * XOR bytes of d with the 4-byte key found at k[o..o+3] (WebSocket masking, HMAC key pads). On
 * Espruino, four bytes at a time in a Uint32Array with native conversions: a per-byte loop took
 * longer than everything else a frame costs (docs/performance.md, "Measurements behind the code").
 */
export function wsMask(d: string, k: string, o: number): string {
  const n = d.length;
  // Little-endian (ESP32, x86): byte j of a word is key byte j.
  const m = k.charCodeAt(o) | (k.charCodeAt(o + 1) << 8) | (k.charCodeAt(o + 2) << 16) | (k.charCodeAt(o + 3) << 24);
  if (IN_PLACE) {
    // A fresh copy padded to whole 16-byte blocks, XORed in place through a word view of the string
    // itself (E.toArrayBuffer references it): no flat buffer to allocate, no copy back.
    const c = d + PAD.substr(n & 15);
    const w = new Int32Array((E!.toArrayBuffer as (s: string) => ArrayBuffer)(c));
    const L = w.length;
    for (let i = 0; i < L; i += 4) {
      w[i] ^= m;
      w[i + 1] ^= m;
      w[i + 2] ^= m;
      w[i + 3] ^= m;
    }
    return c.substr(0, n);
  }
  if (typeof E !== 'undefined' && E.toUint8Array) {
    const a = E.toUint8Array(n & 15 ? d + PAD.substr(n & 15) : d);
    const w = new Uint32Array(a.buffer);
    const L = w.length;
    for (let i = 0; i < L; i += 4) {
      w[i] ^= m;
      w[i + 1] ^= m;
      w[i + 2] ^= m;
      w[i + 3] ^= m;
    }
    const r = E.toString(a);
    return n & 15 ? r.substr(0, n) : r;
  }
  let r = '';
  for (let i = 0; i < n; i++) r += String.fromCharCode(d.charCodeAt(i) ^ k.charCodeAt(o + (i & 3)));
  return r;
}

/**
 * Encode one final frame. The payload is bytes (UTF-8 already applied for text); with a 4-byte
 * mask the frame is masked, as every client→server frame must be. Returns '' when the payload
 * is longer than WS_MAX.
 */
export function wsEncode(op: number, d: string, mask: string): string {
  const n = d.length;
  if (n > WS_MAX) return '';
  const m = mask.length === 4;
  const h = wsHead(op, n, m);
  return m ? h + mask + wsMask(d, mask, 0) : h + d;
}

/** The header of one final frame of n payload bytes (n ≤ WS_MAX), with the mask bit when masked (the 4-byte key follows it). */
export function wsHead(op: number, n: number, masked: boolean): string {
  const m = masked ? 0x80 : 0;
  return String.fromCharCode(0x80 | op) + (n < 126 ? String.fromCharCode(m | n) : String.fromCharCode(m | 126, n >> 8, n & 255));
}

/** Payload length the frame header at the start of b declares, or -1 while the header is incomplete or not a plain length. */
export function wsLen(b: string): number {
  if (b.length < 2) return -1;
  const len = b.charCodeAt(1) & 127;
  if (len < 126) return len;
  if (len === 127 || b.length < 4) return -1;
  return (b.charCodeAt(2) << 8) | b.charCodeAt(3);
}

/**
 * Decode the frame at the start of b into out. Returns the number of bytes it took (> 0),
 * WS_MORE when b holds only part of a frame, or WS_TOO_BIG / WS_BAD.
 */
export function wsDecode(b: string, out: WsFrame): number {
  const n = b.length;
  if (n < 2) return WS_MORE;
  const b0 = b.charCodeAt(0);
  const b1 = b.charCodeAt(1);
  const op = b0 & 15;
  let len = b1 & 127;
  if (b0 & 0x70) return WS_BAD;
  if (op >= 8 && (len > 125 || !(b0 & 0x80))) return WS_BAD;
  let p = 2;
  if (len === 127) return WS_TOO_BIG;
  if (len === 126) {
    if (n < 4) return WS_MORE;
    len = (b.charCodeAt(2) << 8) | b.charCodeAt(3);
    p = 4;
  }
  const mk = p;
  if (b1 & 0x80) p += 4;
  if (n < p + len) return WS_MORE;
  out.fin = (b0 & 0x80) !== 0;
  out.op = op;
  out.d = b1 & 0x80 ? wsMask(b.substr(p, len), b, mk) : b.substr(p, len);
  return p + len;
}

export interface WsUrl {
  h: string;
  p: number;
  path: string;
}

/** Parse ws://HOST[:PORT][/PATH]; null when it is not such a URL (wss is not supported). */
export function wsUrl(u: unknown): WsUrl | null {
  if (typeof u !== 'string' || u.substr(0, 5) !== 'ws://') return null;
  const r = u.substr(5);
  const s = r.indexOf('/');
  const hp = s < 0 ? r : r.substr(0, s);
  const c = hp.indexOf(':');
  const h = c < 0 ? hp : hp.substr(0, c);
  const ps = c < 0 ? '80' : hp.substr(c + 1);
  const p = parseInt(ps, 10);
  if (!h || String(p) !== ps || p < 1 || p > 65535) return null;
  return { h: h, p: p, path: s < 0 ? '/' : r.substr(s) };
}

/** The HTTP/1.1 upgrade request; key is the base64 Sec-WebSocket-Key. */
export function wsRequest(u: WsUrl, key: string): string {
  return (
    'GET ' + u.path + ' HTTP/1.1\r\nHost: ' + u.h + ':' + u.p +
    '\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ' + key +
    '\r\nSec-WebSocket-Version: 13\r\n\r\n'
  );
}

/**
 * Look at the upgrade response accumulated so far: 0 while the header is incomplete, -1 when
 * the status is not 101, else the header length (frames may follow it in the same buffer).
 * Sec-WebSocket-Accept is not verified: that needs SHA-1, which the chip may not have, and it
 * only guards against non-WebSocket servers answering 101 by mistake.
 */
export function wsResponse(b: string): number {
  const e = b.indexOf('\r\n\r\n');
  if (e < 0) return 0;
  const l = b.substr(0, b.indexOf('\r\n')).split(' ');
  return l[0].substr(0, 7) === 'HTTP/1.' && l[1] === '101' ? e + 4 : -1;
}
