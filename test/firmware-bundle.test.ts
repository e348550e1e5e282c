// The built firmware file (the one flashed and simulated) run against a scripted host in a vm
// with fake Espruino globals and a virtual clock: the device behaviour the host relies on.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildFirmwareToTemp, recvValidated } from './helpers/firmware-build';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { createHmac } from 'node:crypto';
import { authMessage, DEDUPE_RING_SIZE, hostProofMessage, PROTOCOL_VERSION } from '@proofrig/protocol';
import { loadFirmware, type FakeSocket, type Rig } from '../firmware/test/espruino-fake';

const root = resolve(__dirname, '..');
const board = JSON.parse(readFileSync(join(root, 'boards/relay-rig-4ch.json'), 'utf8')) as BoardDef;
const config: RigConfig = { dev: 'bench-1', secret: '7f'.repeat(32), host: 'ws://192.168.1.10:8787/device', board };
let file = '';

beforeAll(async () => {
  file = await buildFirmwareToTemp();
}, 60000);

function boot(hb = 1000): { rig: Rig; s: FakeSocket; hello: Record<string, any> } {
  const rig = loadFirmware(config, file);
  const { s, hello } = rig.connectUp(hb);
  return { rig, s, hello };
}

/** Every frame the device sends must pass the host's validator. */
const recv = recvValidated;

const relaySet = (rid: string, ch: number, on: boolean) => ({ t: 'cmd', rid, a: 'relay.set', p: { ch, on } });

describe('firmware boot', () => {
  it('drives every relay output to its off level as a forced output and sets the aux inputs', () => {
    const rig = loadFirmware(config, file);
    for (const r of board.relays) {
      expect(rig.pins[r.pin], r.name).toBe(r.active_low ? 1 : 0);
      expect(rig.modes[r.pin], r.name).toBe('output');
      if (r.feedback.kind === 'aux_contact') expect(rig.modes[r.feedback.pin]).toBe('input');
    }
    // Never an on level during boot (no glitch on active-low modules).
    expect(rig.writes.every(([p, v]) => v === 1 || !board.relays.some((r) => r.pin === p))).toBe(true);
  });

  it('without a stored config logs why and retries every 5 s, touching no pin and opening no socket', () => {
    const rig = loadFirmware(undefined, file);
    expect(rig.logs.join('\n')).toMatch(/no usable rig config.*proofrig\.json/);
    rig.advance(4999);
    expect(rig.logs.length).toBe(1);
    rig.advance(1);
    expect(rig.logs.length).toBe(2);
    expect(rig.writes).toEqual([]);
    expect(rig.sockets).toEqual([]);
  });

  it('connects to the configured host and says hello with a fresh boot id and a per-connection nonce', () => {
    const a = boot();
    expect(a.s.opts).toEqual({ host: '192.168.1.10', port: 8787 });
    expect(a.hello).toMatchObject({ t: 'hello', v: PROTOCOL_VERSION, dev: 'bench-1', fw: '0.1.0', board: 'relay-rig-4ch' });
    expect(a.hello.boot).toMatch(/^1-[0-9a-f]{12}$/);
    expect(a.hello.cn).toMatch(/^[0-9a-f]{32}$/);
    // A power cycle: the same flash, the same (constant) E.hwRand, the same boot timing.
    const b = loadFirmware(config, file, { storage: a.rig.storage }).connectUp();
    expect(b.hello.boot).toMatch(/^2-[0-9a-f]{12}$/);
    expect(b.hello.cn).not.toBe(a.hello.cn);
    expect(a.rig.storage['proofrig.boot']).toBe('2');
    a.rig.drop(a.s);
    a.rig.advance(400);
    const again = a.rig.connectUp();
    expect(again.hello.boot).toBe(a.hello.boot);
    expect(again.hello.cn).not.toBe(a.hello.cn);
  });

  it('joins the configured Wi-Fi first, retrying with back-off, and only then opens the link', () => {
    const rig = loadFirmware({ ...config, wifi: { ssid: 'lab', pass: 'pw' } }, file, { wifi: ['no AP', 'no AP', null] });
    expect(rig.wifiCalls).toEqual([['lab', 'pw', 0]]);
    rig.advance(60);
    expect(rig.sockets).toEqual([]);
    rig.advance(5000);
    expect(rig.wifiCalls.map((c) => c[2])).toEqual([0, 1050, 3100]);
    expect(rig.sockets.length).toBe(1);
    expect(rig.sockets[0].at).toBe(3150);
  });

  it('executes nothing before the host says ok', () => {
    const rig = loadFirmware(config, file);
    const s = rig.accept();
    recv(rig, s);
    rig.send(s, relaySet('early', 1, true));
    rig.send(s, { t: 'chal', v: PROTOCOL_VERSION, sn: '0123456789abcdef0123' });
    const [auth] = recv(rig, s);
    expect(auth.t).toBe('auth');
    rig.send(s, relaySet('early2', 1, true));
    rig.advance(100);
    expect(recv(rig, s)).toEqual([]);
    expect(rig.pins[23]).toBe(1);
  });
});

