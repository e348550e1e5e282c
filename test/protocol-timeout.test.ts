// Seed 001's deadline formula: rtt_max × 3 + device_processing_max + actuator_worst × 1.5, rounded up to a whole ms.
import { describe, expect, it } from 'vitest';
import { commandDeadlineMs } from '@proofrig/protocol';

describe('the per-command deadline', () => {
  it('adds three round trips, the device processing time and one and a half actuator worst cases', () => {
    expect(commandDeadlineMs({ rttMaxMs: 10, deviceProcessingMaxMs: 20, actuatorWorstMs: 30 })).toBe(95);
    expect(commandDeadlineMs({ rttMaxMs: 7, deviceProcessingMaxMs: 0, actuatorWorstMs: 0 })).toBe(21);
    expect(commandDeadlineMs({ rttMaxMs: 0, deviceProcessingMaxMs: 50, actuatorWorstMs: 0 })).toBe(50);
  });
  it('rounds up, never down', () => {
    expect(commandDeadlineMs({ rttMaxMs: 0, deviceProcessingMaxMs: 0, actuatorWorstMs: 1 })).toBe(2);
    expect(commandDeadlineMs({ rttMaxMs: 0.1, deviceProcessingMaxMs: 0, actuatorWorstMs: 0 })).toBe(1);
  });
});
