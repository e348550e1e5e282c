// The built firmware's interlocks in the vm fake, on a virtual clock: exact timing of the max
// on-time auto-off, the minimum off-time, the e-stop latch, and the outbox keeping interlock events until the host's rack.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recvValidated, useBuiltFirmware } from './helpers/firmware-build';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { loadFirmware, type Rig } from '../firmware/test/espruino-fake';

const root = resolve(__dirname, '..');
const relayBoard = JSON.parse(readFileSync(join(root, 'boards/relay-rig-4ch.json'), 'utf8')) as BoardDef;
const ESTOP = 18;
const board: BoardDef = {
  ...relayBoard,
  relays: relayBoard.relays.map((r) => (r.ch === 3 ? { ...r, max_on_ms: 100 } : r)),
  estop: { pin: ESTOP, active_low: false, pull: 'up' },
};
const K3 = 21; // pin read-back only, settle 2 ms; active LOW
const K1 = 23;
const config = (b: BoardDef): RigConfig => ({ dev: 'rig-1', secret: '5e'.repeat(32), host: 'ws://10.0.0.2:8787/device', board: b });
const builtFirmware = useBuiltFirmware();

/** Every frame the device sends must pass the host's validator. */
const recv = recvValidated;

function boot(b: BoardDef = board) {
  const rig = loadFirmware(config(b), builtFirmware());
  rig.input(ESTOP, 0); // released: the NC contact holds it LOW
  const { s } = rig.connectUp(60000);
  return { rig, s };
}

const relay = (rid: string, ch: number, on: boolean) => ({ t: 'cmd', rid, a: 'relay.set', p: { ch, on } });

describe('minimum off-time', () => {
  // K3 with max_on_ms 100 and min_off_ms 300: at most 100 ms on in every 400 ms, whatever is sent.
  const limited: BoardDef = { ...board, relays: board.relays.map((r) => (r.ch === 3 ? { ...r, max_on_ms: 100, min_off_ms: 300 } : r)) };

  it('"on" within min_off_ms of the auto-off is rejected MIN_OFF_TIME and writes nothing; at min_off_ms it switches', () => {
    const { rig, s } = boot(limited);
    rig.advance(300); // the rest that boot started
    rig.send(s, relay('r1', 3, true));
    rig.advance(100); // auto-off at 100 ms
    expect(rig.pins[K3]).toBe(1);
    recv(rig, s);
    const writes = rig.writes.filter(([p]) => p === K3).length;
    rig.advance(200);
    rig.send(s, relay('r2', 3, true));
    rig.advance(1);
    const res = recv(rig, s).find((f) => f.t === 'res' && f.rid === 'r2');
    expect(res).toMatchObject({ st: 'rejected', code: 'MIN_OFF_TIME', ev: 'none', ver: false });
    expect(res!.msg).toMatch(/minimum off-time of 300 ms; nothing was switched: switch it on with a new command in 100 ms/);
    expect(rig.pins[K3]).toBe(1);
    expect(rig.writes.filter(([p]) => p === K3).length).toBe(writes);
    rig.advance(99); // 300 ms after the auto-off
    rig.send(s, relay('r3', 3, true));
    rig.advance(5);
    expect(recv(rig, s).find((f) => f.t === 'res' && f.rid === 'r3')).toMatchObject({ st: 'completed' });
    expect(rig.pins[K3]).toBe(0);
  });

  it('a host re-sending "on" with fresh request ids as fast as it can gets at most max_on / (max_on + min_off) of the time on', () => {
    const { rig, s } = boot(limited);
    let on = 0;
    for (let t = 0, n = 0; t < 4000; t++) {
      if (t % 10 === 0) rig.send(s, relay('d' + n++, 3, true));
      rig.advance(1);
      if (rig.pins[K3] === 0) on++;
      recv(rig, s);
    }
    expect(on / 4000).toBeLessThanOrEqual(100 / 400 + 0.01);
    expect(on).toBeGreaterThan(0);
  });

  it('boot starts the rest, and so does a command that switches it off; "off" is never refused', () => {
    const { rig, s } = boot(limited);
    rig.send(s, relay('boot', 3, true));
    rig.advance(1);
    expect(recv(rig, s).find((f) => f.t === 'res' && f.rid === 'boot')).toMatchObject({ st: 'rejected', code: 'MIN_OFF_TIME' });
    rig.advance(300);
    rig.send(s, relay('a', 3, true));
    rig.advance(5);
    rig.send(s, relay('b', 3, false));
    rig.advance(5);
    rig.send(s, relay('c', 3, false)); // off while resting: fine
    rig.advance(5);
    rig.send(s, relay('d', 3, true));
    rig.advance(5);
    const fs = recv(rig, s);
    expect(fs.find((f) => f.t === 'res' && f.rid === 'c')).toMatchObject({ st: 'completed' });
    expect(fs.find((f) => f.t === 'res' && f.rid === 'd')).toMatchObject({ st: 'rejected', code: 'MIN_OFF_TIME' });
  });

  it('the board check refuses a min_off_ms that is not a positive number of ms', async () => {
    const { checkBoard } = await import('@proofrig/protocol');
    const b = JSON.parse(JSON.stringify(relayBoard)) as BoardDef;
    b.relays[0].min_off_ms = 0;
    const c = checkBoard(b);
    expect(!c.ok && c.errors.join('\n')).toMatch(/relays\[0\]\.min_off_ms/);
  });
});

