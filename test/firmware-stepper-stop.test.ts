// The built firmware's stepper axis, stopping: stop (steps off, the still check), power (a reboot
// forgets homed) and the soft limits and speed bound held on the device. In the vm fake with a scripted
// host, as in firmware-stepper.test.ts (split from it; the Slide helper and setup as there).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recvValidated, useBuiltFirmware } from './helpers/firmware-build';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { LATE_TICK_MS, moveDurationS } from '@proofrig/protocol';
import { loadFirmware, type Rig } from '../firmware/test/espruino-fake';
import { MIN_HZ, PROG_MS, SETTLE_MS, STOP_SNAP_MS, TICK_MS } from '../firmware/src/stepper';

const root = resolve(__dirname, '..');
const board = JSON.parse(readFileSync(join(root, 'boards/stepper-rig.json'), 'utf8')) as BoardDef;
const relayBoard = JSON.parse(readFileSync(join(root, 'boards/relay-rig-4ch.json'), 'utf8')) as BoardDef;
const X = board.steppers![0];
const STEP = X.driver.step_pin;
const DIR = X.driver.dir_pin;
const EN = X.driver.enable_pin;
const FAULT = X.driver.fault.pin;
const A = X.encoder.a_pin;
const B = X.encoder.b_pin;
const HOME = X.home.pin;
const LIMIT = X.limit_max!.pin;
const CPM = X.encoder.counts_per_mm;
const SPM = X.steps_per_mm;
const config = (b: BoardDef): RigConfig => ({ dev: 'slide-1', secret: '5e'.repeat(32), host: 'ws://10.0.0.2:8787/device', board: b });
const builtFirmware = useBuiltFirmware();

/** Every frame the device sends must pass the host's validator. */
const recv = recvValidated;

/**
 * The test's stand-in for the mechanics: after every slice of time, the carriage moves by the
 * pulses issued since (towards the DIR level's side) × ratio, and the encoder reports it.
 * ratio 1 = follows, 0 = encoder dead, 0.5 = slipping.
 */
class Slide {
  mm = 0;
  count = 0;
  ratio = 1;
  private last = 0;
  constructor(private rig: Rig) {}
  sync(): void {
    const p = this.rig.pulses(STEP);
    const d = p - this.last;
    this.last = p;
    this.mm += ((d / SPM) * (this.rig.pins[DIR] === X.driver.dir_positive_level ? 1 : -1)) * this.ratio;
    const want = Math.round(this.mm * CPM);
    this.rig.quad(A, B, want - this.count);
    this.count = want;
  }
  /** Advance ms of virtual time in 5 ms slices, the encoder following. */
  run(ms: number): void {
    for (let t = 0; t < ms; t += 5) {
      this.rig.advance(Math.min(5, ms - t));
      this.sync();
    }
  }
  /** Run until the carriage reaches mm (moving either way) or ms pass. */
  until(mm: number, ms = 20000): void {
    const start = this.mm;
    for (let t = 0; t < ms; t += 5) {
      if ((start <= mm && this.mm >= mm) || (start > mm && this.mm <= mm)) return;
      this.run(5);
    }
  }
  /** The homing/home reference: the encoder count is now 0 here. */
  zero(): void {
    this.mm = 0;
    this.count = 0;
  }
}

function boot(b: BoardDef = board) {
  const rig = loadFirmware(config(b), builtFirmware());
  const { s } = rig.connectUp(60000);
  rig.input(FAULT, 1);
  rig.input(HOME, 1);
  rig.input(LIMIT, 1);
  return { rig, s, slide: new Slide(rig) };
}

const move = (rid: string, mm: number, speed?: number) => ({ t: 'cmd', rid, a: 'stepper.move', p: speed === undefined ? { axis: 'x', mm } : { axis: 'x', mm, speed } });
const home = (rid: string) => ({ t: 'cmd', rid, a: 'stepper.home', p: { axis: 'x' } });
const stop = (rid: string, axis?: string) => ({ t: 'cmd', rid, a: 'stop', p: axis ? { axis } : {} });
const results = (fs: Record<string, any>[]) => fs.filter((f) => f.t === 'res');

/** Boot and home: the carriage starts 5 mm from the switch, homing runs until the switch closes. */
function homed(bd: BoardDef = board) {
  const b = boot(bd);
  b.rig.send(b.s, home('h1'));
  b.slide.mm = 5;
  b.slide.until(0);
  b.rig.input(HOME, 0);
  b.slide.zero();
  const fs = recv(b.rig, b.s);
  expect(results(fs)[0]).toMatchObject({ rid: 'h1', st: 'completed' });
  b.rig.input(HOME, 1);
  b.slide.sync();
  return b;
}

