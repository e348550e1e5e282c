// Test harness: runs the built firmware file (dist/proofrig.js) in a Node vm context with fake
// Espruino globals — pins, PWM, pin watches, a virtual clock driving every timer, Storage, and a
// `net` whose one socket is played by the test as the host. Nothing here is bundled into the
// firmware. There is no physics: the test sets input levels and makes encoder edges itself.
import { readFileSync } from 'node:fs';
import { createHash, createHmac } from 'node:crypto';
import vm from 'node:vm';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import {
  authMessage, DEVICE_DIR, HOST_DIR, hostProofMessage, MAC_BYTES, macInput, PROTOCOL_VERSION, seal, sessionKeyMessage, unseal, withCounter,
} from '@proofrig/protocol';
import { OP_CLOSE, OP_PING, OP_TEXT, wsDecode, wsEncode, type WsFrame } from '@proofrig/protocol/wscodec';
import { utf8Dec, utf8Enc } from '../src/utf8';

interface Timer { id: number; at: number; fn: () => void; every: number }

export interface FakeWatch {
  id: number;
  pin: number;
  fn: (e: { state: boolean; time: number; lastTime: number; data?: boolean }) => void;
  edge: string;
  repeat: boolean;
  data?: number;
  last: number;
}

export interface FakeSocket {
  opts: { host: string; port: number };
  /** Virtual time the device opened it. */
  at: number;
  handlers: Record<string, ((a?: unknown) => void)[]>;
  /** Bytes the device wrote, not yet consumed. */
  out: string;
  ended: boolean;
  upgraded: boolean;
  /** Frames the device sent after the upgrade, decoded. */
  frames: WsFrame[];
  /** Session key once connectUp() finished the handshake: frames are then sealed both ways. */
  key?: Buffer;
  /** Counters: last frame the host sealed, last device frame accepted. */
  hn?: number;
  dn?: number;
}

function frameMac(key: Buffer, dir: string, body: string): string {
  return createHmac('sha256', key).update(macInput(dir, body)).digest().subarray(0, MAC_BYTES).toString('base64');
}

export interface Rig {
  now(): number;
  /** Move the virtual clock, running due timers in order. */
  advance(ms: number): void;
  /**
   * The event loop busy for ms (a Wi-Fi or flash stall, a long callback): the clock and the PWM
   * step trains run on, every timer that fell due meanwhile runs late, when the loop is back.
   */
  stall(ms: number): void;
  pins: Record<number, number>;
  modes: Record<number, string>;
  writes: [number, number][];
  logs: string[];
  sockets: FakeSocket[];
  /** Sockets not yet ended by either side. */
  open(): FakeSocket[];
  /** Complete the TCP connect of the newest socket and answer its upgrade with 101. */
  accept(): FakeSocket;
  /** Deliver bytes to the device as one data event. */
  deliver(s: FakeSocket, bytes: string): void;
  /** Send a text frame (object → JSON) to the device; sealed with the next counter once the session is up. */
  send(s: FakeSocket, f: unknown): void;
  /** Send text to the device exactly as given (forged, replayed, unsealed ...). */
  sendRaw(s: FakeSocket, text: string): void;
  /** A host frame sealed with counter n (and the socket's key unless another is given); does not advance the counter. */
  sealed(s: FakeSocket, f: unknown, n: number, key?: Buffer): string;
  /** Boot counter and other Storage files the firmware wrote. */
  storage: Record<string, string>;
  /** Text messages (parsed JSON) the device sent on s since the last call, as on the wire (a snapshot's relays as `s.r`). */
  recv(s: FakeSocket): Record<string, any>[];
  /** The board of the config it booted with (the host reads the snapshots' `s.r` with it). */
  board: BoardDef | undefined;
  /** Close s from the host side (the device sees 'close'). */
  drop(s: FakeSocket): void;
  /** accept(), answer hello/chal/auth and send ok; returns the socket and the hello frame. */
  connectUp(hb?: number): { s: FakeSocket; hello: Record<string, any> };
  /** Aux contact wiring: contact follows its relay unless forced. */
  auxForced: Record<number, number | undefined>;
  readbackForced: Record<number, number | undefined>;
  timers(): number;
  /** Wi-Fi connect calls: [ssid, password, virtual time]. */
  wifiCalls: [string, string, number][];
  /** PWM running on a pin now: analogWrite's duty and frequency; digitalWrite on the pin ends it. */
  pwm: Record<number, { duty: number; freq: number } | undefined>;
  /** Pulses a PWM pin has produced so far: frequency × time while it ran (what a driver would count). */
  pulses(pin: number): number;
  /** In call order: "dw PIN LEVEL", "aw PIN FREQ", "tx" (the device wrote to its socket). */
  trace: string[];
  watches: FakeWatch[];
  /** Drive an input to a level; on a change, the pin's watches fire (synchronously) as Espruino reports them. */
  input(pin: number, level: number): void;
  /** n encoder counts on A (B sampled as `data`): n > 0 counts towards +mm (A ≠ B after each A edge), n < 0 back. */
  quad(a: number, b: number, n: number): void;
}

