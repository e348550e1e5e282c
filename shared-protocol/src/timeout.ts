// The per-command deadline:
//   timeout = rtt_max × 3 + device_processing_max + actuator_worst × 1.5
// rtt × 3: command, ack and confirmation each cross the link, plus one spare round trip.
// actuator × 1.5: the datasheet worst case still drifts with voltage, temperature and wear.

export interface DeadlineInputs {
  rttMaxMs: number;
  deviceProcessingMaxMs: number;
  actuatorWorstMs: number;
}

export function commandDeadlineMs(i: DeadlineInputs): number {
  return Math.ceil(i.rttMaxMs * 3 + i.deviceProcessingMaxMs + i.actuatorWorstMs * 1.5);
}
