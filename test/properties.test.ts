// Properties (fast-check, fixed seed and run counts so the suite is deterministic): the frame
// validators never throw and answer every bad frame with a specific error; the dedupe ring never
// forgets an outcome the host has not confirmed; the motion profile is consistent with itself.
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { motionAxis, speedFor } from './helpers/arbitraries';
import { counterOf, withCounter, DEDUPE_RING_SIZE, LATE_TICK_MS, MIN_STEP_HZ, moveDurationS, parseToDevice, parseToHost, STEP_TICK_MS, stepHz, type MotionAxis } from '@proofrig/protocol';
// The ring through its source: the bundle is one closed IIFE with no exports, and the source is
// exactly what esbuild puts into it (the bundle tests cover the build step itself).
import { isoTime } from '../host/src/core/iso';
import { DONE, RUNNING, ringAck, ringAdd, ringDone, ringFind, ringPending, ringReset, ringState } from '../firmware/src/dedupe';

const RUNS = { numRuns: 300, seed: 20261201 };

const TO_DEVICE = new Set(['chal', 'ok', 'cmd', 'rack', 'q', 'hb', 'err']);
const TO_HOST = new Set(['hello', 'auth', 'ack', 'prog', 'res', 'state', 'hb', 'err']);

/** Frames that look almost right: known types with random field values. */
const nearFrame = fc.record(
  {
    t: fc.constantFrom(...TO_DEVICE, ...TO_HOST, 'nope', ''),
    rid: fc.oneof(fc.string(), fc.integer(), fc.constant(undefined)),
    a: fc.oneof(fc.constantFrom('relay.set', 'stepper.move', 'stop'), fc.string()),
    p: fc.oneof(fc.object(), fc.anything()),
    q: fc.oneof(fc.string(), fc.anything()),
    st: fc.oneof(fc.constantFrom('completed', 'failed', 'running', 'accepted'), fc.string()),
    s: fc.anything(),
    v: fc.oneof(fc.constant(1), fc.anything()),
    code: fc.oneof(fc.constantFrom('BUSY', 'TIMEOUT'), fc.string()),
    msg: fc.anything(),
  },
  { requiredKeys: ['t'] },
);

function checkParse(r: { ok: boolean; code?: string; msg?: string; f?: { t: string } }, types: Set<string>): void {
  if (r.ok) expect(types.has(r.f!.t)).toBe(true);
  else {
    expect(['MALFORMED_FRAME', 'UNKNOWN_FRAME']).toContain(r.code);
    expect(typeof r.msg).toBe('string');
    expect(r.msg!.length).toBeGreaterThan(0);
  }
}

describe('frame validators (shared-protocol)', () => {
  it('never throw on any text, and name a specific error for each bad one', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.json(), fc.anything().map((x) => JSON.stringify(x) ?? 'undefined')), (text) => {
        checkParse(parseToDevice(text) as never, TO_DEVICE);
        checkParse(parseToHost(text) as never, TO_HOST);
      }),
      RUNS,
    );
  });

  it('frames of a known type with arbitrary fields are accepted only when well formed, never crash', () => {
    fc.assert(
      fc.property(nearFrame, (f) => {
        const text = JSON.stringify(f);
        checkParse(parseToDevice(text) as never, TO_DEVICE);
        checkParse(parseToHost(text) as never, TO_HOST);
      }),
      RUNS,
    );
  });

  it('non-strings are refused, not thrown on', () => {
    fc.assert(
      fc.property(fc.anything(), (x) => {
        if (typeof x === 'string') return;
        expect(parseToDevice(x).ok).toBe(false);
        expect(parseToHost(x).ok).toBe(false);
      }),
      RUNS,
    );
  });
});

describe('the sealed counter a receiver reads to tell a lost frame (shared-protocol/src/seal.ts)', () => {
  it('counterOf reads back exactly the counter withCounter added, whatever the body', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (o, n) => {
        expect(counterOf(withCounter(JSON.stringify(o), n))).toBe(n);
      }),
      RUNS,
    );
  });

  it('a body without a valid counter as its last field reads -1, never a number', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const n = counterOf(text);
        if (n !== -1) expect(text.endsWith(withCounter('}', n))).toBe(true);
      }),
      RUNS,
    );
    for (const t of ['{}', '{"n":0}', '{"n":01}', '{"n":}', '{"x":"n":5}', '{"n":5 }', '{"a":1,"n":-3}'])
      expect(counterOf(t), t).toBe(-1);
    expect(counterOf('{"a":1,"n":12}')).toBe(12);
  });
});

