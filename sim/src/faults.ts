// Fault names the simulated rig understands, and the parser for the CLI's --fault DEV:PART:FAULT[@WHERE].
import type { BoardDef, StepperDef } from '@proofrig/protocol';
import { SENSOR_FAULTS, type SensorFault } from './sensor-models.js';
import { FAN_FAULTS, type FanFault } from './pwm-models.js';

/** open_load: the coil and contact work but the load carries no current (a blown lamp, a fuse out); seen by load_current feedback. */
export type RelayFault = 'coil_open' | 'welded' | 'pin_stuck_low' | 'pin_stuck_high' | 'open_load';

export const RELAY_FAULTS: readonly RelayFault[] = ['coil_open', 'welded', 'pin_stuck_low', 'pin_stuck_high', 'open_load'];

export function isRelayFault(x: unknown): x is RelayFault {
  return typeof x === 'string' && (RELAY_FAULTS as readonly string[]).indexOf(x) >= 0;
}

/** 'relay3' → 3; anything else → undefined. */
export function relayChannelOf(part: string): number | undefined {
  const m = /^relay([1-9][0-9]*)$/.exec(part);
  return m ? Number(m[1]) : undefined;
}

/** Faults of a lead-screw axis (part = the axis name, e.g. 'x'). */
export type AxisFault = 'stall' | 'missed_steps' | 'encoder_dead' | 'limit_stuck';

export const AXIS_FAULTS: readonly AxisFault[] = ['stall', 'missed_steps', 'encoder_dead', 'limit_stuck'];

/** The same, as written with their @WHERE (for messages and help). */
export const AXIS_FAULT_FORMS: readonly string[] = ['stall@MM', 'missed_steps@P%', 'encoder_dead', 'limit_stuck'];

export function isAxisFault(x: unknown): x is AxisFault {
  return typeof x === 'string' && (AXIS_FAULTS as readonly string[]).indexOf(x) >= 0;
}

/** An axis fault with its parameter resolved. */
export type AxisFaultSpec =
  /** An obstruction at `mm` the carriage cannot pass; pushing against it stalls the motor. */
  | { fault: 'stall'; mm: number }
  /** `percent` of the steps the driver accepts never move the carriage. */
  | { fault: 'missed_steps'; percent: number }
  /** Encoder A and B frozen at their levels. */
  | { fault: 'encoder_dead' }
  /** The limit_max switch reads closed wherever the carriage is. */
  | { fault: 'limit_stuck' };

/** What a setFault(part, fault, where) call means on a given board. */
export type ResolvedFault =
  | { kind: 'relay'; ch: number; fault: RelayFault | null }
  | { kind: 'axis'; axis: string; spec: AxisFaultSpec | null }
  | { kind: 'sensor'; id: string; fault: SensorFault | null }
  | { kind: 'fan'; id: string; fault: FanFault | null };

/** Mechanical end stops lie this far beyond travel.min_mm / travel.max_mm. */
export const HARD_STOP_MM = 2;

/**
 * Check a fault against a board and resolve its parameter. `where` is parseFault's `where`
 * (the text after "@"): `stall` takes a position in mm ("80" or "80mm"), `missed_steps` a
 * percentage ("5%" or "5"); the other faults take none. Throws a message naming what exists.
 */
