// The readings the dashboard plots. The host keeps no history of readings of its own: every state
// snapshot a device sends carries the last reading of each sensor, and the journal keeps, with each
// command, the snapshot its result carried (device_state, device_state_at). So the page's first
// snapshot takes the readings from the device's recent commands in the journal (a sensor read, a
// relay result, anything that carried them: they survive a host restart), and every later state
// snapshot comes to the page live with its device. A reading is known by the device's boot id and
// its uptime, not by its host time, which each snapshot works out anew (sensor-reading.ts).
import type { DeviceState, SensorDef } from '@proofrig/protocol';
import type { HostCore } from '../core/host.js';
import { hostTime, stateOf } from '../mcp/sensor-reading.js';

/** How many readings of each sensor the page keeps and draws. */
export const PLOT_READINGS = 60;
/** How many recent commands of a device the first snapshot looks through for readings. */
const JOURNAL_COMMANDS = 400;

/** One reading for the page: which one it is (boot/uptime), when (host ms), its value (status ok only) and status. */
export interface Point {
  id: string;
  key: string;
  t: number;
  v: number | null;
  st: string;
}

/** The readings a snapshot carries, one per sensor that has been read since boot. */
export function pointsOf(sensors: SensorDef[], state: DeviceState | null, observedAt: string | number | null, boot: string | null): Point[] {
  const out: Point[] = [];
  for (const s of sensors) {
    const r = stateOf(state, s.id);
    const t = r && state ? hostTime(state, observedAt, r) : null;
    if (r && t !== null) out.push({ id: s.id, key: `${boot ?? ''}/${r.at}`, t, v: r.st === 'ok' ? r.v : null, st: r.st });
  }
  return out;
}

/** The device's readings per sensor from the snapshots of its recent commands in the journal, oldest first, the last PLOT_READINGS each. */
export function journalReadings(core: HostCore, dev: string): Record<string, Point[]> {
  const sensors = core.devices.board(dev)?.sensors ?? [];
  if (!sensors.length) return {};
  const seen = new Set<string>();
  const by: Record<string, Point[]> = {};
  for (const c of core.journal.recent({ device_id: dev, limit: JOURNAL_COMMANDS })) {
    if (!c.device_state || c.device_state_at === null) continue;
    for (const p of pointsOf(sensors, c.device_state, c.device_state_at, c.boot_id)) {
      if (seen.has(p.id + '@' + p.key)) continue;
      seen.add(p.id + '@' + p.key);
      (by[p.id] ??= []).push(p);
    }
  }
  for (const id of Object.keys(by)) by[id] = by[id]!.sort((a, b) => a.t - b.t).slice(-PLOT_READINGS);
  return by;
}
