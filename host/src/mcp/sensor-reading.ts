// A sensor's last reading as the host knows it from the device's state snapshots: one source of
// truth for read_sensor's cache path, the sensor resources, list_devices and the dashboard. The
// device reports each reading with its own uptime; the host turns that into host time from the
// snapshot it came in and when that snapshot was observed. A cached reading older than the
// sensor's max_age_ms is SENSOR_STALE and has no value.
import { z } from 'zod';
import type { DeviceState, SensorDef, SensorState } from '@proofrig/protocol';
import type { HostCore } from '../core/host.js';

export const SensorReadingSchema = z.object({
  device_id: z.string(),
  sensor: z.string(),
  label: z.string().nullable(),
  unit: z.string(),
  value: z.number().nullable().describe('the measured value; null whenever status is not "ok"'),
  status: z.string().describe('"ok", or why there is no value: BUS_NAK, SENSOR_CRC, OUT_OF_RANGE, SENSOR_STALE, an error code of the command, "not_read" or "none" (no reading since boot)'),
  measured_at: z.string().nullable().describe('when the sensor was measured (host clock)'),
  age_ms: z.number().nullable(),
  source: z.enum(['device', 'cache']),
  command_id: z.string().nullable().describe('the sensor.read command (source device)'),
  detail: z.string().nullable(),
});
export type Reading = z.infer<typeof SensorReadingSchema>;

/** A reading's device uptime turned into host ms, from the snapshot it came in and when that was observed (ms or ISO). */
export function hostTime(state: { up: number }, observedAt: string | number | null, r: SensorState): number | null {
  if (observedAt === null || r.at <= 0) return null;
  return (typeof observedAt === 'number' ? observedAt : Date.parse(observedAt)) - (state.up - r.at);
}

/** The sensor's entry in a state snapshot; undefined when the snapshot has none or it was never read since boot. */
export function stateOf(state: DeviceState | null | undefined, id: string): SensorState | undefined {
  const r = state?.sensors?.find((x) => x.id === id);
  return r && r.st !== 'none' ? r : undefined;
}

/** The last reading of sensor `s` of device `dev` from the host's state cache (source "cache"). */
export function cachedReading(core: HostCore, dev: string, s: SensorDef, now = core.clock.now()): Reading {
  const v = core.devices.view(dev);
  const r = stateOf(v?.state, s.id);
  const base = { device_id: dev, sensor: s.id, label: s.label ?? null, unit: s.unit, source: 'cache' as const, command_id: null, detail: null };
  if (!v?.state || !r) return { ...base, value: null, status: 'none', measured_at: null, age_ms: null };
  const at = hostTime(v.state, v.state_observed_at, r);
  const age = at === null ? null : now - at;
  const stale = age !== null && age > s.max_age_ms;
  return { ...base, value: stale || r.st !== 'ok' ? null : r.v, status: stale ? 'SENSOR_STALE' : r.st, measured_at: at === null ? null : new Date(at).toISOString(), age_ms: age };
}

/** When a cached reading turns SENSOR_STALE (host ms), or null when it has no time or already is. */
export function staleAt(reading: Reading, s: SensorDef): number | null {
  if (reading.measured_at === null || reading.status === 'SENSOR_STALE' || reading.status === 'none') return null;
  return Date.parse(reading.measured_at) + s.max_age_ms + 1;
}