describe('firmware relay.set', () => {
  it('switches the coil at once and sends only its result, completed with aux_contact evidence, after settle_ms (no ack: it ends within its settle time)', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 1, true));
    expect(recv(rig, s)).toEqual([]);
    expect(rig.pins[23]).toBe(0);
    rig.advance(24);
    expect(recv(rig, s)).toEqual([]);
    rig.advance(1);
    const [res] = recv(rig, s);
    expect(res).toMatchObject({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, ms: 25 });
    expect(res.code).toBeUndefined();
    expect(res.s.relays[0]).toEqual({ ch: 1, cmd: true, pin: true, aux: true });
    expect(res.s.relays[3]).toEqual({ ch: 4, cmd: null, pin: null, aux: null });
  });

  it('a repeated request_id replays the first result and never touches the pin', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 1, true));
    rig.advance(30);
    const [first] = rig.recv(s);
    expect(first).toMatchObject({ t: 'res', rid: 'r1', st: 'completed' });
    const writes = rig.writes.length;
    rig.send(s, relaySet('r1', 1, false));
    rig.advance(30);
    const again = rig.recv(s);
    expect(again).toEqual([first]);
    expect(rig.writes.length).toBe(writes);
    expect(rig.pins[23]).toBe(0);
  });

  it('a repeat of a command still running answers ack running; another command on the channel is BUSY', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 2, true));
    rig.send(s, relaySet('r1', 2, true));
    rig.send(s, relaySet('r2', 2, false));
    const fs = recv(rig, s);
    expect(fs[0]).toEqual({ t: 'ack', rid: 'r1', st: 'running' });
    expect(fs[1]).toMatchObject({ t: 'res', rid: 'r2', st: 'rejected', code: 'BUSY', ev: 'none', ver: false });
    expect(fs.length).toBe(2);
    rig.advance(25);
    expect(recv(rig, s)[0]).toMatchObject({ rid: 'r1', st: 'completed' });
    // The rejection is remembered like any result.
    rig.send(s, relaySet('r2', 2, false));
    expect(recv(rig, s)).toEqual([fs[1]]);
  });

  it('an aux contact that stays open fails NO_FEEDBACK and names the pin and the wait', () => {
    const { rig, s } = boot();
    rig.auxForced[2] = 1;
    rig.send(s, relaySet('r1', 2, true));
    rig.advance(25);
    const res = recv(rig, s)[0];
    expect(res).toMatchObject({ st: 'failed', code: 'NO_FEEDBACK', ev: 'aux_contact', ver: false });
    expect(res.msg).toBe('K2: aux contact on GPIO35 stayed open 25 ms after switching on');
    expect(res.s.relays[1]).toEqual({ ch: 2, cmd: true, pin: true, aux: false });
  });

  it('a contact that stays closed after switching off fails NO_FEEDBACK', () => {
    const { rig, s } = boot();
    rig.auxForced[1] = 0;
    rig.send(s, relaySet('r1', 1, false));
    rig.advance(25);
    expect(recv(rig, s)[0].msg).toBe('K1: aux contact on GPIO34 stayed closed 25 ms after switching off');
  });

  it('an output that reads back the wrong level fails READBACK_MISMATCH with pin_readback evidence', () => {
    const { rig, s } = boot();
    rig.readbackForced[3] = 1;
    rig.send(s, relaySet('r1', 3, true));
    rig.advance(2);
    const res = recv(rig, s)[0];
    expect(res).toMatchObject({ st: 'failed', code: 'READBACK_MISMATCH', ev: 'pin_readback', ver: false });
    expect(res.msg).toBe('K3 (GPIO21): wrote 0, read back 1 after 2 ms');
  });

  it('a read-back relay that follows completes with pin_readback evidence', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 3, true));
    rig.advance(2);
    expect(recv(rig, s)).toEqual([expect.objectContaining({ t: 'res', st: 'completed', ev: 'pin_readback', ver: true })]);
  });

  it('switching a read-back relay off writes the off level (1, inputs active LOW) and reads it back', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 3, true));
    rig.advance(2);
    expect(rig.pins[21]).toBe(0);
    rig.send(s, relaySet('r2', 3, false));
    rig.advance(2);
    const res = recv(rig, s).find((f) => f.rid === 'r2' && f.t === 'res')!;
    expect(rig.pins[21]).toBe(1);
    expect(res).toMatchObject({ st: 'completed', ev: 'pin_readback', ver: true, msg: 'K3 (GPIO21): read back 1 after 2 ms (only the MCU pin is observed)' });
    expect(res.s.relays[2]).toEqual({ ch: 3, cmd: false, pin: false, aux: null });
  });

  it('an output nothing observes ends unverified with evidence none, and says so', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 4, true));
    rig.advance(0);
    const res = recv(rig, s)[0];
    expect(res).toMatchObject({ st: 'unverified', ev: 'none', ver: false });
    expect(res.code).toBeUndefined();
    expect(res.msg).toMatch(/nothing observes this output/);
    expect(rig.pins[19]).toBe(0);
  });

  it('invalid arguments and unknown actions are rejected without an ack, touching no pin', () => {
    const { rig, s } = boot();
    const writes = rig.writes.length;
    rig.send(s, relaySet('bad', 7, true));
    rig.send(s, { t: 'cmd', rid: 'bad2', a: 'relay.set', p: { ch: 1, on: 'yes' } });
    rig.send(s, { t: 'cmd', rid: 'step', a: 'stepper.move', p: { axis: 'x', mm: 5 } });
    rig.send(s, { t: 'cmd', rid: 'valve', a: 'valve.open', p: {} });
    const fs = recv(rig, s);
    expect(fs.map((f) => [f.t, f.rid, f.st, f.code])).toEqual([
      ['res', 'bad', 'rejected', 'INVALID_ARGS'],
      ['res', 'bad2', 'rejected', 'INVALID_ARGS'],
      ['res', 'step', 'rejected', 'INVALID_ARGS'],
      ['res', 'valve', 'rejected', 'UNKNOWN_ACTION'],
    ]);
    expect(fs[0].msg).toBe('ch 7 does not exist on relay-rig-4ch; valid channels: 1, 2, 3, 4');
    expect(fs[1].msg).toBe('on must be true or false');
    expect(fs[2].msg).toBe('axis "x" does not exist on relay-rig-4ch; axes: none');
    expect(fs[3].msg).toBe('this device does not implement "valve.open"; it implements relay.set, stepper.move, stepper.home, stop, estop.clear, sensor.read, fan.set, servo.set');
    expect(rig.writes.length).toBe(writes);
  });

  it('refuses new commands BUSY when every slot holds a result the host has not confirmed', () => {
    const { rig, s } = boot();
    for (let k = 0; k < DEDUPE_RING_SIZE; k++) rig.send(s, relaySet('bad' + k, 9, true));
    recv(rig, s);
    rig.send(s, relaySet('one-more', 1, true));
    const [res] = recv(rig, s);
    expect(res).toMatchObject({ rid: 'one-more', st: 'rejected', code: 'BUSY' });
    expect(res.msg).toMatch(/outbox full/);
    expect(rig.pins[23]).toBe(1);
    rig.send(s, { t: 'rack', rid: 'bad0' });
    rig.send(s, relaySet('one-more', 1, true));
    expect(recv(rig, s)).toEqual([]);
    rig.advance(25);
    expect(recv(rig, s)[0]).toMatchObject({ t: 'res', rid: 'one-more', st: 'completed' });
  });

  it('a rack riding inside a command (k) frees its outbox slot before the command is looked at', () => {
    const { rig, s } = boot();
    for (let k = 0; k < DEDUPE_RING_SIZE; k++) rig.send(s, relaySet('bad' + k, 9, true));
    recv(rig, s);
    rig.send(s, { ...relaySet('one-more', 1, true), k: 'bad0' });
    rig.advance(25);
    expect(recv(rig, s)).toEqual([expect.objectContaining({ t: 'res', rid: 'one-more', st: 'completed' })]);
    expect(rig.pins[23]).toBe(0);
    // A malformed k is refused with the whole frame: nothing runs.
    rig.send(s, { ...relaySet('two-more', 2, true), k: '' });
    expect(recv(rig, s)).toEqual([expect.objectContaining({ t: 'err', code: 'MALFORMED_FRAME', ref: 'two-more' })]);
  });
});

