// The --fault syntax of the CLI: DEV:PART:FAULT[@WHERE].
import { describe, expect, it } from 'vitest';
import { isRelayFault, parseFault, RELAY_FAULTS } from '@proofrig/sim';

describe('parseFault', () => {
  it('splits device, part and fault', () => {
    expect(parseFault('relay-rig-4ch:relay2:welded')).toEqual({ device: 'relay-rig-4ch', part: 'relay2', fault: 'welded' });
  });

  it('keeps the optional @WHERE', () => {
    expect(parseFault('rig1:relay1:coil_open@boot2')).toEqual({ device: 'rig1', part: 'relay1', fault: 'coil_open', where: 'boot2' });
    expect(parseFault('rig1:link:drop@t=5s').where).toBe('t=5s');
  });

  it.each([
    ['', /empty/],
    ['rig1:relay1', /need 3/],
    ['rig1:relay1:welded:extra', /need 3/],
    ['rig1::welded', /PART ""/],
    ['rig 1:relay1:welded', /DEV "rig 1"/],
    ['rig1:relay1:welded@', /after "@"/],
    ['rig1:relay1:we!ded', /FAULT "we!ded"/],
  ])('rejects %j with a clear message', (spec, why) => {
    expect(() => parseFault(spec)).toThrow(why);
    expect(() => parseFault(spec)).toThrow(/expected DEV:PART:FAULT\[@WHERE\]/);
  });

  it('knows the relay faults the rig can inject', () => {
    expect(RELAY_FAULTS).toEqual(['coil_open', 'welded', 'pin_stuck_low', 'pin_stuck_high', 'open_load']);
    expect(isRelayFault('welded')).toBe(true);
    expect(isRelayFault('melted')).toBe(false);
  });
});