/** Run the slide until the result of rid arrives (or ms pass); every frame seen is returned. */
function runTo(b: ReturnType<typeof boot>, rid: string, ms = 15000): Record<string, any>[] {
  const seen: Record<string, any>[] = [];
  for (let t = 0; t < ms; t += 5) {
    b.slide.run(5);
    seen.push(...recv(b.rig, b.s));
    if (seen.some((f) => f.t === 'res' && f.rid === rid)) break;
  }
  return seen;
}

describe('firmware stepper: stop', () => {
  it('switches the steps off before the ack, cancels the move once queued edges drained, then completes after 100 ms still', () => {
    const b = homed();
    b.rig.send(b.s, move('m1', 150));
    b.slide.until(43.2);
    recv(b.rig, b.s);
    const n = b.rig.trace.length;
    b.rig.send(b.s, stop('s1'));
    expect(b.rig.trace[n]).toBe('dw ' + STEP + ' 0');
    expect(recv(b.rig, b.s)).toEqual([{ t: 'ack', rid: 's1', st: 'accepted' }]);
    // Edges from before the stop that Espruino's event queue delivers late are still counted.
    b.rig.quad(A, B, 2);
    b.slide.count += 2;
    b.slide.mm += 2 / CPM;
    b.rig.advance(STOP_SNAP_MS - 1);
    expect(recv(b.rig, b.s)).toEqual([]);
    b.rig.advance(1);
    const fs = recv(b.rig, b.s);
    const at = (b.slide.count / CPM).toFixed(2);
    expect(fs).toEqual([expect.objectContaining({ rid: 'm1', st: 'cancelled', code: 'CANCELLED', ev: 'encoder', ver: false, msg: 'x stopped by request at ' + at + ' mm (target 150 mm)' })]);
    b.slide.run(SETTLE_MS - STOP_SNAP_MS - 5);
    expect(recv(b.rig, b.s)).toEqual([]);
    b.slide.run(5);
    const [res] = recv(b.rig, b.s);
    expect(res).toMatchObject({ rid: 's1', st: 'completed', ev: 'encoder', ver: true, msg: 'motion stopped: x at ' + at + ' mm' });
    expect(res.s.axes[0]).toMatchObject({ moving: false, pos: Number(at) });
    // Holding torque stays on.
    expect(b.rig.pins[EN]).toBe(0);
  });

  it('a stop with a repeated rid is never deduplicated away: it stops again and sends a fresh result', () => {
    const b = homed();
    b.rig.send(b.s, stop('s1'));
    b.slide.run(SETTLE_MS);
    const first = results(recv(b.rig, b.s))[0];
    expect(first).toMatchObject({ rid: 's1', st: 'completed' });
    b.rig.send(b.s, move('m1', 80));
    b.slide.until(20);
    recv(b.rig, b.s);
    b.rig.send(b.s, stop('s1'));
    expect(b.rig.pwm[STEP]).toBeUndefined();
    b.slide.run(SETTLE_MS);
    const fs = recv(b.rig, b.s);
    expect(fs.map((f) => [f.t, f.rid, f.st])).toEqual([
      ['ack', 's1', 'accepted'],
      ['res', 'm1', 'cancelled'],
      ['res', 's1', 'completed'],
    ]);
    const again = fs[2];
    expect(again).toMatchObject({ rid: 's1', st: 'completed', msg: 'motion stopped: x at ' + (b.slide.count / CPM).toFixed(2) + ' mm' });
    expect(again).not.toEqual(first);
    // The ring keeps the latest: a query replays it.
    b.rig.send(b.s, { t: 'q', q: 'q1', rid: 's1' });
    expect(recv(b.rig, b.s)[1]).toEqual(again);
  });

  it('a repeated stop rid while its check is running is not refused either', () => {
    const b = homed();
    b.rig.send(b.s, stop('s1'));
    b.slide.run(50);
    b.rig.send(b.s, stop('s1', 'x'));
    b.slide.run(SETTLE_MS);
    const fs = recv(b.rig, b.s);
    expect(fs.map((f) => [f.t, f.rid, f.st])).toEqual([
      ['ack', 's1', 'accepted'],
      ['ack', 's1', 'accepted'],
      ['res', 's1', 'completed'],
    ]);
  });

  it('stops a homing run (cancelled, still not homed) and a move arriving during the stop check is BUSY', () => {
    const { rig, s, slide } = boot();
    rig.send(s, home('h1'));
    slide.mm = 50;
    slide.run(500);
    rig.send(s, stop('s1', 'x'));
    rig.send(s, home('h2'));
    slide.run(STOP_SNAP_MS);
    const fs = recv(rig, s);
    expect(fs.find((f) => f.rid === 'h1' && f.t === 'res')).toMatchObject({ st: 'cancelled', code: 'CANCELLED', msg: expect.stringMatching(/^x stopped by request at -?\d+\.\d\d mm \(homing\)$/) });
    expect(fs.find((f) => f.rid === 'h2')).toMatchObject({ st: 'rejected', code: 'BUSY', msg: 'axis x is being stopped; ask again when that has a result' });
    slide.run(SETTLE_MS - STOP_SNAP_MS);
    const [res] = recv(rig, s);
    expect(res).toMatchObject({ rid: 's1', st: 'completed' });
    expect(res.s.axes[0].homed).toBe(false);
  });

  it('fails NO_FEEDBACK when the encoder still changes during the 100 ms after the stop', () => {
    const b = homed();
    b.rig.send(b.s, move('m1', 60));
    b.slide.until(10);
    b.rig.send(b.s, stop('s1'));
    b.rig.advance(40);
    b.rig.quad(A, B, 3);
    b.rig.advance(60);
    const res = results(recv(b.rig, b.s)).find((f) => f.rid === 's1');
    expect(res).toMatchObject({ st: 'failed', code: 'NO_FEEDBACK', ev: 'encoder', ver: false });
    expect(res!.msg).toMatch(/^x still moving after the stop \(10\.\d\d -> 10\.\d\d mm\); steps are off/);
  });

  it('on a board without steppers ends unverified with evidence none', () => {
    const { rig, s } = boot(relayBoard);
    rig.send(s, stop('s1'));
    const fs = recv(rig, s);
    expect(fs[1]).toMatchObject({ rid: 's1', st: 'unverified', ev: 'none', ver: false, msg: 'no moving actuators on this board; relays keep their state' });
    expect(fs[1].code).toBeUndefined();
    rig.send(s, stop('s2', 'x'));
    expect(recv(rig, s)[0]).toMatchObject({ rid: 's2', st: 'rejected', code: 'INVALID_ARGS' });
  });

  it('still halts the axes when every outbox slot awaits the host', () => {
    const b = homed();
    b.rig.send(b.s, move('m1', 100));
    b.slide.until(10);
    for (let k = 0; k < 30; k++) b.rig.send(b.s, move('bad' + k, 999));
    recv(b.rig, b.s);
    b.rig.send(b.s, stop('s1'));
    expect(b.rig.pwm[STEP]).toBeUndefined();
    b.rig.advance(SETTLE_MS);
    const fs = results(recv(b.rig, b.s));
    expect(fs.map((f) => [f.rid, f.st])).toEqual([
      ['s1', 'unverified'],
      ['m1', 'cancelled'],
    ]);
    expect(fs[0].msg).toBe('steps switched off, not verified: the outbox is full');
    // Nothing was left waiting for a check that cannot run: once the host racks, the axis is free.
    b.rig.send(b.s, { t: 'rack', rid: 'm1' });
    b.rig.send(b.s, move('m2', 5));
    expect(recv(b.rig, b.s)[0]).toEqual({ t: 'ack', rid: 'm2', st: 'accepted' });
  });
});

