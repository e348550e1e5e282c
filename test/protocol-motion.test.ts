// The step-rate profile the firmware runs and the host plans a move's deadline on (motion.ts):
// acceleration, cruise, the final approach that a late tick cannot push past the tolerance, and the
// duration as the replay of the same ticks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { motionAxis, speedFor } from './helpers/arbitraries';
import { approachSpeed, LATE_TICK_MS, MIN_STEP_HZ, moveDurationS, STEP_TICK_MS, stepHz, type MotionAxis } from '@proofrig/protocol';

// 100 steps/mm, up to 10 mm/s on this axis, 100 mm/s², tolerance 0.2 mm.
const AX: MotionAxis = { steps_per_mm: 100, max_speed_mm_s: 10, accel_mm_s2: 100, tolerance_mm: 0.2, driver: { max_step_hz: 20000 } };
const A = AX.accel_mm_s2;
/** Tick period plus the lateness the approach allows for, s. */
const L = (STEP_TICK_MS + LATE_TICK_MS) / 1000;
const HALF_TOL = AX.tolerance_mm / 2;

describe('approachSpeed: how fast the axis may go with a distance left', () => {
  it('close in, a tick LATE_TICK_MS late issues no more than the distance left plus half the tolerance', () => {
    for (const rem of [0, 0.001, 0.05, 0.1, 0.5, 1, 2]) {
      expect(approachSpeed(rem, A, AX.tolerance_mm) * L).toBeCloseTo(rem + HALF_TOL, 9);
    }
    for (const rem of [3, 5, 20, 100]) expect(approachSpeed(rem, A, AX.tolerance_mm) * L).toBeLessThan(rem + HALF_TOL);
  });

  it('further out it brakes at exactly the board acceleration, meeting the close-in curve where that curve brakes at a', () => {
    const v = (rem: number) => approachSpeed(rem, A, AX.tolerance_mm);
    // The last pair is just past the meeting point, inside half a tolerance of it: still braking at a.
    for (const [r1, r2] of [[5, 3], [100, 20], [3, A * L * L - HALF_TOL], [5, A * L * L - HALF_TOL + 0.05]]) expect(v(r1) ** 2 - v(r2) ** 2).toBeCloseTo(2 * A * (r1 - r2), 6);
    // Where they meet the speed is a·L, from either side.
    const meet = A * L * L - HALF_TOL;
    expect(v(meet)).toBeCloseTo(A * L, 9);
    expect(v(meet - 1e-9)).toBeCloseTo(A * L, 6);
  });

  it('never stands still before the target: at the target it is still half the tolerance per L', () => {
    expect(approachSpeed(0, A, AX.tolerance_mm)).toBeCloseTo(HALF_TOL / L, 12);
  });
});

describe('stepHz: the step rate for the next tick', () => {
  const far = 1e6;
  it('accelerates at the board rate from the start, then cruises at the commanded speed', () => {
    expect(stepHz(AX, 10, 0.05, far, true)).toBe(Math.round(A * 0.05 * AX.steps_per_mm));
    expect(stepHz(AX, 8, 5, far, true)).toBe(800);
  });

  it('never above the axis maximum speed or the driver maximum step rate', () => {
    expect(stepHz(AX, 1000, 5, far, true)).toBe(AX.max_speed_mm_s * AX.steps_per_mm);
    const fastAxis = { ...AX, max_speed_mm_s: 1000, accel_mm_s2: 1e6 };
    expect(stepHz(fastAxis, 1000, 5, far, true)).toBe(AX.driver.max_step_hz);
  });

  it('never under MIN_STEP_HZ, so a move always finishes', () => {
    expect(stepHz(AX, 10, 0, far, true)).toBe(MIN_STEP_HZ);
    expect(stepHz(AX, 10, 5, 0.2, true)).toBe(MIN_STEP_HZ);
  });

  it('above the floor, one tick on time never issues more than the steps left', () => {
    for (const rem of [2, 5, 10, 30, 80]) {
      const hz = stepHz(AX, 10, 5, rem, true);
      if (hz > MIN_STEP_HZ) expect(hz * STEP_TICK_MS).toBeLessThanOrEqual(rem * 1000 + 500 * STEP_TICK_MS / 1000);
    }
  });

  it('slows for the target on a move, but not while homing (which runs on until its switch)', () => {
    const rem = 100; // 1 mm left
    expect(stepHz(AX, 10, 5, rem, true)).toBe(Math.round(approachSpeed(1, A, AX.tolerance_mm) * AX.steps_per_mm));
    expect(stepHz(AX, 10, 5, rem, false)).toBe(1000);
  });

  it('never asks for exactly 5000 Hz (Espruino ESP32 PWM sends that to a shared timer)', () => {
    expect(stepHz(AX, 50, 5, far, true)).toBe(1000);
    const ax5k = { ...AX, max_speed_mm_s: 100 };
    expect(stepHz(ax5k, 50, 5, far, true)).toBe(5001);
  });
});

