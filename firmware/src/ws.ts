// The WebSocket client over Espruino's built-in net sockets: one connection at a time, text
// messages only. Reports open / text / close to one set of handlers (session.ts); a socket that was
// closed on purpose or replaced never reports anything again. Received text messages are handed
// over as their UTF-8 bytes (the session checks the MAC on exactly those bytes, then decodes).
import type { WsFrame, WsUrl } from '@proofrig/protocol/wscodec';
import {
  OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT, WS_MORE, WS_TOO_BIG,
  wsDecode, wsLen, wsRequest, wsResponse, wsUrl, WS_MAX,
} from '@proofrig/protocol/wscodec';
import { maskedFrame } from './mask';
import { MEM_CHECK_MIN, memFree, memNeed } from './mem';
import { randBytes } from './rand';
import { nowMs } from './clock';

/** Longest upgrade response header we wait for. */
const HDR_MAX = 2048;

let sk: EspSocket | undefined;
/** 0 no socket, 1 TCP connecting, 2 upgrade sent, 3 open. */
let st = 0;
let rx = '';
/** Text message being reassembled from fragments, and whether one is in progress. */
let frag = '';
let inFrag = false;
let url: WsUrl | null = null;
/** When bytes last arrived from the server (any frame, control frames included). */
let rxAt = 0;
/** When a ping or pong last arrived: a sign of life that carries no sealed frame. */
let ctlAt = 0;
const F: WsFrame = { fin: true, op: 0, d: '' };

let onOpen: () => void;
let onText: (s: string) => void;
let onClose: (why: string) => void;
let onBig: (n: number, need: number, free: number) => void;
/** Payload length of the frame at the head of rx once its header passed the memory check, else -1. */
let okLen = -1;

function log(s: string): void {
  console.log('proofrig ws: ' + s);
}

/** big(n, need, free): a text message of n bytes needs more JsVars than are free; it was not buffered. */
export function wsInit(open: () => void, text: (s: string) => void, close: (why: string) => void, big: (n: number, need: number, free: number) => void): void {
  onOpen = open;
  onText = text;
  onClose = close;
  onBig = big;
}

function raw(bytes: string): void {
  try {
    if (sk) sk.write(bytes);
  } catch (e) {
    log('write failed: ' + e);
  }
}

function ctl(op: number, payload: string): void {
  raw(maskedFrame(op, payload));
}

/** Close on purpose: a close frame if the link is open, then end the socket. No onClose. */
export function wsClose(code?: number): void {
  const s = sk;
  if (!s) return;
  if (st === 3) ctl(OP_CLOSE, String.fromCharCode((code || 1000) >> 8, (code || 1000) & 255));
  sk = undefined;
  st = 0;
  rx = '';
  frag = '';
  inFrag = false;
  okLen = -1;
  try {
    s.end();
  } catch (e) {
    log('end failed: ' + e);
  }
}

/** The connection died or broke the protocol: close it and tell the link once. */
function dead(why: string, code?: number): void {
  wsClose(code);
  onClose(why);
}

/** Send a text message given as its UTF-8 bytes. false when the link is not open or the message is over 65535 bytes. */
export function wsSend(bytes: string): boolean {
  if (st !== 3) return false;
  if (bytes.length > WS_MAX) {
    log('message of ' + bytes.length + ' bytes is too long for one frame; not sent');
    return false;
  }
  raw(maskedFrame(OP_TEXT, bytes));
  return true;
}

/** Time (ms) bytes last arrived on the current connection. */
export function wsRxAt(): number {
  return rxAt;
}

/** Time (ms) a ping or pong last arrived. */
export function wsCtlAt(): number {
  return ctlAt;
}

export function wsIsOpen(): boolean {
  return st === 3;
}

function frames(s: EspSocket): void {
  while (sk === s && rx.length) {
    if (okLen < 0) {
      // Refuse a message the device cannot afford as soon as its header says how long it is,
      // before its payload piles up in rx (fragments count with what came before).
      const L = wsLen(rx);
      if (L >= 0) {
        const m = L + (inFrag ? frag.length : 0);
        if (m >= MEM_CHECK_MIN) {
          const need = memNeed(m);
          const free = memFree();
          if (need > free) return onBig(m, need, free);
        }
        okLen = L;
      }
    }
    const n = wsDecode(rx, F);
    if (n === WS_MORE) return;
    okLen = -1;
    if (n < 0) return dead(n === WS_TOO_BIG ? 'frame over 65535 bytes refused' : 'bad frame from server', n === WS_TOO_BIG ? 1009 : 1002);
    rx = rx.substr(n);
    const op = F.op;
    if (op === OP_TEXT || op === OP_CONT) {
      if (op === OP_TEXT) {
        frag = F.d;
        inFrag = true;
      } else if (inFrag) frag += F.d;
      if (F.fin && inFrag) {
        const m = frag;
        frag = '';
        inFrag = false;
        onText(m);
      }
    } else if (control(op)) return;
  }
}

/** A control frame (out of line: Espruino lexes a function's whole text at every call); true when the link closed. */
function control(op: number): boolean {
  if (op === OP_PING) {
    ctlAt = nowMs();
    ctl(OP_PONG, F.d);
  } else if (op === OP_PONG) ctlAt = nowMs();
  else if (op === OP_CLOSE) {
    dead('server closed the WebSocket', F.d.length >= 2 ? (F.d.charCodeAt(0) << 8) | F.d.charCodeAt(1) : 1000);
    return true;
  }
  return false;
}

function rxd(s: EspSocket, d: string): void {
  if (sk !== s) return;
  rxAt = nowMs();
  rx += d;
  if (st === 2) {
    const n = wsResponse(rx);
    if (n === 0) {
      if (rx.length > HDR_MAX) dead('upgrade response header too long');
      return;
    }
    if (n < 0) return dead('upgrade refused: ' + rx.substr(0, rx.indexOf('\r\n')));
    rx = rx.substr(n);
    st = 3;
    onOpen();
  }
  if (st === 3) frames(s);
}

function connected(s: EspSocket): void {
  if (sk !== s || !url) return;
  st = 2;
  raw(wsRequest(url, btoa(randBytes(16))));
}

function attach(s: EspSocket): void {
  s.on('data', function (d) {
    try {
      rxd(s, d);
    } catch (e) {
      log('receive failed: ' + e);
      if (sk === s) dead('receive failed');
    }
  });
  s.on('close', function () {
    if (sk === s) dead('connection closed');
  });
  s.on('error', function (e) {
    if (sk === s) dead('socket error ' + (e && e.code) + ' ' + (e && e.message));
  });
}

/**
 * Start connecting to a ws:// URL, replacing any current connection. false (and no callbacks
 * later) when the URL is bad or the socket could not even be created.
 */
export function wsOpen(u: string): boolean {
  wsClose();
  url = wsUrl(u);
  if (!url) return false;
  let s: EspSocket;
  try {
    const net = require('net') as EspNet;
    s = net.connect({ host: url.h, port: url.p }, function () {
      connected(s);
    });
  } catch (e) {
    log('connect failed: ' + e);
    return false;
  }
  sk = s;
  st = 1;
  rx = '';
  attach(s);
  return true;
}
