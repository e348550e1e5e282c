// The device link over an MQTT 3.1.1 broker, in place of ws.ts in the MQTT bundle (firmware/tsup.config.ts
// swaps the module): the same exports with the same meaning, so session.ts runs unchanged. One
// connection at a time over Espruino's net; CONNECT with a clean session, a keepalive, the device's
// broker password (HMAC of its secret) and a retained last will `offline <tag>` on its status topic;
// SUBSCRIBE to its down topic; once subscribed, a retained `online <tag>` and "open". Frames go out as
// QoS 1 PUBLISHes on its up topic (payload = the sealed frame's UTF-8 bytes, as on the WebSocket);
// frames come in as PUBLISHes on its down topic, handed over as their bytes. An empty payload on down
// is the host closing the link (a WebSocket close). The device never sends DISCONNECT: every end of a
// connection, on purpose or not, reaches the host as the will.
//
// QoS 1 here is a check, not a redelivery: MQTT 3.1.1 redelivers unacknowledged PUBLISHes only when
// a session resumes (clean session off), and a resumed frame would be refused anyway (its counter and
// MAC belong to the session key of the old connection). A PUBLISH the broker has not acknowledged
// within ACK_MS ends the connection; the new session's resync (outbox, request_id ring) then delivers
// what matters exactly once. The down topic is subscribed at QoS 0: with a clean session QoS 1 would
// add nothing there (the session's counters already refuse a gap and reconnect), and each PUBACK the
// device sent alone held its next frame behind Nagle's algorithm until the broker's delayed ACK
// (measured: 4 of 6 relay commands had a frame held ~40 ms; test/e2e-mqtt.test.ts).
import type { MqPacket } from '@proofrig/protocol/mqttcodec';
import {
  BROKER_PASS_HEX, brokerPassMessage, MQ_BAD, MQ_CONNACK, MQ_MORE, MQ_OFFLINE, MQ_ONLINE, MQ_PING, MQ_PINGRESP, MQ_PUBACK,
  MQ_PUBLISH, MQ_SUBACK, mqConnect, mqDecode, mqLen, mqPuback, mqPublish, mqSubscribe, mqttUrl, mqU16, topicDown, topicStatus, topicUp,
} from '@proofrig/protocol/mqttcodec';
import { CONFIG_FILE } from '@proofrig/protocol';
import { MEM_CHECK_MIN, memFree, memNeed } from './mem';
import { nowMs } from './clock';
import { r32 } from './rand';
import { secretKey } from './ident';
import { hmac, toHex } from './sha256';

/** Keepalive asked of the broker (s): it publishes the will after 1.5 × this of silence. */
const KEEPALIVE = 20;
/** A PUBLISH unacknowledged, or a PINGREQ unanswered, this long ends the connection. */
const ACK_MS = 10000;
const TICK_MS = 5000;

let dev = '';
let tUp = '';
let tDown = '';
let tSt = '';
let sk: EspSocket | undefined;
/** 0 no socket, 1 TCP connecting, 2 CONNECT sent, 3 SUBSCRIBE sent, 4 open. */
let st = 0;
let rx = '';
/** Tags this connection's online status and will, so the host tells a late will from the current connection. */
let tag = '';
let pid = 0;
/** PUBLISHes not yet acknowledged, and since when the oldest has waited (last progress). */
let unacked = 0;
let waitAt = 0;
/** When a PINGREQ went out unanswered (0: none pending), and when anything was last written. */
let pingAt = 0;
let txAt = 0;
let rxAt = 0;
let tick: TimerId | undefined;
/** Remaining length of the packet at the head of rx once its header passed the memory check, else -1. */
let okLen = -1;
const P: MqPacket = { t: 0, f: 0, d: '' };

let onOpen: () => void;
let onText: (s: string) => void;
let onClose: (why: string) => void;
let onBig: (n: number, need: number, free: number) => void;

