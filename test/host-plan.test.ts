// What the host plans before it sends a command: the deadline from the timeout formula
// (rtt_max × 3 + device_processing_max + actuator_worst × 1.5, rounded up), the estimate an agent
// is told, and the refusal of an unknown action or bad arguments, on the stepper rig
// (device_processing_max 80 ms; relay 1 settles in 25 ms; axis x: travel 0..200 mm, 30 mm/s,
// 200 mm/s², homing at 10 mm/s). A move's time is the firmware's own profile ticks replayed
// (motion.ts: acceleration, cruise, the final approach) plus 100 ms settling.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { BoardDef, DeviceState } from '@proofrig/protocol';
import { planAction } from '../host/src/core/plan.js';

// The formula is checked with device_processing_max_ms at 80 ms (the board file's own figure is measured
// and held to the firmware's instruction budget by test/firmware-cost.test.ts).
const stepper = { ...(JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8')) as BoardDef), device_processing_max_ms: 80 };
const relayRig = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const at = (axis: string, pos: number): DeviceState => ({
  up: 1,
  relays: [],
  axes: [{ axis, pos, cmd: pos, moving: false, homed: true, fault: false, home: false, limit: false }],
});
const RTT = 200;

describe('planAction: the deadline and the estimate of each action', () => {
  it('relay.set: the relay worst case (25 ms) → ceil(600 + 80 + 37.5) = 718 ms; estimate rtt + settle', () => {
    expect(planAction(stepper, 'relay.set', { ch: 1, on: true }, RTT)).toStrictEqual({ ok: true, action: 'relay.set', idempotent: true, always: false, deadlineMs: 718, estimatedMs: 225 });
  });

  it('stepper.move from a known position: 60 mm at 30 mm/s = 2.56 s of profile ticks + 100 ms → deadline 4670 ms', () => {
    const p = planAction(stepper, 'stepper.move', { axis: 'x', mm: 100 }, RTT, at('x', 40));
    expect(p).toStrictEqual({ ok: true, action: 'stepper.move', idempotent: true, always: false, deadlineMs: 4670, estimatedMs: 2860 });
  });

  it('stepper.move backwards covers the same distance as forwards', () => {
    expect(planAction(stepper, 'stepper.move', { axis: 'x', mm: 40 }, RTT, at('x', 100))).toMatchObject({ deadlineMs: 4670, estimatedMs: 2860 });
  });

  it('stepper.move at a given speed: 60 mm at 10 mm/s = 6.34 s + 100 ms → deadline 10340 ms', () => {
    expect(planAction(stepper, 'stepper.move', { axis: 'x', mm: 100, speed: 10 }, RTT, at('x', 40))).toMatchObject({ deadlineMs: 10340, estimatedMs: 6640 });
  });

  it('stepper.move with no known position plans for the whole travel (200 mm, 7.22 s): deadline 11660 ms', () => {
    const whole = { ok: true, action: 'stepper.move', idempotent: true, always: false, deadlineMs: 11660 };
    expect(planAction(stepper, 'stepper.move', { axis: 'x', mm: 100 }, RTT)).toMatchObject(whole);
    expect(planAction(stepper, 'stepper.move', { axis: 'x', mm: 100 }, RTT, at('y', 40))).toMatchObject(whole);
    expect(planAction(stepper, 'stepper.move', { axis: 'x', mm: 100 }, RTT, { up: 1, relays: [] })).toMatchObject(whole);
    expect((planAction(stepper, 'stepper.move', { axis: 'x', mm: 100 }, RTT) as { estimatedMs: number }).estimatedMs).toBeCloseTo(200 + 7220 + 100, 6);
  });

  it('the whole travel is max − min: the same 200 mm on an axis that runs from 50 to 250 mm', () => {
    const ax = stepper.steppers![0];
    const shifted: BoardDef = { ...stepper, steppers: [{ ...ax, travel: { min_mm: 50, max_mm: 250 } }] };
    expect(planAction(shifted, 'stepper.move', { axis: 'x', mm: 100 }, RTT)).toMatchObject({ ok: true, deadlineMs: 11660 });
    expect(planAction(shifted, 'stepper.home', { axis: 'x' }, RTT)).toMatchObject({ ok: true, deadlineMs: 32390 });
  });

  it('stepper.home: the whole travel plus the 10 mm it may overrun at the homing speed, 21.04 s + 100 ms → deadline 32390 ms', () => {
    expect(planAction(stepper, 'stepper.home', { axis: 'x' }, RTT, at('x', 10))).toStrictEqual({ ok: true, action: 'stepper.home', idempotent: true, always: false, deadlineMs: 32390, estimatedMs: 21340 });
  });

  it('estop.clear: no actuator time → 680 ms', () => {
    expect(planAction(stepper, 'estop.clear', {}, RTT)).toStrictEqual({ ok: true, action: 'estop.clear', idempotent: true, always: false, deadlineMs: 680, estimatedMs: 200 });
  });

  it('stop: the longest braking of any axis (30/200 s) + 100 ms → 1055 ms; it always executes', () => {
    expect(planAction(stepper, 'stop', {}, RTT)).toStrictEqual({ ok: true, action: 'stop', idempotent: true, always: true, deadlineMs: 1055, estimatedMs: 450 });
    expect(planAction(stepper, 'stop', { axis: 'x' }, RTT)).toMatchObject({ deadlineMs: 1055 });
  });

  it('stop on a rig without axes waits only the settling time', () => {
    expect(planAction(relayRig, 'stop', {}, RTT)).toMatchObject({ ok: true, deadlineMs: Math.ceil(3 * RTT + relayRig.device_processing_max_ms + 150), estimatedMs: 300 });
  });

  it('a slower link gives a longer deadline: rtt counts three times', () => {
    expect(planAction(stepper, 'estop.clear', {}, 1000)).toMatchObject({ deadlineMs: 3080, estimatedMs: 1000 });
  });
});

describe('planAction refuses what it cannot plan, saying why', () => {
  it('an unknown action is UNKNOWN_ACTION naming the actions there are', () => {
    expect(planAction(stepper, 'relay.toggle', {}, RTT)).toStrictEqual({
      ok: false,
      code: 'UNKNOWN_ACTION',
      detail: 'action "relay.toggle" is not one of relay.set, stepper.move, stepper.home, stop, estop.clear, sensor.read, fan.set, servo.set',
    });
  });

  it('bad arguments are INVALID_ARGS with the check’s reason, per action', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['relay.set', { ch: 9, on: true }, 'ch 9 does not exist on stepper-rig; valid channels: 1'],
      ['stepper.move', { axis: 'x', mm: 201 }, 'target 201 mm is outside the travel of axis x: 0..200 mm'],
      ['stepper.home', { axis: 'z' }, 'axis "z" does not exist on stepper-rig; axes: x'],
      ['estop.clear', { now: true }, 'estop.clear takes no arguments (got now)'],
      ['stop', { axis: 'z' }, 'axis "z" does not exist on stepper-rig; axes: x'],
    ];
    for (const [action, args, detail] of cases)
      expect(planAction(stepper, action, args, RTT), action).toStrictEqual({ ok: false, code: 'INVALID_ARGS', detail });
  });
});