describe('firmware frames and queries', () => {
  it('answers malformed and unknown frames with err and changes nothing', () => {
    const { rig, s } = boot();
    rig.send(s, '{not json');
    rig.send(s, { t: 'launch' });
    rig.send(s, { t: 'cmd', rid: 'ok-id', a: 'relay.set', p: 'ch1' });
    const fs = recv(rig, s);
    expect(fs.map((f) => [f.t, f.code, f.ref])).toEqual([
      ['err', 'MALFORMED_FRAME', undefined],
      ['err', 'UNKNOWN_FRAME', undefined],
      ['err', 'MALFORMED_FRAME', 'ok-id'],
    ]);
    rig.send(s, relaySet('ok-id', 1, true));
    rig.advance(25);
    expect(recv(rig, s)[0]).toMatchObject({ t: 'res', rid: 'ok-id', st: 'completed' });
  });

  it('q answers a live snapshot; with a rid it says running, done (and replays the result) or unknown', () => {
    const { rig, s } = boot();
    rig.send(s, { t: 'q', q: 'q1' });
    const [st] = recv(rig, s);
    expect(st).toEqual({ t: 'state', q: 'q1', s: st.s });
    expect(st.s.relays.map((r: any) => r.cmd)).toEqual([null, null, null, null]);
    rig.send(s, relaySet('r1', 1, true));
    rig.send(s, { t: 'q', q: 'q2', rid: 'r1' });
    expect(recv(rig, s)[0]).toMatchObject({ t: 'state', q: 'q2', rid: 'r1', rst: 'running' });
    rig.advance(25);
    const res = recv(rig, s)[0];
    rig.send(s, { t: 'q', q: 'q3', rid: 'r1' });
    const fs = recv(rig, s);
    expect(fs[0]).toMatchObject({ t: 'state', q: 'q3', rid: 'r1', rst: 'done' });
    expect(fs[1]).toEqual(res);
    rig.send(s, { t: 'q', q: 'q4', rid: 'never' });
    expect(recv(rig, s)).toEqual([expect.objectContaining({ rst: 'unknown' })]);
  });

  it('counts a ping as a sign of life for liveness', () => {
    const { rig, s } = boot(1000);
    rig.advance(2500);
    rig.deliver(s, '\x89\x00');
    rig.advance(2999);
    expect(s.ended).toBe(false);
    rig.advance(1);
    expect(s.ended).toBe(true);
  });

  it('answers a ping with a pong carrying the same payload', () => {
    const { rig, s } = boot();
    rig.deliver(s, '\x89\x04abcd');
    rig.recv(s);
    const f = s.frames[s.frames.length - 1];
    expect(f).toEqual({ fin: true, op: 10, d: 'abcd' });
  });

  it('reassembles a text message the host sent in fragments', () => {
    const { rig, s } = boot();
    const text = rig.sealed(s, { t: 'q', q: 'frag' }, 1);
    rig.deliver(s, '\x01' + String.fromCharCode(9) + text.slice(0, 9));
    rig.deliver(s, '\x80' + String.fromCharCode(text.length - 9) + text.slice(9));
    expect(recv(rig, s)[0]).toMatchObject({ t: 'state', q: 'frag' });
  });
});