export function resolveFault(board: BoardDef | undefined, part: string, fault: string | null, where?: string): ResolvedFault {
  const relays = board ? board.relays.map((r) => r.ch) : [];
  const axes: StepperDef[] = board && board.steppers ? board.steppers : [];
  const ch = relayChannelOf(part);
  if (ch !== undefined && relays.indexOf(ch) >= 0) {
    if (fault !== null && !isRelayFault(fault))
      throw new Error(`unknown fault "${String(fault)}" for ${part}; known: ${RELAY_FAULTS.join(', ')} (or null to clear)`);
    if (where !== undefined) throw new Error(`${part}: relay faults take no @WHERE (got "${fault}@${where}")`);
    return { kind: 'relay', ch, fault };
  }
  const sensors = board && board.sensors ? board.sensors.map((s) => s.id) : [];
  if (sensors.indexOf(part) >= 0) {
    if (fault !== null && (SENSOR_FAULTS as readonly string[]).indexOf(fault) < 0)
      throw new Error(`unknown fault "${String(fault)}" for sensor ${part}; known: ${SENSOR_FAULTS.join(', ')} (or null to clear)`);
    if (where !== undefined) throw new Error(`${part}: sensor faults take no @WHERE (got "${fault}@${where}")`);
    return { kind: 'sensor', id: part, fault: fault as SensorFault | null };
  }
  const fans = board && board.pwm ? board.pwm.filter((p) => p.kind === 'fan').map((p) => p.id) : [];
  if (fans.indexOf(part) >= 0) {
    if (fault !== null && (FAN_FAULTS as readonly string[]).indexOf(fault) < 0)
      throw new Error(`unknown fault "${String(fault)}" for fan ${part}; known: ${FAN_FAULTS.join(', ')} (or null to clear)`);
    if (where !== undefined) throw new Error(`${part}: fan faults take no @WHERE (got "${fault}@${where}")`);
    return { kind: 'fan', id: part, fault: fault as FanFault | null };
  }
  const def = axes.find((a) => a.axis === part);
  if (!def) {
    const known = relays.map((c) => `relay${c}`).concat(axes.map((a) => a.axis), sensors, fans);
    throw new Error(`unknown part "${part}"; this rig's parts: ${known.length ? known.join(', ') : 'none (no board in the stored config)'}`);
  }
  if (fault === null) {
    if (where !== undefined) throw new Error(`axis ${part}: nothing to place with @${where} when clearing (null)`);
    return { kind: 'axis', axis: part, spec: null };
  }
  const forms = `${AXIS_FAULT_FORMS.join(', ')} (or null to clear)`;
  if (!isAxisFault(fault)) throw new Error(`unknown fault "${String(fault)}" for axis ${part}; known: ${forms}`);
  const none = (): void => {
    if (where !== undefined) throw new Error(`axis ${part}: ${fault} takes no @WHERE (got "${fault}@${where}")`);
  };
  switch (fault) {
    case 'stall': {
      const lo = def.travel.min_mm - HARD_STOP_MM;
      const hi = def.travel.max_mm + HARD_STOP_MM;
      const m = where === undefined ? null : /^(-?[0-9]+(?:\.[0-9]+)?)(?:mm)?$/.exec(where);
      const mm = m ? Number(m[1]) : NaN;
      if (!(mm >= lo && mm <= hi))
        throw new Error(
          `axis ${part}: stall needs the obstruction's position in mm between ${lo} and ${hi}, e.g. stall@80 ` +
            `(setFault('${part}', 'stall', '80')); got ${where === undefined ? 'no @WHERE' : `"@${where}"`}`,
        );
      return { kind: 'axis', axis: part, spec: { fault, mm } };
    }
    case 'missed_steps': {
      const m = where === undefined ? null : /^([0-9]+(?:\.[0-9]+)?)%?$/.exec(where);
      const percent = m ? Number(m[1]) : NaN;
      if (!(percent >= 0 && percent <= 100))
        throw new Error(
          `axis ${part}: missed_steps needs a percentage 0..100, e.g. missed_steps@5% ` +
            `(setFault('${part}', 'missed_steps', '5%')); got ${where === undefined ? 'no @WHERE' : `"@${where}"`}`,
        );
      return { kind: 'axis', axis: part, spec: { fault, percent } };
    }
    case 'encoder_dead':
    case 'limit_stuck':
      none();
      if (fault === 'limit_stuck' && !def.limit_max) throw new Error(`axis ${part} has no limit_max switch to stick`);
      return { kind: 'axis', axis: part, spec: { fault } };
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Parse "DEV:PART:FAULT[@WHERE]" (e.g. "relay-rig-4ch:relay2:welded@boot2").
 * Checks syntax only; whether the device, part and fault exist is for the caller to decide.
 */
export function parseFault(spec: string): { device: string; part: string; fault: string; where?: string } {
  const bad = (why: string): Error =>
    new Error(`bad fault "${spec}": ${why}; expected DEV:PART:FAULT[@WHERE], e.g. relay-rig-4ch:relay2:welded`);
  if (typeof spec !== 'string' || spec.length === 0) throw bad('empty');
  const at = spec.indexOf('@');
  const head = at >= 0 ? spec.slice(0, at) : spec;
  const where = at >= 0 ? spec.slice(at + 1) : undefined;
  if (where !== undefined && (where.length === 0 || /\s/.test(where))) throw bad('nothing (or whitespace) after "@"');
  const parts = head.split(':');
  if (parts.length !== 3) throw bad(`found ${parts.length} ":"-separated field(s), need 3`);
  const [device, part, fault] = parts;
  const names = ['DEV', 'PART', 'FAULT'];
  parts.forEach((p, i) => {
    if (!NAME.test(p)) throw bad(`${names[i]} "${p}" must be letters, digits, "_", "-" or "."`);
  });
  return where === undefined ? { device, part, fault } : { device, part, fault, where };
}