describe('dedupe ring (firmware/src/dedupe.ts)', () => {
  beforeEach(() => ringReset());

  type Op = { k: 'add'; rid: number } | { k: 'done'; rid: number } | { k: 'ack'; rid: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ k: fc.constant('add' as const), rid: fc.nat(60) }),
    fc.record({ k: fc.constant('done' as const), rid: fc.nat(60) }),
    fc.record({ k: fc.constant('ack' as const), rid: fc.nat(60) }),
  );

  it('a running or unconfirmed request is never evicted; a full ring refuses instead; a repeat finds its slot', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        ringReset();
        // The model: rid → running | unconfirmed | confirmed, for rids the ring must still know.
        const must = new Map<string, 'running' | 'unconfirmed'>();
        for (const o of ops) {
          const rid = 'r' + o.rid;
          const i = ringFind(rid);
          if (o.k === 'add') {
            if (i >= 0) continue; // the executor replays instead of adding
            const slot = ringAdd(rid);
            if (slot < 0) expect(must.size).toBe(DEDUPE_RING_SIZE);
            else {
              expect(ringState(slot)).toBe(RUNNING);
              must.set(rid, 'running');
            }
          } else if (o.k === 'done' && i >= 0 && ringState(i) === RUNNING) {
            ringDone(i, '{}');
            must.set(rid, 'unconfirmed');
          } else if (o.k === 'ack') {
            ringAck(rid);
            if (must.get(rid) === 'unconfirmed') must.delete(rid);
          }
          for (const [r, st] of must) {
            const j = ringFind(r);
            expect(j).toBeGreaterThanOrEqual(0);
            expect(ringState(j)).toBe(st === 'running' ? RUNNING : DONE);
            if (st === 'unconfirmed') expect(ringPending(j)).toBe(true);
          }
        }
      }),
      { ...RUNS, numRuns: 200 },
    );
  });
});

describe('motion profile (shared-protocol/src/motion.ts)', () => {
  const dist = fc.double({ min: 0.01, max: 400, noNaN: true });
  const frac = fc.double({ min: 0, max: 1, noNaN: true });

  /** Replays the firmware's ticks, each late by lateMs(k), and returns the steps issued. */
  function run(ax: MotionAxis, mm: number, v: number, lateMs: (k: number) => number): number {
    const n = Math.round(mm * ax.steps_per_mm);
    let t = 0;
    let sd = 0;
    let hz = MIN_STEP_HZ;
    for (let k = 1; k < 1e6; k++) {
      const dt = (STEP_TICK_MS + lateMs(k)) / 1000;
      t += dt;
      sd += hz * dt;
      if (n - sd < 0.5) return sd;
      hz = stepHz(ax, v, t, n - sd, true);
    }
    throw new Error('never finished');
  }

  it('a move never takes less than distance / cruise speed', () => {
    fc.assert(
      fc.property(motionAxis, dist, frac, (ax, d, f) => {
        const v = speedFor(ax, f);
        const total = moveDurationS(ax, d, v);
        expect(Number.isFinite(total)).toBe(true);
        // Never faster than the cruise speed and the axis's limits, unless those are under the MIN_STEP_HZ floor.
        const top = Math.max(MIN_STEP_HZ / ax.steps_per_mm, Math.min(v, ax.max_speed_mm_s, ax.driver.max_step_hz / ax.steps_per_mm));
        expect(total).toBeGreaterThanOrEqual(Math.round(d * ax.steps_per_mm) / ax.steps_per_mm / top - STEP_TICK_MS / 1000);
      }),
      RUNS,
    );
  });

  it('with every tick on time the steps issued are the distance to within one step', () => {
    fc.assert(
      fc.property(motionAxis, dist, frac, (ax, d, f) => {
        const steps = run(ax, d, speedFor(ax, f), () => 0);
        expect(Math.abs(steps - Math.round(d * ax.steps_per_mm))).toBeLessThanOrEqual(1);
      }),
      { ...RUNS, numRuns: 150 },
    );
  });

  it('ticks up to LATE_TICK_MS late never carry the axis past its target by more than half the tolerance (or one floor-rate tick)', () => {
    fc.assert(
      fc.property(motionAxis, dist, frac, fc.integer({ min: 1, max: 2 ** 30 }), (ax, d, f, seed) => {
        let x = seed;
        const late = () => ((x = (x * 1103515245 + 12345) % 2 ** 31), (x % 4 === 0 ? LATE_TICK_MS : (x >> 4) % (LATE_TICK_MS + 1)));
        const over = (run(ax, d, speedFor(ax, f), late) - Math.round(d * ax.steps_per_mm)) / ax.steps_per_mm;
        // The MIN_STEP_HZ floor is the one rate the approach cannot go under.
        const floorMm = (MIN_STEP_HZ * (STEP_TICK_MS + LATE_TICK_MS)) / 1000 / ax.steps_per_mm;
        expect(over).toBeLessThanOrEqual(Math.max(ax.tolerance_mm / 2, floorMm) + 1 / ax.steps_per_mm);
      }),
      { ...RUNS, numRuns: 150 },
    );
  });

  it('a longer move never takes less time (to the tick)', () => {
    fc.assert(
      fc.property(motionAxis, dist, dist, frac, (ax, d1, d2, f) => {
        const [lo, hi] = d1 < d2 ? [d1, d2] : [d2, d1];
        const v = speedFor(ax, f);
        expect(moveDurationS(ax, hi, v)).toBeGreaterThanOrEqual(moveDurationS(ax, lo, v) - STEP_TICK_MS / 1000 - 1e-9);
      }),
      RUNS,
    );
  });
});

describe('status times (host/src/core/iso.ts)', () => {
  it('isoTime(ms) is exactly new Date(ms).toISOString(), for any time, in any order', () => {
    const ms = fc.oneof(
      fc.integer({ min: 0, max: 253402300799999 }),
      // Around second boundaries, where the shared prefix changes.
      fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }).chain((s) => fc.integer({ min: s * 1000 - 2, max: s * 1000 + 1 })),
      fc.constantFrom(-1, -62198755200001, 253402300800000, 1.5, 1_700_000_000_000.7),
    );
    fc.assert(fc.property(fc.array(ms, { minLength: 1, maxLength: 8 }), (xs) => xs.every((m) => isoTime(m) === new Date(m).toISOString())), RUNS);
  });
});
