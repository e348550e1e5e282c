// The chaos checker's sensor invariants (chaos/src/invariants.ts): no reading is reported valid
// when the sensor's answer at that moment was a NAK, a failed CRC, no power or no conversion; and no
// relay is completed by its load current when the current its sensor saw did not cross the
// threshold. Judged at the moment the device took the reading (its snapshot's `at`), from the rig's
// ground truth (the simulator's sensor answers), not from what the device says.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { SimRig } from '@proofrig/sim';
import type { CommandStatus } from '../host/src/core/command-view.js';
import { Checker } from '../chaos/src/invariants.js';

const BOARD: BoardDef = JSON.parse(readFileSync(new URL('../boards/climate-rig.json', import.meta.url), 'utf8'));
const BOOT_AT = 1_000_000;

function setup() {
  const clock = new VirtualClock(BOOT_AT);
  const rig = { board: BOARD, relay: () => ({ energised: true, contactClosed: true }), pinLevel: () => 0 } as unknown as SimRig;
  const checker = new Checker(clock, () => rig, () => undefined);
  checker.booted('rig1', 1);
  const submit = (rid: string, action: string, args: Record<string, unknown>) =>
    checker.submitted({ command_id: 'c-' + rid, request_id: rid, device_id: 'rig1', action, args, state: 'sent', terminal: false, submitted_at: new Date(BOOT_AT).toISOString(), deadline_ms: 4000, estimated_seconds: 1 } as unknown as CommandStatus);
  /** The device sends a result made now, carrying sensor id's reading taken now. */
  const result = (rid: string, st: string, ev: string, id: string, v: number | null, rst: string) => {
    const at = clock.now() - BOOT_AT;
    const res = { t: 'res', rid, st, ev, ver: st === 'completed', s: { up: at, relays: [], sensors: [{ id, v, st: rst, at }] }, ms: 1 };
    checker.frame('send', 'rig1', 'to_host', JSON.stringify(res));
  };
  return { clock, checker, submit, result };
}

const invariants = (c: Checker) => c.violations.map((v) => v.invariant);

describe('chaos checker: readings and load current against the rig’s ground truth', () => {
  it('a reading reported ok when the SHT3x did not acknowledge at that moment is a violation; one after a good answer is not', () => {
    const t = setup();
    t.clock.advance(100);
    t.submit('r1', 'sensor.read', { id: 'air_temp' });
    t.checker.sensor('rig1', 'air_temp', true, null);
    t.result('r1', 'completed', 'sensor', 'air_temp', 22.5, 'ok');
    expect(t.checker.violations).toEqual([]);

    t.clock.advance(100);
    t.submit('r2', 'sensor.read', { id: 'air_temp' });
    t.checker.sensor('rig1', 'air_temp', false, null);
    t.checker.sensor('rig1', 'air_temp', false, null);
    t.result('r2', 'completed', 'sensor', 'air_temp', 22.5, 'ok');
    expect(invariants(t.checker)).toEqual(['no reading reported valid when the bus NAKed, the CRC failed or the sensor had no power']);
  });

  it('a bad answer reported as its error code (no value) is no violation', () => {
    const t = setup();
    t.clock.advance(100);
    t.submit('r1', 'sensor.read', { id: 'air_rh' });
    t.checker.sensor('rig1', 'air_rh', false, null);
    t.result('r1', 'failed', 'none', 'air_rh', null, 'BUS_NAK');
    expect(t.checker.violations).toEqual([]);
  });

  it('the heater completed by its load current while its INA219 saw no current is a violation; above on_above it is not', () => {
    const t = setup();
    t.clock.advance(100);
    t.submit('h1', 'relay.set', { ch: 1, on: true });
    t.checker.sensor('rig1', 'heater_amps', true, 2.1);
    t.result('h1', 'completed', 'load_current', 'heater_amps', 2.1, 'ok');
    expect(t.checker.violations).toEqual([]);

    t.clock.advance(100);
    t.submit('h2', 'relay.set', { ch: 1, on: true });
    t.checker.sensor('rig1', 'heater_amps', true, 0);
    t.result('h2', 'completed', 'load_current', 'heater_amps', 2.1, 'ok');
    expect(invariants(t.checker)).toEqual(['no relay completed by its load current when no current flowed']);
    expect(t.checker.violations[0]!.event).toBe('t=1000200 device said completed (load_current) switching on=true while heater_amps saw 0 A (on_above 0.5, off_below 0.1)');
  });
});
