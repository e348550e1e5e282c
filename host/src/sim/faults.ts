// Fault names the simulated rig understands, and the parser for the CLI's --fault DEV:PART:FAULT[@WHERE].

export type RelayFault = 'coil_open' | 'welded' | 'pin_stuck_low' | 'pin_stuck_high';

export const RELAY_FAULTS: readonly RelayFault[] = ['coil_open', 'welded', 'pin_stuck_low', 'pin_stuck_high'];

export function isRelayFault(x: unknown): x is RelayFault {
  return typeof x === 'string' && (RELAY_FAULTS as readonly string[]).indexOf(x) >= 0;
}

/** 'relay3' → 3; anything else → undefined. */
export function relayChannelOf(part: string): number | undefined {
  const m = /^relay([1-9][0-9]*)$/.exec(part);
  return m ? Number(m[1]) : undefined;
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