describe('firmware stepper: power', () => {
  it('forgets homed on a reboot, booting with the driver disabled and STEP low', () => {
    const b = homed();
    b.rig.send(b.s, move('m1', 10));
    b.slide.run(200);
    const again = boot();
    expect(again.rig.pins[EN]).toBe(1);
    expect(again.rig.pins[STEP]).toBe(0);
    again.rig.send(again.s, move('m2', 10));
    expect(recv(again.rig, again.s)[0]).toMatchObject({ code: 'NOT_HOMED' });
  });
});

describe('firmware stepper: soft limits and speed hold on the device', () => {
  const soft: BoardDef = { ...board, steppers: [{ ...X, soft_limits: { min_mm: 0, max_mm: 120 } }] };

  it('a move whose encoder leaves the soft limits is stopped there LIMIT_HIT, though its target is inside them', () => {
    const b = homed(soft);
    b.slide.ratio = 1.5; // the carriage runs further than the steps say (a slipping coupling, a wrong lead)
    b.rig.send(b.s, move('m1', 110));
    const r = results(runTo(b, 'm1'))[0];
    expect(r).toMatchObject({ st: 'failed', code: 'LIMIT_HIT', ev: 'encoder' });
    expect(r.msg).toMatch(/left the soft limits 0\.\.120 mm/);
    expect(b.rig.pwm[STEP]).toBeUndefined();
    expect(b.slide.mm).toBeLessThan(122);
  });

  it('a target beyond the soft limits or a speed above the board bound is rejected before a single step', () => {
    const b = homed(soft);
    const before = b.rig.pulses(STEP);
    b.rig.send(b.s, move('m2', 150));
    b.rig.send(b.s, move('m3', 50, X.max_speed_mm_s + 1));
    b.slide.run(200);
    const rs = results(recv(b.rig, b.s));
    expect(rs.map((x) => [x.rid, x.st, x.code])).toEqual([
      ['m2', 'rejected', 'INVALID_ARGS'],
      ['m3', 'rejected', 'INVALID_ARGS'],
    ]);
    expect(b.rig.pulses(STEP)).toBe(before);
  });
});