function log(s: string): void {
  console.log('proofrig mqtt: ' + s);
}

/**
 * The device whose topics and broker password this link uses: the `dev` of the rig config main.ts
 * validated, read from Storage once (main.ts hands nothing to the transport, so the WebSocket build
 * stays exactly what it was). false when it cannot be read.
 */
function device(): boolean {
  if (dev) return true;
  let c: { dev?: unknown } | undefined;
  try {
    c = (require('Storage') as EspStorage).readJSON(CONFIG_FILE, true) as { dev?: unknown };
  } catch (e) {
    c = undefined;
  }
  if (!c || typeof c.dev !== 'string') return false;
  dev = c.dev;
  tUp = topicUp(dev);
  tDown = topicDown(dev);
  tSt = topicStatus(dev);
  return true;
}

/** big(n, need, free): a message of n bytes needs more JsVars than are free; it was not buffered. */
export function wsInit(open: () => void, text: (s: string) => void, close: (why: string) => void, big: (n: number, need: number, free: number) => void): void {
  onOpen = open;
  onText = text;
  onClose = close;
  onBig = big;
}

function raw(bytes: string): void {
  txAt = nowMs();
  try {
    if (sk) sk.write(bytes);
  } catch (e) {
    log('write failed: ' + e);
  }
}

/** A QoS 1 PUBLISH, counted until its PUBACK. */
function pub(topic: string, d: string, retain: boolean): void {
  pid = (pid % 65535) + 1;
  if (!unacked) waitAt = nowMs();
  unacked++;
  raw(mqPublish(topic, d, 1, pid, retain));
}

/** Close on purpose: end the socket (the broker publishes the will). No onClose. */
export function wsClose(code?: number): void {
  const s = sk;
  if (tick !== undefined) clearInterval(tick);
  tick = undefined;
  if (!s) return;
  sk = undefined;
  st = 0;
  rx = '';
  okLen = -1;
  unacked = pingAt = 0;
  try {
    s.end();
  } catch (e) {
    log('end failed: ' + e);
  }
}

/** The connection died or broke the protocol: close it and tell the link once. */
function dead(why: string): void {
  wsClose();
  onClose(why);
}

/** Send a frame given as its UTF-8 bytes. false when the link is not open or the frame is over 65535 bytes. */
export function wsSend(bytes: string): boolean {
  if (st !== 4) return false;
  if (bytes.length > 65535) {
    log('message of ' + bytes.length + ' bytes is too long; not sent');
    return false;
  }
  pub(tUp, bytes, false);
  return true;
}

/** Time (ms) bytes last arrived from the broker. */
export function wsRxAt(): number {
  return rxAt;
}

/**
 * 0: nothing from the broker is a sign of life of the host (PUBACK and PINGRESP come from the broker
 * itself), so the session's liveness counts only the host's sealed frames.
 */
export function wsCtlAt(): number {
  return 0;
}

export function wsIsOpen(): boolean {
  return st === 4;
}

const REFUSED = ['', 'protocol version', 'client id', 'server unavailable', 'bad user name or password', 'not authorized'];

/** A PUBLISH from the broker: acknowledge it, then hand its payload over (empty: the host closed the link). */
function got(): void {
  const d = P.d;
  const q = (P.f >> 1) & 3;
  const tl = mqU16(d, 0);
  let p = 2 + tl;
  if (q > 1) return dead('QoS ' + q + ' PUBLISH from the broker (subscribed at 0)');
  if (q) {
    raw(mqPuback(mqU16(d, p)));
    p += 2;
  }
  if (d.substr(2, tl) !== tDown) return log('ignored a message on ' + d.substr(2, tl));
  if (p === d.length) return dead('the host closed the link');
  // Several frames in one message are separated by '\n' (the host's sendBatch); a handler that ended the link stops the rest.
  const s = sk;
  let i = d.indexOf('\n', p);
  while (i >= 0 && sk === s) {
    onText(d.substr(p, i - p));
    p = i + 1;
    i = d.indexOf('\n', p);
  }
  if (sk === s) onText(d.substr(p));
}

