// Seeded pseudo-random numbers (mulberry32): the simulator's only source of randomness.

/** A generator of floats in [0, 1). The same seed always yields the same sequence. */
export type Rng = () => number;

export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Independent streams derived from one seed, so firmware randomness never shifts relay jitter and
 * the slide's draws (stall detection delay, missed-step phase) shift neither.
 */
export function rngStreams(seed: number): { physics: Rng; firmware: Rng; slide: Rng } {
  return {
    physics: mulberry32(seed),
    firmware: mulberry32((seed ^ 0x5bd1e995) >>> 0),
    slide: mulberry32((seed ^ 0x27d4eb2f) >>> 0),
  };
}

export function randomSeed(): number {
  return Math.floor(Math.random() * 4294967296) >>> 0;
}