/** The firmware's ticks replayed one by one, as a check on moveDurationS's skipping ahead (steps in thousandths, exact). */
function tickByTick(ax: MotionAxis, mm: number, v: number, toTarget: boolean): { s: number; steps: number } {
  const n = Math.round(mm * ax.steps_per_mm);
  if (n === 0) return { s: 0, steps: 0 }; // no step to issue: no tick
  const dt = STEP_TICK_MS / 1000;
  let done = 0;
  let hz = MIN_STEP_HZ;
  for (let k = 1; ; k++) {
    done += hz * STEP_TICK_MS;
    if (n * 1000 - done < 500) return { s: k * dt, steps: done / 1000 };
    hz = stepHz(ax, v, k * dt, (n * 1000 - done) / 1000, toTarget);
  }
}

describe('moveDurationS: seconds the firmware takes to issue a move', () => {
  it('is the replay of its ticks, to the tick, for short, long and slow moves and for homing', () => {
    for (const [mm, v, toTarget] of [[0.05, 10, true], [0.5, 10, true], [3, 10, true], [100, 10, true], [100, 0.5, true], [120, 4, false]] as const) {
      expect(moveDurationS(AX, mm, v, toTarget)).toBeCloseTo(tickByTick(AX, mm, v, toTarget).s, 9);
    }
  });

  it('is the replay of its ticks, to the tick, on any axis, distance and speed the protocol accepts (its skipping ahead never changes the answer)', () => {
    fc.assert(
      fc.property(motionAxis, fc.double({ min: 0.01, max: 300, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), (ax, mm, f, toTarget) => {
        const v = speedFor(ax, f);
        expect(moveDurationS(ax, mm, v, toTarget)).toBeCloseTo(tickByTick(ax, mm, v, toTarget).s, 9);
      }),
      { numRuns: 300, seed: 8 },
    );
  });

  it('issues the steps of the distance to within one step when every tick is on time', () => {
    for (const mm of [0.05, 0.5, 3, 100]) expect(Math.abs(tickByTick(AX, mm, 10, true).steps - mm * AX.steps_per_mm)).toBeLessThanOrEqual(1);
  });

  it('costs a long move the trapezoid plus the final approach, no more', () => {
    const trapezoid = 100 / 10 + 10 / A;
    const d = moveDurationS(AX, 100, 10);
    expect(d).toBeGreaterThan(trapezoid);
    // The approach: from speed a·L its distance left + tol/2 shrinks by e every L.
    const tail = L * Math.log((A * L * L) / HALF_TOL);
    expect(d).toBeLessThan(trapezoid + tail + 3 * STEP_TICK_MS / 1000);
  });

  it('is the same either way and zero for no distance', () => {
    expect(moveDurationS(AX, -100, 10)).toBe(moveDurationS(AX, 100, 10));
    expect(moveDurationS(AX, 0, 10)).toBe(0);
  });

  it('homing cruises to the end of its run: distance / speed plus the acceleration', () => {
    expect(moveDurationS(AX, 120, 4, false)).toBeCloseTo(120 / 4 + 4 / (2 * A), 1);
  });
});
