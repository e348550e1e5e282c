// Pseudo-random numbers: seeded mulberry32 for the rig's physics, Espruino's own rand() for the firmware.

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
 * Independent streams derived from one seed, so the relays' jitter and the slide's draws (stall
 * detection delay, missed-step phase) never shift each other. The firmware's randomness is not
 * seeded: it is Espruino's fixed `rand()` sequence, restarted at every boot (espruinoRand).
 */
export function rngStreams(seed: number): { physics: Rng; slide: Rng } {
  return {
    physics: mulberry32(seed),
    slide: mulberry32((seed ^ 0x27d4eb2f) >>> 0),
  };
}

export function randomSeed(): number {
  return Math.floor(Math.random() * 4294967296) >>> 0;
}

/** RAND_MAX of glibc and newlib: Espruino's rand() masks its result with it. */
const RAND_MAX = 0x7fffffff;

/**
 * Espruino's own C `rand()` (src/jsutils.c, Marsaglia's multiply-with-carry with fixed seeds
 * 0xDEADBEEF / 0xCAFEBABE), which backs both `E.hwRand()` (`jshGetRandomNumber` on Linux and on the
 * ESP32) and `Math.random()`. Nothing seeds it at boot, so every boot of every device draws the same
 * sequence; create one per boot. Measured on the 2v29 interpreter: the first E.hwRand() values
 * after start are 2002641757, 1519824769, 548953282.
 */
export function espruinoRand(): () => number {
  let w = 0xdeadbeef;
  let z = 0xcafebabe;
  return () => {
    z = (Math.imul(36969, z & 65535) + (z >>> 16)) >>> 0;
    w = (Math.imul(18000, w & 65535) + (w >>> 16)) >>> 0;
    return (((z << 16) + w) >>> 0) & RAND_MAX;
  };
}
