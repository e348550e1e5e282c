// MQTT 3.1.1 packets (the few a device needs) and proofrig's topics, as pure functions over byte
// strings (one char per byte). No sockets here: the firmware's mqtt.ts drives them, the host's
// gateway uses the topics and the broker password, the tests call them directly. A subpath of the
// protocol package (@proofrig/protocol/mqttcodec), like wscodec.

/** Packet types (the high nibble of the first byte). */
export const MQ_CONNECT = 1;
export const MQ_CONNACK = 2;
export const MQ_PUBLISH = 3;
export const MQ_PUBACK = 4;
export const MQ_SUBSCRIBE = 8;
export const MQ_SUBACK = 9;
export const MQ_PINGREQ = 12;
export const MQ_PINGRESP = 13;
export const MQ_DISCONNECT = 14;

/** Decode needs more bytes. */
export const MQ_MORE = 0;
/** A remaining length over 4 bytes or over MQ_MAX: refused. */
export const MQ_BAD = -1;
/** Largest packet either direction (a sealed frame plus topic and header is far below). */
export const MQ_MAX = 65535 + 512;

/** The retained payloads of a device's status topic: `online` once subscribed, `offline` as its last will. */
export const MQ_ONLINE = 'online';
export const MQ_OFFLINE = 'offline';

/** Host → device frames. */
export function topicDown(dev: string): string {
  return 'proofrig/' + dev + '/down';
}
/** Device → host frames. */
export function topicUp(dev: string): string {
  return 'proofrig/' + dev + '/up';
}
/** Retained `online` / `offline` (the last will). */
export function topicStatus(dev: string): string {
  return 'proofrig/' + dev + '/status';
}
/** The device a proofrig topic belongs to and which one it is, or null for any other topic. */
export function topicOf(t: string): { dev: string; kind: string } | null {
  const p = t.split('/');
  if (p.length !== 3 || p[0] !== 'proofrig' || !p[1]) return null;
  return { dev: p[1], kind: p[2] };
}

/** The message a device's broker password is the HMAC of (key: its secret, as for every proof). */
export function brokerPassMessage(dev: string): string {
  return 'proofrig-mqtt-1|' + dev;
}
/** Hex chars of that HMAC used as the password (128 bits). */
export const BROKER_PASS_HEX = 32;

export interface MqttUrl {
  h: string;
  p: number;
}

/** Parse mqtt://HOST[:PORT] (no path, no credentials: a device's come from its secret); null when it is not one. */
export function mqttUrl(u: unknown): MqttUrl | null {
  if (typeof u !== 'string' || u.substr(0, 7) !== 'mqtt://') return null;
  let hp = u.substr(7);
  if (hp.charAt(hp.length - 1) === '/') hp = hp.substr(0, hp.length - 1);
  if (hp.indexOf('/') >= 0 || hp.indexOf('@') >= 0) return null;
  const c = hp.indexOf(':');
  const h = c < 0 ? hp : hp.substr(0, c);
  const ps = c < 0 ? '1883' : hp.substr(c + 1);
  const p = parseInt(ps, 10);
  if (!h || String(p) !== ps || p < 1 || p > 65535) return null;
  return { h: h, p: p };
}

/** A length-prefixed string (two bytes, big-endian). */
function str(s: string): string {
  return String.fromCharCode(s.length >> 8, s.length & 255) + s;
}

/** Fixed header: type/flags byte and the remaining length (1-3 bytes for packets up to MQ_MAX). */
function fixed(b0: number, n: number): string {
  if (n < 128) return String.fromCharCode(b0, n);
  if (n < 16384) return String.fromCharCode(b0, (n & 127) | 128, n >> 7);
  return String.fromCharCode(b0, (n & 127) | 128, ((n >> 7) & 127) | 128, n >> 14);
}

/**
 * CONNECT with a clean session, a keepalive (s), username and password, and a retained QoS 1 will
 * `willMsg` on `willTopic`.
 */
export function mqConnect(id: string, keepalive: number, user: string, pass: string, willTopic: string, willMsg: string): string {
  // Flags: username, password, will retain, will QoS 1, will, clean session.
  const v = '\0\x04MQTT\x04' + String.fromCharCode(0x80 | 0x40 | 0x20 | 0x08 | 0x04 | 0x02, keepalive >> 8, keepalive & 255);
  const b = v + str(id) + str(willTopic) + str(willMsg) + str(user) + str(pass);
  return fixed(0x10, b.length) + b;
}

/** SUBSCRIBE to one topic at this QoS (0 or 1). */
export function mqSubscribe(pid: number, topic: string, qos: number): string {
  const b = String.fromCharCode(pid >> 8, pid & 255) + str(topic) + String.fromCharCode(qos);
  return fixed(0x82, b.length) + b;
}

/** PUBLISH; with qos 1 a packet id (pid) follows the topic. The payload is bytes. */
export function mqPublish(topic: string, d: string, qos: number, pid: number, retain: boolean): string {
  const h = str(topic) + (qos ? String.fromCharCode(pid >> 8, pid & 255) : '');
  return fixed(0x30 | (qos << 1) | (retain ? 1 : 0), h.length + d.length) + h + d;
}

export function mqPuback(pid: number): string {
  return String.fromCharCode(0x40, 2, pid >> 8, pid & 255);
}

export const MQ_PING = '\xc0\0';
export const MQ_BYE = '\xe0\0';

/** One decoded packet, filled in place (one object reused for every packet). */
export interface MqPacket {
  /** Type (high nibble) and flags (low nibble) of the first byte. */
  t: number;
  f: number;
  /** The bytes after the fixed header. */
  d: string;
}

/**
 * The remaining length the fixed header at the start of b declares: -1 while that header is
 * incomplete, -2 when it is malformed (over 4 bytes) or declares more than MQ_MAX.
 */
export function mqLen(b: string): number {
  let n = 0;
  let m = 1;
  for (let i = 1; i < 5; i++) {
    if (i >= b.length) return -1;
    const c = b.charCodeAt(i);
    n += (c & 127) * m;
    if (!(c & 128)) return n > MQ_MAX ? -2 : n;
    m *= 128;
  }
  return -2;
}

/**
 * Decode the packet at the start of b into out. Returns the number of bytes it took (> 0), MQ_MORE
 * when b holds only part of a packet, or MQ_BAD.
 */
export function mqDecode(b: string, out: MqPacket): number {
  const n = mqLen(b);
  if (n === -2) return MQ_BAD;
  if (n < 0) return MQ_MORE;
  const h = n < 128 ? 2 : n < 16384 ? 3 : 4;
  if (b.length < h + n) return MQ_MORE;
  const b0 = b.charCodeAt(0);
  out.t = b0 >> 4;
  out.f = b0 & 15;
  out.d = b.substr(h, n);
  return h + n;
}

/** Two bytes at i of s as a number (packet ids, topic lengths). */
export function mqU16(s: string, i: number): number {
  return (s.charCodeAt(i) << 8) | s.charCodeAt(i + 1);
}