export interface FakeOptions {
  /** Outcome of successive Wi-Fi connects: an error string, or null for success (the last repeats). */
  wifi?: (string | null)[];
  /** Storage files kept from an earlier boot (the flash survives a power cycle). */
  storage?: Record<string, string>;
}

export function loadFirmware(config: RigConfig | undefined, file: string, opts: FakeOptions = {}): Rig {
  let now = 0;
  let nextId = 1;
  let timers: Timer[] = [];
  const pins: Record<number, number> = {};
  const modes: Record<number, string> = {};
  const writes: [number, number][] = [];
  const logs: string[] = [];
  const storage: Record<string, string> = opts.storage ?? {};
  const sockets: FakeSocket[] = [];
  const auxForced: Record<number, number | undefined> = {};
  const readbackForced: Record<number, number | undefined> = {};
  const board: BoardDef | undefined = config && config.board;
  const wifiCalls: [string, string, number][] = [];
  const pwm: Record<number, { duty: number; freq: number } | undefined> = {};
  /** Pulses counted up to `since` on each PWM pin. */
  const pulseSum: Record<number, number> = {};
  const since: Record<number, number> = {};
  const trace: string[] = [];
  const watches: FakeWatch[] = [];
  let watchId = 1;
  function pwmSettle(p: number): void {
    const w = pwm[p];
    if (w) pulseSum[p] = (pulseSum[p] || 0) + (w.freq * (now - since[p])) / 1000;
    since[p] = now;
  }
  function input(p: number, v: number): void {
    const old = read(p);
    pins[p] = v ? 1 : 0;
    if (old === pins[p]) return;
    for (const w of watches.slice()) {
      if (w.pin !== p) continue;
      if ((w.edge === 'rising' && !v) || (w.edge === 'falling' && v)) continue;
      if (!w.repeat) watches.splice(watches.indexOf(w), 1);
      const last = w.last;
      w.last = now / 1000;
      w.fn({ state: !!v, time: now / 1000, lastTime: last, data: w.data === undefined ? undefined : !!read(w.data) });
    }
  }
  const wifi = {
    connect(ssid: string, o: { password: string }, cb: (err: unknown) => void) {
      const outcomes = opts.wifi || [null];
      const r = outcomes[Math.min(wifiCalls.length, outcomes.length - 1)];
      wifiCalls.push([ssid, o.password, now]);
      addTimer(() => cb(r), 50, false);
    },
  };

  function addTimer(fn: () => void, ms: number | undefined, every: boolean): number {
    const t = { id: nextId++, at: now + Math.max(0, ms || 0), fn, every: every ? Math.max(1, ms || 0) : 0 };
    timers.push(t);
    return t.id;
  }
  function clear(id: number): void {
    timers = timers.filter((t) => t.id !== id);
  }
  function advance(ms: number): void {
    const end = now + ms;
    for (;;) {
      let due: Timer | undefined;
      for (const t of timers) if (t.at <= end && (!due || t.at < due.at || (t.at === due.at && t.id < due.id))) due = t;
      if (!due) break;
      now = due.at;
      if (due.every) due.at += due.every;
      else clear(due.id);
      due.fn();
    }
    now = end;
  }
  function stall(ms: number): void {
    now += ms;
    for (const t of timers) if (t.at < now) t.at = now;
  }
  function read(pin: number): number {
    if (board) {
      for (const r of board.relays) {
        if (r.feedback.kind === 'aux_contact' && r.feedback.pin === pin) {
          if (auxForced[r.ch] !== undefined) return auxForced[r.ch] as number;
          const energised = pins[r.pin] === (r.active_low ? 0 : 1);
          return energised === r.feedback.active_low ? 0 : 1;
        }
        if (r.pin === pin && readbackForced[r.ch] !== undefined) return readbackForced[r.ch] as number;
      }
    }
    return pins[pin] ?? 0;
  }
  function emit(s: FakeSocket, ev: string, a?: unknown): void {
    for (const h of s.handlers[ev] || []) h(a);
  }

  const net = {
    connect(opts: { host: string; port: number }, cb: () => void) {
      const s: FakeSocket = { opts, at: now, handlers: {}, out: '', ended: false, upgraded: false, frames: [] };
      (s as unknown as { cb: () => void }).cb = cb;
      sockets.push(s);
      return {
        on(ev: string, fn: (a?: unknown) => void) {
          (s.handlers[ev] = s.handlers[ev] || []).push(fn);
        },
        write(bytes: string) {
          if (s.ended) throw new Error('write after end');
          s.out += bytes;
          trace.push('tx');
        },
        end() {
          s.ended = true;
        },
      };
    },
  };
  const g: Record<string, unknown> = {
    console: { log: (...a: unknown[]) => logs.push(a.join(' ')) },
    getTime: () => now / 1000,
    digitalWrite: (p: number, v: number | boolean) => {
      pwmSettle(p);
      pwm[p] = undefined;
      pins[p] = v ? 1 : 0;
      writes.push([p, pins[p]]);
      trace.push('dw ' + p + ' ' + pins[p]);
    },
    analogWrite: (p: number, duty: number, o?: { freq?: number }) => {
      pwmSettle(p);
      const freq = o && o.freq ? o.freq : 5000;
      pwm[p] = { duty, freq };
      trace.push('aw ' + p + ' ' + freq);
    },
    setWatch: (fn: FakeWatch['fn'], p: number, o: { repeat?: boolean; edge?: string; data?: number }) => {
      const w: FakeWatch = { id: watchId++, pin: p, fn, edge: o.edge || 'both', repeat: !!o.repeat, data: o.data, last: now / 1000 };
      watches.push(w);
      return w.id;
    },
    clearWatch: (id: number) => {
      const k = watches.findIndex((w) => w.id === id);
      if (k >= 0) watches.splice(k, 1);
    },
    // An array of pins reads them all at once, as bits with the first pin most significant (Espruino).
    digitalRead: (p: number | number[]) => (Array.isArray(p) ? p.reduce((v, q) => (v << 1) | read(q), 0) : read(p)),
    pinMode: (p: number, m: string) => {
      modes[p] = m;
    },
    setTimeout: (fn: () => void, ms?: number) => addTimer(fn, ms, false),
    setInterval: (fn: () => void, ms?: number) => addTimer(fn, ms, true),
    clearTimeout: clear,
    clearInterval: clear,
    btoa: (s: string) => Buffer.from(s, 'latin1').toString('base64'),
    // Espruino's E.hwRand is C rand(): the same sequence after every boot; a constant is the worst case.
    E: {
      hwRand: () => 12345,
      toString: (b: ArrayBuffer | Uint8Array) => Buffer.from(b as ArrayBuffer).toString('latin1'),
      toUint8Array: (s: string) => new Uint8Array(Buffer.from(s, 'latin1')),
      mapInPlace: (f: Uint8Array, t: Uint8Array, m: Uint8Array) => {
        for (let i = 0; i < f.length && i < t.length; i++) t[i] = m[f[i]!]!;
      },
    },
    process: { memory: () => ({ free: 4321, usage: 100, total: 4421 }) },
    require: (name: string) => {
      if (name === 'Storage')
        return {
          readJSON: (n: string) => (n in storage ? JSON.parse(storage[n]) : n === 'proofrig.json' && config ? JSON.parse(JSON.stringify(config)) : undefined),
          write: (n: string, d: string) => {
            storage[n] = String(d);
            return true;
          },
        };
      if (name === 'crypto')
        return {
          SHA256: (m: string) => {
            const d = createHash('sha256').update(Buffer.from(m, 'latin1')).digest();
            return d.buffer.slice(d.byteOffset, d.byteOffset + 32);
          },
        };
      if (name === 'net') return net;
      if (name === 'Wifi') return wifi;
      throw new Error('no module ' + name);
    },
  };
  vm.runInContext(readFileSync(file, 'utf8'), vm.createContext(g));

  const rig: Rig = {
    board: board,
    now: () => now,
    advance,
    stall,
    pins,
    modes,
    writes,
    logs,
    sockets,
    auxForced,
    readbackForced,
    timers: () => timers.length,
    wifiCalls,
    pwm,
    trace,
    watches,
    input,
    pulses(p) {
      pwmSettle(p);
      return pulseSum[p] || 0;
    },
    quad(a, b, n) {
      for (let k = 0; k < Math.abs(n); k++) {
        // Quadrature: just before an A edge towards +mm, B equals A; towards -mm it differs.
        const A = read(a);
        pins[b] = n > 0 ? A : A ^ 1;
        input(a, A ^ 1);
      }
    },
    open: () => sockets.filter((s) => !s.ended),
    accept() {
      const s = sockets[sockets.length - 1];
      (s as unknown as { cb: () => void }).cb();
      const req = s.out;
      if (!/^GET \/device HTTP\/1\.1\r\n/.test(req) || !/\r\nSec-WebSocket-Version: 13\r\n/.test(req)) throw new Error('bad upgrade request: ' + req);
      s.out = '';
      s.upgraded = true;
      rig.deliver(s, 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n');
      return s;
    },
    deliver(s, bytes) {
      emit(s, 'data', bytes);
    },
    sendRaw(s, text) {
      rig.deliver(s, wsEncode(OP_TEXT, utf8Enc(text), ''));
    },
    sealed(s, f, n, key = s.key) {
      const body = withCounter(typeof f === 'string' ? f : JSON.stringify(f), n);
      return seal(body, frameMac(key!, HOST_DIR, body));
    },
    send(s, f) {
      const j = typeof f === 'string' ? f : JSON.stringify(f);
      if (!s.key) return rig.sendRaw(s, j);
      s.hn = (s.hn || 0) + 1;
      rig.sendRaw(s, rig.sealed(s, j, s.hn));
    },
    storage,
    recv(s) {
      const o: Record<string, any>[] = [];
      for (;;) {
        const f: WsFrame = { fin: true, op: 0, d: '' };
        const n = wsDecode(s.out, f);
        if (n <= 0) break;
        if (s.out.charCodeAt(1) < 128) throw new Error('device sent an unmasked frame');
        s.out = s.out.substr(n);
        s.frames.push(f);
        if (f.op === OP_TEXT) {
          let t = utf8Dec(f.d);
          if (s.key) {
            const u = unseal(t);
            const n = (s.dn || 0) + 1;
            if (!u || u.mac !== frameMac(s.key, DEVICE_DIR, u.body) || !u.body.endsWith(withCounter('}', n)))
              throw new Error('device frame not sealed with counter ' + n + ': ' + t);
            s.dn = n;
            t = u.body;
          }
          const m = JSON.parse(t);
          delete m.n;
          o.push(m);
        }
        else if (f.op !== OP_CLOSE && f.op !== OP_PING && f.op !== 10) throw new Error('unexpected opcode ' + f.op);
      }
      return o;
    },
    drop(s) {
      s.ended = true;
      emit(s, 'close', false);
    },
    connectUp(hb = 1000) {
      const s = rig.accept();
      const [hello] = rig.recv(s);
      if (!hello || hello.t !== 'hello') throw new Error('expected hello, got ' + JSON.stringify(hello));
      const sn = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
      rig.send(s, { t: 'chal', v: PROTOCOL_VERSION, sn });
      const [auth] = rig.recv(s);
      const secret = config!.secret;
      const want = createHmac('sha256', secret).update(authMessage(hello.dev, hello.boot, hello.cn, sn)).digest('hex');
      if (!auth || auth.mac !== want) throw new Error('bad auth ' + JSON.stringify(auth));
      const mac = createHmac('sha256', secret).update(hostProofMessage(hello.dev, hello.boot, hello.cn, sn, hb)).digest('hex');
      rig.send(s, { t: 'ok', hb, mac });
      s.key = createHmac('sha256', secret).update(sessionKeyMessage(hello.dev, hello.boot, hello.cn, sn)).digest();
      s.hn = 0;
      s.dn = 0;
      return { s, hello };
    },
  };
  return rig;
}
