// The built firmware's stepper axis, stopping: stop (steps off, the still check), power (a reboot
// forgets homed) and the soft limits and speed bound held on the device. In the vm fake with a scripted
// host, as in firmware-stepper.test.ts (split from it; the pins, Slide and boot in helpers/stepper-rig.ts).
import { describe, expect, it } from 'vitest';
import type { BoardDef } from '@proofrig/protocol';
import { SETTLE_MS, STOP_SNAP_MS } from '../firmware/src/stepper';
import { board, relayBoard, X, STEP, EN, A, B, CPM, recv, move, home, stop, results, useStepperFirmware } from './helpers/stepper-rig';

const { boot, homed, runTo } = useStepperFirmware();

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