describe('firmware link', () => {
  it('sends a heartbeat every hb ms with uptime and free memory', () => {
    const { rig, s } = boot(500);
    rig.advance(499);
    expect(recv(rig, s)).toEqual([]);
    rig.advance(1);
    const [hb] = recv(rig, s);
    expect(hb).toEqual({ t: 'hb', up: rig.now(), free: 4321 });
    rig.send(s, { t: 'hb' });
    rig.advance(500);
    expect(recv(rig, s)).toEqual([{ t: 'hb', up: rig.now(), free: 4321 }]);
  });

  it("ignores the host's immediate answer to an ack ({t:'hb', ack}) without a reply, and refuses a malformed one", () => {
    const { rig, s } = boot(500);
    rig.send(s, { t: 'hb', ack: 'req_1' });
    rig.advance(1);
    expect(recv(rig, s)).toEqual([]);
    rig.send(s, { t: 'hb', ack: '' });
    rig.advance(1);
    expect(recv(rig, s)).toEqual([expect.objectContaining({ t: 'err', code: 'MALFORMED_FRAME' })]);
  });

  it('re-sends results the host did not confirm after reconnecting, oldest first, and not the confirmed ones', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('a', 4, true));
    rig.send(s, relaySet('b', 3, true));
    rig.send(s, relaySet('c', 1, true));
    rig.advance(30);
    const res = recv(rig, s).filter((f) => f.t === 'res');
    expect(res.map((f) => f.rid)).toEqual(['a', 'b', 'c']);
    rig.send(s, { t: 'rack', rid: 'b' });
    rig.drop(s);
    rig.advance(400);
    const again = rig.connectUp();
    expect(recv(rig, again.s)).toEqual([res[0], res[2]]);
  });

  it('keeps results decided while offline and delivers them after the next ok', () => {
    const { rig, s } = boot();
    rig.send(s, relaySet('r1', 1, true));
    recv(rig, s);
    rig.drop(s);
    rig.advance(25);
    rig.advance(400);
    const again = rig.connectUp();
    expect(recv(rig, again.s)).toEqual([expect.objectContaining({ t: 'res', rid: 'r1', st: 'completed' })]);
  });

  it('closes and reconnects when the host is silent for hb × 3, with one socket at a time', () => {
    const { rig, s } = boot(1000);
    rig.advance(2000);
    rig.send(s, { t: 'hb' });
    rig.advance(2999);
    expect(s.ended).toBe(false);
    rig.advance(1);
    expect(s.ended).toBe(true);
    expect(rig.open()).toEqual([]);
    rig.advance(300);
    expect(rig.sockets.length).toBe(2);
    expect(rig.open().length).toBe(1);
  });

  it('frames it refuses are no sign of life: a host whose every frame is refused is reconnected after hb × 3 (chaos seed 92)', () => {
    const { rig, s } = boot(1000);
    rig.advance(2000);
    rig.send(s, { t: 'hb' }); // accepted: the last sign of life
    for (let k = 0; k < 5; k++) {
      rig.advance(500);
      rig.sendRaw(s, JSON.stringify({ t: 'hb' })); // unsealed: refused, as a frame after a lost one is
    }
    rig.advance(499);
    expect(s.ended).toBe(false);
    rig.advance(1);
    expect(s.ended).toBe(true);
  });

  it('backs off 250 ms doubling to 10 s with ±20 % jitter, and resets after ok', () => {
    const rig = loadFirmware(config, file);
    for (let k = 0; k < 9; k++) {
      const n = rig.sockets.length;
      rig.drop(rig.sockets[n - 1]);
      while (rig.sockets.length === n) rig.advance(1);
    }
    const gaps = rig.sockets.slice(1).map((s, k) => s.at - rig.sockets[k].at);
    const nominal = [250, 500, 1000, 2000, 4000, 8000, 10000, 10000, 10000];
    gaps.forEach((g, k) => {
      expect(g, 'attempt ' + k).toBeGreaterThanOrEqual(Math.floor(nominal[k] * 0.8));
      expect(g, 'attempt ' + k).toBeLessThanOrEqual(Math.ceil(nominal[k] * 1.2));
    });
    // jitter is there: without it every gap would sit on its nominal value (and devices would reconnect in lockstep)
    expect(gaps.filter((g, k) => Math.abs(g - nominal[k]) > nominal[k] * 0.01).length, JSON.stringify(gaps)).toBeGreaterThanOrEqual(5);
    expect(rig.open().length).toBe(1);
    rig.connectUp();
    const t = rig.now();
    rig.drop(rig.sockets[rig.sockets.length - 1]);
    rig.advance(300);
    expect(rig.sockets[rig.sockets.length - 1].at - t).toBeLessThanOrEqual(300);
  });

  it('after AUTH_FAILED it closes and waits the long back-off before trying again', () => {
    const rig = loadFirmware(config, file);
    const s = rig.accept();
    recv(rig, s);
    rig.send(s, { t: 'chal', v: PROTOCOL_VERSION, sn: '0123456789abcdef0123' });
    recv(rig, s);
    rig.send(s, { t: 'err', code: 'AUTH_FAILED', msg: 'mac mismatch' });
    expect(s.ended).toBe(true);
    rig.drop(s);
    rig.advance(7999);
    expect(rig.sockets.length).toBe(1);
    rig.advance(4001);
    expect(rig.sockets.length).toBe(2);
    expect(rig.logs.join('\n')).toMatch(/AUTH_FAILED/);
  });

  it('gives up on a host that never welcomes it after 10 s', () => {
    const rig = loadFirmware(config, file);
    const s = rig.accept();
    rig.advance(9999);
    expect(s.ended).toBe(false);
    rig.advance(1);
    expect(s.ended).toBe(true);
  });

  it('answers a close frame by closing and reconnecting, leaving no timers of the dead connection', () => {
    const { rig, s } = boot(1000);
    const idle = rig.timers();
    rig.deliver(s, '\x88\x02\x03\xe8');
    expect(s.ended).toBe(true);
    expect(rig.timers()).toBe(1);
    expect(idle).toBe(2);
    rig.advance(400);
    expect(rig.sockets.length).toBe(2);
  });

  it('survives socket errors and a refused upgrade without throwing', () => {
    const rig = loadFirmware(config, file);
    const s = rig.sockets[0];
    for (const h of s.handlers.error) h({ code: -9, message: 'connection refused' });
    for (const h of s.handlers.close) h(true);
    rig.advance(400);
    const s2 = rig.sockets[1];
    (s2 as any).cb();
    rig.deliver(s2, 'HTTP/1.1 403 Forbidden\r\n\r\n');
    expect(s2.ended).toBe(true);
    expect(rig.logs.join('\n')).toMatch(/upgrade refused: HTTP\/1.1 403 Forbidden/);
  });
});