describe('max on-time', () => {
  it('K3 goes off exactly max_on_ms after it was switched on, with an evt max_on carrying the state', () => {
    const { rig, s } = boot();
    rig.send(s, relay('r1', 3, true));
    rig.advance(5);
    expect(recv(rig, s).find((f) => f.t === 'res')).toMatchObject({ rid: 'r1', st: 'completed' });
    rig.advance(94);
    expect(rig.pins[K3]).toBe(0);
    expect(recv(rig, s)).toEqual([]);
    rig.advance(1);
    expect(rig.pins[K3]).toBe(1);
    const ev = recv(rig, s).find((f) => f.t === 'evt')!;
    expect(ev).toMatchObject({ k: 'max_on', ch: 3 });
    expect(ev.id).toMatch(/^ev:/);
    expect(ev.s.relays.find((r: { ch: number }) => r.ch === 3)).toMatchObject({ cmd: false, pin: false });
  });

  it('a repeated "on" does not restart the clock; one still settling at the deadline ends failed MAX_ON_TIME', () => {
    const { rig, s } = boot();
    rig.send(s, relay('r1', 3, true));
    rig.advance(60);
    rig.send(s, relay('r2', 3, true));
    rig.advance(5);
    rig.advance(34);
    recv(rig, s);
    rig.send(s, relay('r3', 3, true)); // settles at 101 ms, after the 100 ms deadline
    rig.advance(1);
    const fs = recv(rig, s);
    expect(rig.pins[K3]).toBe(1);
    expect(fs.find((f) => f.t === 'res' && f.rid === 'r3')).toMatchObject({ st: 'failed', code: 'MAX_ON_TIME' });
    expect(fs.some((f) => f.t === 'evt' && f.k === 'max_on')).toBe(true);
  });

  it('switched off by a command before the deadline: no auto-off and no event later', () => {
    const { rig, s } = boot();
    rig.send(s, relay('r1', 3, true));
    rig.advance(50);
    rig.send(s, relay('r2', 3, false));
    rig.advance(200);
    expect(recv(rig, s).filter((f) => f.t === 'evt')).toEqual([]);
  });

  it('the event stays in the outbox until the host racks it, and is re-sent after a reconnect', () => {
    const { rig, s } = boot();
    rig.send(s, relay('r1', 3, true));
    rig.advance(150);
    const ev = recv(rig, s).find((f) => f.t === 'evt')!;
    rig.send(s, { t: 'rack', rid: 'r1' });
    rig.drop(s);
    rig.advance(10000);
    const again = rig.connectUp(60000).s;
    rig.advance(10);
    const fs = recv(rig, again);
    expect(fs.filter((f) => f.t === 'evt')).toEqual([ev]);
    rig.send(again, { t: 'rack', rid: ev.id });
    rig.drop(again);
    rig.advance(10000);
    const third = rig.connectUp(60000).s;
    rig.advance(10);
    expect(recv(rig, third).filter((f) => f.t === 'evt')).toEqual([]);
  });

  it('a command may not take a request id of the device-event namespace', () => {
    const { rig, s } = boot();
    rig.send(s, relay('ev:1', 1, true));
    rig.advance(50);
    expect(recv(rig, s)).toMatchObject([{ t: 'res', rid: 'ev:1', st: 'rejected', code: 'INVALID_ARGS' }]);
    expect(rig.pins[K1]).toBe(1);
  });
});

