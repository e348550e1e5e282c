// Properties (fast-check, fixed seed and run counts so the suite is deterministic): the frame
// validators never throw and answer every bad frame with a specific error; the dedupe ring never
// forgets an outcome the host has not confirmed; the motion profile is consistent with itself.
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { DEDUPE_RING_SIZE, moveDurationS, parseToDevice, parseToHost, profileSpeed } from '@proofrig/protocol';
// The ring through its source: the bundle is one closed IIFE with no exports, and the source is
// exactly what esbuild puts into it (the bundle tests cover the build step itself).
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
  const dist = fc.double({ min: 0.001, max: 400, noNaN: true });
  const speed = fc.double({ min: 0.25, max: 100, noNaN: true });
  const accel = fc.double({ min: 1, max: 5000, noNaN: true });

  it('a move never takes less than distance / cruise speed, and the speed never exceeds the cruise speed', () => {
    fc.assert(
      fc.property(dist, speed, accel, fc.double({ min: 0, max: 1, noNaN: true }), (d, v, a, frac) => {
        const total = moveDurationS(d, v, a);
        expect(Number.isFinite(total)).toBe(true);
        expect(total).toBeGreaterThanOrEqual(d / v - 1e-9);
        const sp = profileSpeed(frac * total, d, v, a);
        expect(sp).toBeGreaterThanOrEqual(0);
        expect(sp).toBeLessThanOrEqual(v + 1e-9);
      }),
      RUNS,
    );
  });

  it('integrating the speed over the duration covers the distance (within 1 %)', () => {
    fc.assert(
      fc.property(dist, speed, accel, (d, v, a) => {
        const total = moveDurationS(d, v, a);
        const n = 2000;
        let s = 0;
        for (let k = 0; k < n; k++) s += profileSpeed(((k + 0.5) / n) * total, d, v, a) * (total / n);
        expect(Math.abs(s - d)).toBeLessThanOrEqual(d * 0.01 + 1e-6);
      }),
      { ...RUNS, numRuns: 100 },
    );
  });

  it('a longer move never takes less time', () => {
    fc.assert(
      fc.property(dist, dist, speed, accel, (d1, d2, v, a) => {
        const [lo, hi] = d1 < d2 ? [d1, d2] : [d2, d1];
        expect(moveDurationS(hi, v, a)).toBeGreaterThanOrEqual(moveDurationS(lo, v, a) - 1e-9);
      }),
      RUNS,
    );
  });
});