describe('firmware link security: the host must prove the secret, and every later frame is sealed', () => {
  /** Accept, answer hello with a challenge and return what the device authenticated with. */
  function challenged() {
    const rig = loadFirmware(config, file);
    const s = rig.accept();
    const [hello] = recv(rig, s);
    const sn = 'f'.repeat(32);
    rig.send(s, { t: 'chal', v: PROTOCOL_VERSION, sn });
    const [auth] = recv(rig, s);
    expect(auth.mac).toBe(createHmac('sha256', config.secret).update(authMessage(hello.dev, hello.boot, hello.cn, sn)).digest('hex'));
    return { rig, s, hello, sn };
  }

  it('a host without the secret cannot make the device go up or act: ok with a wrong proof is refused and the relay stays off', () => {
    const { rig, s, hello, sn } = challenged();
    const forged = createHmac('sha256', 'not-the-secret').update(hostProofMessage(hello.dev, hello.boot, hello.cn, sn, 1000)).digest('hex');
    rig.send(s, { t: 'ok', hb: 1000, mac: forged });
    rig.send(s, relaySet('evil', 1, true));
    rig.advance(100);
    const out = recv(rig, s);
    expect(out).toEqual([expect.objectContaining({ t: 'err', code: 'AUTH_FAILED' })]);
    expect(rig.pins[23]).toBe(1); // relay 1 (active low) never energised
    expect(s.ended).toBe(true);
    expect(rig.logs.join('\n')).toMatch(/host could not prove/);
    // It backs off for the long period before trying again.
    rig.advance(7000);
    expect(rig.sockets.length).toBe(1);
  });

  it('an ok without a proof, or with the proof for another heartbeat period, is refused too', () => {
    const a = challenged();
    a.rig.send(a.s, { t: 'ok', hb: 1000 });
    a.rig.send(a.s, relaySet('evil', 1, true));
    a.rig.advance(50);
    expect(a.rig.pins[23]).toBe(1);
    const b = challenged();
    const proofFor5000 = createHmac('sha256', config.secret).update(hostProofMessage(b.hello.dev, b.hello.boot, b.hello.cn, b.sn, 5000)).digest('hex');
    b.rig.send(b.s, { t: 'ok', hb: 50, mac: proofFor5000 });
    b.rig.send(b.s, relaySet('evil', 1, true));
    b.rig.advance(50);
    expect(b.rig.pins[23]).toBe(1);
    expect(b.s.ended).toBe(true);
  });

  function refusedHere(f: (rig: Rig, s: FakeSocket) => void) {
    const { rig, s } = boot(500);
    f(rig, s);
    rig.advance(100);
    expect(recv(rig, s)).toEqual([]); // never answered, never acted on
    expect(rig.pins[23]).toBe(1);
    expect(s.ended).toBe(false);
    rig.advance(400);
    return { rig, s, hb: recv(rig, s).find((x) => x.t === 'hb') };
  }

  it('a forged frame (wrong key) is refused, changes nothing, and is counted in the heartbeat', () => {
    const { hb } = refusedHere((rig, s) => rig.sendRaw(s, rig.sealed(s, relaySet('x', 1, true), 1, Buffer.alloc(32, 7))));
    expect(hb).toMatchObject({ t: 'hb', bad: 1 });
  });

  it('an unsealed frame after the handshake is refused', () => {
    const { hb } = refusedHere((rig, s) => rig.sendRaw(s, JSON.stringify(relaySet('x', 1, true))));
    expect(hb).toMatchObject({ bad: 1 });
  });

  it('a truncated frame is refused', () => {
    const { hb } = refusedHere((rig, s) => rig.sendRaw(s, rig.sealed(s, relaySet('x', 1, true), 1).slice(0, -3) + '"}'));
    expect(hb).toMatchObject({ bad: 1 });
  });

  it('a frame whose body was altered under a valid-looking MAC is refused', () => {
    const { hb } = refusedHere((rig, s) => rig.sendRaw(s, rig.sealed(s, relaySet('x', 1, false), 1).replace('false', 'true ')));
    expect(hb).toMatchObject({ bad: 1 });
  });

  it('a replayed frame is refused: the same sealed command twice executes once', () => {
    const { rig, s } = boot(500);
    const f = rig.sealed(s, relaySet('r1', 1, true), 1);
    rig.sendRaw(s, f);
    rig.advance(100);
    const first = recv(rig, s);
    expect(first[0]).toMatchObject({ t: 'res', rid: 'r1', st: 'completed' });
    rig.send(s, { t: 'rack', rid: 'r1' }); // would be n=1 again from the harness: refused as well
    rig.sendRaw(s, f);
    rig.advance(100);
    expect(recv(rig, s)).toEqual([]);
    rig.advance(300);
    expect(recv(rig, s).find((x) => x.t === 'hb')).toMatchObject({ bad: 2 });
  });

  it('a host frame past the next counter means one was lost: it is refused and the device reconnects at once instead of refusing every later frame', () => {
    const { rig, s } = boot(500);
    const writesAtBoot = rig.trace.filter((t) => t.startsWith('dw')).length;
    rig.sendRaw(s, rig.sealed(s, relaySet('r2', 1, true), 2));
    rig.sendRaw(s, rig.sealed(s, { t: 'q', q: 'two' }, 1));
    rig.advance(10);
    expect(recv(rig, s)).toEqual([]); // neither acted on nor answered
    expect(s.ended).toBe(true);
    expect(rig.logs.some((l) => l.includes('down: a frame from the host was lost'))).toBe(true);
    expect(rig.trace.filter((t) => t.startsWith('dw')).length).toBe(writesAtBoot); // the lost-frame command never ran
    rig.advance(300);
    expect(rig.open().length).toBe(1); // the next connection, where the host re-syncs what it sent
  });

  it('a frame past the next counter whose MAC is not the host\'s is refused and changes nothing', () => {
    const { rig, s } = boot(500);
    rig.sendRaw(s, rig.sealed(s, { t: 'q', q: 'three' }, 2, Buffer.alloc(32, 1)));
    rig.sendRaw(s, rig.sealed(s, { t: 'q', q: 'two' }, 1));
    rig.advance(10);
    expect(s.ended).toBe(false);
    expect(recv(rig, s).map((x) => x.q)).toEqual(['two']);
  });

  it('every frame the device sends after the handshake is sealed with consecutive counters (checked by the harness)', () => {
    const { rig, s } = boot(500);
    rig.send(s, relaySet('r1', 1, true));
    rig.advance(600);
    const out = recv(rig, s);
    expect(out.map((x) => x.t)).toEqual(['res', 'hb']);
    expect(s.dn).toBe(2);
  });
});