describe('e-stop latch', () => {
  it('a press shorter than anything latches: relays off, an evt estop, commands rejected ESTOP_LATCHED, stop still answered', () => {
    const { rig, s } = boot();
    rig.send(s, relay('r1', 1, true));
    rig.advance(50);
    expect(rig.pins[K1]).toBe(0);
    recv(rig, s);
    rig.input(ESTOP, 1);
    rig.input(ESTOP, 0);
    expect(rig.pins[K1]).toBe(1);
    rig.advance(1);
    const fs = recv(rig, s);
    expect(fs.find((f) => f.t === 'evt')).toMatchObject({ k: 'estop', s: { estop: true } });
    rig.send(s, relay('r2', 1, true));
    rig.send(s, { t: 'cmd', rid: 's1', a: 'stop', p: {} });
    rig.advance(50);
    const rs = recv(rig, s).filter((f) => f.t === 'res');
    expect(rs.find((f) => f.rid === 'r2')).toMatchObject({ st: 'rejected', code: 'ESTOP_LATCHED' });
    expect(rs.find((f) => f.rid === 's1')!.code).not.toBe('ESTOP_LATCHED');
    expect(rig.pins[K1]).toBe(1);
  });

  it('estop.clear: ESTOP_ACTIVE while the input is active, completed once released; then commands run', () => {
    const { rig, s } = boot();
    rig.input(ESTOP, 1);
    rig.send(s, { t: 'cmd', rid: 'c1', a: 'estop.clear', p: {} });
    rig.advance(1);
    expect(recv(rig, s).find((f) => f.t === 'res')).toMatchObject({ rid: 'c1', st: 'rejected', code: 'ESTOP_ACTIVE' });
    rig.input(ESTOP, 0);
    rig.send(s, { t: 'cmd', rid: 'c2', a: 'estop.clear', p: {} });
    rig.advance(1);
    expect(recv(rig, s).find((f) => f.t === 'res')).toMatchObject({ rid: 'c2', st: 'completed', ev: 'aux_contact', s: { estop: false } });
    rig.send(s, relay('r1', 1, true));
    rig.advance(50);
    expect(rig.pins[K1]).toBe(0);
  });

  it('an e-stop input already active at boot latches before any command; a board without one refuses estop.clear INVALID_ARGS', () => {
    const rig = loadFirmware(config(board), builtFirmware());
    rig.input(ESTOP, 1);
    const { s } = rig.connectUp(60000);
    rig.send(s, relay('r1', 1, true));
    rig.advance(50);
    expect(recv(rig, s).find((f) => f.t === 'res')).toMatchObject({ st: 'rejected', code: 'ESTOP_LATCHED' });
    const plain = boot(relayBoard);
    plain.rig.send(plain.s, { t: 'cmd', rid: 'c1', a: 'estop.clear', p: {} });
    plain.rig.advance(1);
    expect(recv(plain.rig, plain.s).find((f) => f.t === 'res')).toMatchObject({ st: 'rejected', code: 'INVALID_ARGS' });
  });
});