function packets(s: EspSocket): void {
  while (sk === s && rx.length) {
    if (okLen < 0) {
      // Refuse a message the device cannot afford as soon as its header says how long it is,
      // before its payload piles up in rx.
      const L = mqLen(rx);
      if (L === -2) return dead('bad packet length from the broker');
      if (L >= 0) {
        if (L >= MEM_CHECK_MIN) {
          const need = memNeed(L);
          const free = memFree();
          if (need > free) return onBig(L, need, free);
        }
        okLen = L;
      }
    }
    const n = mqDecode(rx, P);
    if (n === MQ_MORE) return;
    okLen = -1;
    if (n === MQ_BAD) return dead('bad packet from the broker');
    rx = rx.substr(n);
    const t = P.t;
    if (t === MQ_PUBLISH && st === 4) got();
    else if (t === MQ_PUBACK) {
      if (unacked) unacked--;
      waitAt = nowMs();
    } else if (t === MQ_PINGRESP) pingAt = 0;
    else if (t === MQ_CONNACK && st === 2) {
      const rc = P.d.charCodeAt(1);
      if (rc) return dead('broker refused the connection: ' + (REFUSED[rc] || 'code ' + rc));
      st = 3;
      raw(mqSubscribe(1, tDown, 0));
    } else if (t === MQ_SUBACK && st === 3) {
      if (P.d.charCodeAt(2) & 0x80) return dead('broker refused the subscription to ' + tDown);
      st = 4;
      pub(tSt, MQ_ONLINE + ' ' + tag, true);
      onOpen();
    } else return dead('unexpected packet type ' + t + ' from the broker');
  }
}

function rxd(s: EspSocket, d: string): void {
  if (sk !== s) return;
  rxAt = nowMs();
  // The broker's PUBACK of each frame the device sent usually arrives alone: taken without the
  // packet loop (a read of its own per frame sent; test/firmware-cost measures the difference).
  if (!rx && d.length === 4 && d.charCodeAt(0) === 0x40) {
    if (unacked) unacked--;
    waitAt = rxAt;
    return;
  }
  rx += d;
  packets(s);
}

/** Every TICK_MS while a connection exists: the PUBACK and PINGRESP deadlines, and a PINGREQ when idle. */
function check(): void {
  const now = nowMs();
  if (unacked && now - waitAt > ACK_MS) return dead(unacked + ' PUBLISH(es) not acknowledged by the broker within ' + ACK_MS + ' ms');
  if (pingAt && now - pingAt > ACK_MS) return dead('no PINGRESP from the broker within ' + ACK_MS + ' ms');
  if (st >= 2 && !pingAt && now - txAt >= KEEPALIVE * 1000 - TICK_MS) {
    raw(MQ_PING);
    pingAt = now;
  }
}

function connected(s: EspSocket): void {
  if (sk !== s) return;
  st = 2;
  const pass = toHex(hmac(secretKey(), brokerPassMessage(dev))).substr(0, BROKER_PASS_HEX);
  raw(mqConnect('proofrig-' + dev, KEEPALIVE, dev, pass, tSt, MQ_OFFLINE + ' ' + tag));
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
    if (sk === s) dead('connection to the broker closed');
  });
  s.on('error', function (e) {
    if (sk === s) dead('socket error ' + (e && e.code) + ' ' + (e && e.message));
  });
}

/**
 * Start connecting to an mqtt:// URL, replacing any current connection. false (and no callbacks
 * later) when the URL is bad, the device is not set, or the socket could not even be created.
 */
export function wsOpen(u: string): boolean {
  wsClose();
  const url = mqttUrl(u);
  if (!url || !device()) return false;
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
  tag = '' + r32();
  pid = 0;
  tick = setInterval(check, TICK_MS);
  attach(s);
  return true;
}
