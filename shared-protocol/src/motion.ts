// The step-rate profile, once for both sides: the firmware retunes its step train with stepHz at
// every profile tick, and the host's move deadline and remaining-time estimate (plan.ts) replay the
// same ticks with moveDurationS, so the plan is the motion the device will run, not a model of it.
import type { StepperDef } from './board.js';
import { MIN_STEP_HZ } from './constants.js';

/** The firmware retunes the step rate every STEP_TICK_MS, and ends a move at the tick that finds the steps issued. */
export const STEP_TICK_MS = 20;
/**
 * How late a profile tick may run and the move still end within half its tolerance. The step train
 * is hardware PWM: it runs on while the event loop is busy, so a tick that comes late near the
 * target overshoots by rate × lateness. Measured on the Linux interpreter under load, ticks came
 * 70-120 ms apart; an ESP32's loop stalls on Wi-Fi and flash writes. The final approach is slowed
 * so that even then the carriage stops inside the tolerance.
 */
export const LATE_TICK_MS = 150;

/** Homing gives up (NO_FEEDBACK) after the whole travel plus this without its switch closing. */
export const HOME_OVERRUN_MM = 10;

/** What the profile needs of an axis (a StepperDef has it all). */
export type MotionAxis = Pick<StepperDef, 'steps_per_mm' | 'max_speed_mm_s' | 'accel_mm_s2' | 'tolerance_mm'> & {
  driver: Pick<StepperDef['driver'], 'max_step_hz'>;
};

/**
 * Fastest speed (mm/s) with `remMm` left to go. Close in, the rate is such that a tick LATE_TICK_MS
 * late issues at most the steps left plus half the tolerance: v ≤ (rem + tol/2) / L, L the tick
 * period plus that lateness. Further out, deceleration at `a` onto that curve (tangent where its
 * own deceleration v/L reaches a), so the axis never brakes harder than its board allows.
 */
export function approachSpeed(remMm: number, a: number, tolMm: number): number {
  const l = (STEP_TICK_MS + LATE_TICK_MS) / 1000;
  const c = tolMm / 2;
  if (remMm + c >= a * l * l) return Math.sqrt(2 * a * (remMm + c) - a * a * l * l);
  return (remMm + c) / l;
}

/**
 * Step rate (Hz) for the next tick: accelerate at the board's rate from the start, cruise at `v`
 * (never above the axis's or the driver's limits), and on a move to a target (not homing, which
 * runs until its switch) the final approach above; never more than the steps left in one tick on
 * time, never under MIN_STEP_HZ.
 */
export function stepHz(ax: MotionAxis, v: number, elapsedS: number, remSteps: number, toTarget: boolean): number {
  const spm = ax.steps_per_mm;
  let s = Math.min(v, ax.max_speed_mm_s, ax.accel_mm_s2 * elapsedS);
  if (toTarget) s = Math.min(s, approachSpeed(remSteps / spm, ax.accel_mm_s2, ax.tolerance_mm));
  let hz = s * spm;
  if (hz * STEP_TICK_MS > remSteps * 1000) hz = (remSteps * 1000) / STEP_TICK_MS;
  hz = Math.round(Math.max(MIN_STEP_HZ, Math.min(hz, ax.driver.max_step_hz)));
  // Espruino's ESP32 PWM sends exactly 5000 Hz to its shared default timer: keep to this pin's own.
  return hz === 5000 ? 5001 : hz;
}

/**
 * Seconds the firmware takes to issue the steps of `distMm` at cruise `v`, its ticks on time: the
 * ticks of stepHz replayed from the MIN_STEP_HZ start to the tick that finds the steps done. A run
 * of ticks at one steady rate after the acceleration is skipped over in one go (a slow move across the
 * whole travel is otherwise ~10^5 ticks): from then on stepHz depends only on the steps left and
 * never rises as they fall, so a jump that lands on the same rate skipped only ticks of that rate.
 * Steps are counted in thousandths (a tick issues hz · STEP_TICK_MS of them, a whole number: hz is
 * one), so the sums are exact and a jump lands on the very tick the one-by-one replay reaches.
 */
export function moveDurationS(ax: MotionAxis, distMm: number, v: number, toTarget = true): number {
  const n = Math.round(Math.abs(distMm) * ax.steps_per_mm);
  if (n === 0) return 0;
  const dt = STEP_TICK_MS / 1000;
  const goal = n * 1000;
  let k = 0;
  let done = 0;
  let hz = MIN_STEP_HZ;
  for (;;) {
    k++;
    done += hz * STEP_TICK_MS;
    if (goal - done < 500) return k * dt;
    const next = stepHz(ax, v, k * dt, (goal - done) / 1000, toTarget);
    if (next === hz && ax.accel_mm_s2 * k * dt >= Math.min(v, ax.max_speed_mm_s)) {
      for (let j = Math.floor((goal - done) / (hz * STEP_TICK_MS) / 2); j >= 1; j = Math.floor(j / 2)) {
        const rem = goal - done - j * hz * STEP_TICK_MS;
        if (rem >= 500 && stepHz(ax, v, (k + j) * dt, rem / 1000, toTarget) === hz) {
          k += j;
          done += j * hz * STEP_TICK_MS;
          break;
        }
      }
    }
    hz = next;
  }
}

/**
 * The commanded position of a move over time, as the firmware's profile issues steps: [ms since
 * the start, mm] every `everyMs` (and the end), from `fromMm` to `toMm` at cruise speed `v`. For
 * showing a move against its encoder readings; the deadline uses moveDurationS.
 */
export function moveProfile(ax: MotionAxis, fromMm: number, toMm: number, v: number, everyMs = 100): [number, number][] {
  const n = Math.round(Math.abs(toMm - fromMm) * ax.steps_per_mm);
  const dir = toMm >= fromMm ? 1 : -1;
  const out: [number, number][] = [[0, fromMm]];
  if (n === 0) return out;
  const dt = STEP_TICK_MS / 1000;
  const goal = n * 1000;
  let done = 0;
  let hz = MIN_STEP_HZ;
  // A bound on ticks keeps a nonsense axis from looping for ever (a real move is far shorter).
  for (let k = 1; k < 1_000_000; k++) {
    done += hz * STEP_TICK_MS;
    const at = fromMm + (dir * Math.min(done, goal)) / 1000 / ax.steps_per_mm;
    if (goal - done < 500) {
      out.push([k * STEP_TICK_MS, toMm]);
      return out;
    }
    if ((k * STEP_TICK_MS) % everyMs === 0) out.push([k * STEP_TICK_MS, Math.round(at * 1000) / 1000]);
    hz = stepHz(ax, v, k * dt, (goal - done) / 1000, true);
  }
  return out;
}
