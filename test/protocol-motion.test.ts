// The trapezoidal motion profile the host's move deadline and remaining-time estimate are built
// on (plan.ts): exact durations and speeds for a long move (reaches cruise speed) and a short one
// (a triangle that never does).
import { describe, expect, it } from 'vitest';
import { moveDurationS, profileSpeed } from '@proofrig/protocol';

// 10 mm/s cruise, 100 mm/s²: accelerating to cruise and back down takes 1 mm (v²/a).
const V = 10;
const A = 100;

describe('moveDurationS: seconds from rest to rest', () => {
  it('a move longer than v²/a cruises: distance / v + v / a', () => {
    expect(moveDurationS(100, V, A)).toBeCloseTo(10.1, 12);
    expect(moveDurationS(1, V, A)).toBeCloseTo(0.2, 12);
  });

  it('a move shorter than v²/a never reaches cruise speed: 2·sqrt(distance / a)', () => {
    expect(moveDurationS(0.5, V, A)).toBeCloseTo(2 * Math.sqrt(0.005), 12);
    expect(moveDurationS(0.04, V, A)).toBeCloseTo(0.04, 12);
  });

  it('the direction does not matter, and no move takes no time', () => {
    expect(moveDurationS(-100, V, A)).toBeCloseTo(10.1, 12);
    expect(moveDurationS(-0.5, V, A)).toBeCloseTo(2 * Math.sqrt(0.005), 12);
    expect(moveDurationS(0, V, A)).toBe(0);
  });
});

describe('profileSpeed: speed t seconds into the move', () => {
  it('ramps up at a, cruises at v, ramps down at a to stand still at the end (long move)', () => {
    expect(profileSpeed(0.05, 100, V, A)).toBeCloseTo(5, 9);
    expect(profileSpeed(5, 100, V, A)).toBeCloseTo(10, 9);
    expect(profileSpeed(10.08, 100, V, A)).toBeCloseTo(2, 9);
    expect(profileSpeed(5, -100, V, A)).toBeCloseTo(10, 9);
  });

  it('peaks at sqrt(distance·a) half way through a short move', () => {
    const total = moveDurationS(0.5, V, A);
    expect(profileSpeed(total / 2, 0.5, V, A)).toBeCloseTo(Math.sqrt(50), 9);
    expect(profileSpeed(0.01, 0.5, V, A)).toBeCloseTo(1, 9);
    expect(profileSpeed(total - 0.01, 0.5, V, A)).toBeCloseTo(1, 9);
  });

  it('is zero before the start and after the end', () => {
    expect(profileSpeed(-1, 100, V, A)).toBe(0);
    expect(profileSpeed(0, 100, V, A)).toBe(0);
    expect(profileSpeed(10.1, 100, V, A)).toBe(0);
    expect(profileSpeed(11, 100, V, A)).toBe(0);
  });
});
