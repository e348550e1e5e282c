// fast-check generators shared by the property specs.
import fc from 'fast-check';
import { MIN_STEP_HZ, type MotionAxis } from '@proofrig/protocol';

/** Any axis a board file may describe, as far as the motion profile reads it. */
export const motionAxis = fc.record({
  steps_per_mm: fc.integer({ min: 10, max: 400 }),
  max_speed_mm_s: fc.double({ min: 1, max: 100, noNaN: true }),
  accel_mm_s2: fc.double({ min: 10, max: 5000, noNaN: true }),
  tolerance_mm: fc.double({ min: 0.02, max: 1, noNaN: true }),
  driver: fc.record({ max_step_hz: fc.integer({ min: 1000, max: 250000 }) }),
});

/** A cruise speed the protocol accepts on this axis, from its slowest (MIN_STEP_HZ / steps_per_mm) up, for f in [0, 1]. */
export const speedFor = (ax: MotionAxis, f: number): number => MIN_STEP_HZ / ax.steps_per_mm + f * 100;
