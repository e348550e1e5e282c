// The trapezoidal motion profile both sides use: the firmware to shape the step rate, the
// host to estimate a move's duration for its deadline and remaining-time estimate.

/** Seconds to travel `distMm` from rest to rest at cruise `v` mm/s with acceleration `a` mm/s². */
export function moveDurationS(distMm: number, v: number, a: number): number {
  const d = Math.abs(distMm);
  if (d === 0) return 0;
  const accelDist = (v * v) / a; // accelerate + decelerate
  if (d >= accelDist) return d / v + v / a;
  return 2 * Math.sqrt(d / a);
}

/** Speed (mm/s) at time t into a move of `distMm`, same profile as moveDurationS. */
export function profileSpeed(t: number, distMm: number, v: number, a: number): number {
  const d = Math.abs(distMm);
  const total = moveDurationS(d, v, a);
  if (t <= 0 || t >= total) return 0;
  // A short move's triangle peaks at sqrt(d·a) half way, which a·t and a·(total − t) already cap.
  return Math.min(v, a * t, a * (total - t));
}
