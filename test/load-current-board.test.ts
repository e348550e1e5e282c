// The INA219 and a relay proven by its load current, as `proofrig board check` and the protocol see
// them: the INA219's addresses, shunt and ranges; a load_current feedback that names a current
// sensor of the board, thresholds a valid reading can cross, and a settle time that covers the
// contact and the conversion; the INA219 register formats as its datasheet gives them; the
// simulator's INA219 registers and relay loads with the fault open_load; the host's sentence.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { checkBoard, EVIDENCE_KINDS, ina219BusVolts, ina219ShuntVolts, loadAmpsOf, type BoardDef } from '@proofrig/protocol';
import { KINDS } from '@proofrig/protocol/kinds';
import { VirtualClock } from '@proofrig/protocol/clock';
import { Gpio } from '../sim/src/gpio.js';
import { mulberry32 } from '../sim/src/prng.js';
import { SensorModels } from '../sim/src/sensor-models.js';
import { resolveFault } from '@proofrig/sim';

const climate = (): Record<string, any> & BoardDef => JSON.parse(readFileSync(new URL('../boards/climate-rig.json', import.meta.url), 'utf8'));
/** Index of the INA219 entry and the heater relay in boards/climate-rig.json. */
const INA = 3;
const HEATER = 0;

function errorsOf(mutate: (b: Record<string, any>) => void): string[] {
  const b = climate();
  mutate(b);
  const r = checkBoard(b);
  return r.ok ? [] : r.errors;
}

describe('board check of an INA219', () => {
  it('accepts the climate rig, whose heater relay is proven by the INA219 on its I2C bus', () => {
    const b = climate();
    expect(checkBoard(b)).toMatchObject({ ok: true, warnings: [] });
    expect(b.relays[HEATER].feedback).toEqual({ kind: 'load_current', sensor: 'heater_amps', on_above: 0.5, off_below: 0.1 });
    expect(b.sensors![INA]).toMatchObject({ kind: 'ina219', address: 64, shunt_ohms: 0.1, quantity: 'current' });
  });

  it('refuses an address outside 0x40-0x4F, an SHT3x address taken twice, and no bus', () => {
    expect(errorsOf((b) => (b.sensors[INA].address = 0x50))).toEqual(['sensors[3].address: an INA219 answers at 64..79 (0x40-0x4F, set by A0/A1), not 80']);
    expect(errorsOf((b) => (b.sensors[INA].address = 0x44))).toEqual([
      'sensors[3].address: 68 is already the address of the SHT3X of sensors[0]; two chips cannot share an I2C address',
    ]);
    expect(errorsOf((b) => delete b.i2c)).toContain('sensors[3]: an INA219 sits on the I2C bus; the board needs "i2c": {"sda": PIN, "scl": PIN}');
  });

  it('refuses a missing shunt, an unknown quantity, too short a conversion, and a range the shunt input cannot measure', () => {
    expect(errorsOf((b) => delete b.sensors[INA].shunt_ohms)).toEqual([
      'sensors[3].shunt_ohms: must be the shunt resistor in ohms, above 0 and at most 100 (0.1 on the common breakouts)',
    ]);
    expect(errorsOf((b) => (b.sensors[INA].quantity = 'amps'))).toEqual(['sensors[3].quantity: must be "current", "voltage" or "power"', expect.stringMatching(/^relays\[0\]\.feedback\.sensor: heater_amps measures amps, not current/)]);
    expect(errorsOf((b) => (b.sensors[INA].conversion_ms = 1))).toEqual([
      'sensors[3].conversion_ms: an INA219 needs 2 ms for one shunt and one bus conversion; 1 ms would read before they are done',
    ]);
    expect(errorsOf((b) => (b.sensors[INA].range = { min: 0, max: 5 }))).toEqual([
      "sensors[3].range: 5 A through 0.1 ohm is 500 mV, beyond the INA219's ±320 mV shunt input; use a smaller shunt or a narrower range",
    ]);
  });

  it('two entries of one INA219 (current and bus voltage) share its address and must name the same shunt', () => {
    const volts = { id: 'heater_volts', kind: 'ina219', address: 64, shunt_ohms: 0.1, quantity: 'voltage', unit: 'V', range: { min: 0, max: 16 }, conversion_ms: 2, max_age_ms: 2000 };
    expect(errorsOf((b) => b.sensors.push(volts))).toEqual([]);
    expect(errorsOf((b) => b.sensors.push({ ...volts, shunt_ohms: 0.05 }))).toEqual([
      'sensors[4].shunt_ohms: the INA219 at 64 has shunt_ohms 0.1 in sensors[3]; entries of one chip must name the same shunt',
    ]);
    expect(errorsOf((b) => b.sensors.push({ ...volts, range: { min: 0, max: 30 } }))).toEqual(['sensors[4].range: the INA219 measures a bus of at most 26 V, not 30 V']);
  });
});

describe('board check of load_current feedback', () => {
  const fb = (f: (x: Record<string, unknown>) => void) => errorsOf((b) => f(b.relays[HEATER].feedback));

  it('refuses a sensor that does not exist or does not measure current, naming what would do', () => {
    expect(fb((x) => (x.sensor = 'heater_a'))).toEqual([
      'relays[0].feedback.sensor: "heater_a" is not a sensor of this board (sensors: air_temp, air_rh, heater_current, heater_amps); name the current sensor in series with the load',
    ]);
    expect(fb((x) => (x.sensor = 'air_temp'))).toEqual([
      'relays[0].feedback.sensor: air_temp is an SHT3X (temperature), not a current sensor; name an INA219 with quantity "current" or an ADC input whose unit is "A"',
    ]);
  });

  it('accepts the ACS712 on the ADC as the current sensor too', () => {
    expect(fb((x) => (x.sensor = 'heater_current'))).toEqual([]);
  });

  it('refuses thresholds that are missing, inverted, or that no valid reading could cross', () => {
    expect(fb((x) => delete x.on_above)).toEqual([
      'relays[0].feedback.on_above: must be the amps the load draws when on, a number above 0 (switched on is verified only above it)',
    ]);
    expect(fb((x) => (x.off_below = 0))).toEqual([
      'relays[0].feedback.off_below: must be a number of amps above 0 (switched off is verified only below it; a zero would never be undercut by a noisy reading)',
    ]);
    expect(fb((x) => (x.off_below = 0.8))).toEqual(['relays[0].feedback.off_below: 0.8 A is above on_above 0.5 A; the off threshold must not exceed the on threshold']);
    expect(fb((x) => (x.on_above = 3))).toEqual([
      "relays[0].feedback.on_above: 3 A is not inside heater_amps's plausible range -0.2..3 A, so no valid reading could ever exceed it",
    ]);
  });

  it('refuses a settle time shorter than the contact plus the conversion, and a sensor powered by the relay it watches', () => {
    expect(errorsOf((b) => (b.relays[HEATER].settle_ms = 11))).toEqual([
      "relays[0].settle_ms: 11 ms is too short for load_current feedback: it must cover the worst of operate_ms and release_ms plus heater_amps's conversion_ms (12 ms), or the current read may predate the contact",
    ]);
    expect(errorsOf((b) => (b.sensors[INA].supply = { ch: 1, power_up_ms: 10 }))).toEqual([
      "relays[0].feedback.sensor: heater_amps is powered by this relay's own contact, so it cannot measure the load switched off",
    ]);
  });

  it('an unknown feedback kind names load_current among the kinds', () => {
    expect(fb((x) => (x.kind = 'current'))).toEqual(['relays[0].feedback.kind: must be "aux_contact", "pin_readback", "load_current" or "none"']);
  });

  it('load_current is evidence of relay.set, the one place evidence values live', () => {
    expect(EVIDENCE_KINDS).toContain('load_current');
    expect(KINDS['relay.set'].evidence).toEqual(['aux_contact', 'pin_readback', 'load_current']);
  });
});

describe('the INA219 register formats', () => {
  it('bus voltage: bits 15..3 in 4 mV, CNVR and OVF below them', () => {
    expect(ina219BusVolts((3000 << 3) | 2)).toBeCloseTo(12, 9);
    expect(ina219BusVolts(0xffff)).toBeCloseTo(32.764, 9);
  });
  it('shunt voltage: two’s complement in 10 µV', () => {
    expect(ina219ShuntVolts(21000)).toBeCloseTo(0.21, 9);
    expect(ina219ShuntVolts(0x10000 - 500)).toBeCloseTo(-0.005, 9);
  });
  it('the host reads the amps a load_current result measured from its detail, and nothing from other details', () => {
    expect(loadAmpsOf('K1: load current 2.10 A on heater_amps 25 ms after switching on, above 0.5 A')).toBe(2.1);
    expect(loadAmpsOf('K1: aux contact on GPIO34 closed within 25 ms of switching on')).toBeNull();
    expect(loadAmpsOf(null)).toBeNull();
  });
});

describe('the simulator INA219 and the heater load', () => {
  const setup = () => {
    const clock = new VirtualClock();
    const contacts = new Map<number, boolean>();
    const open = new Set<number>();
    const m = new SensorModels(climate(), new Gpio(), clock, mulberry32(1), (ch) => contacts.get(ch) ?? false, undefined, undefined, (ch) => open.has(ch));
    const reg = (r: number): number | null => {
      if (!m.i2cWrite(0x40, [r])) return null;
      const d = m.i2cRead(0x40, 2)!;
      return (d[0]! << 8) | d[1]!;
    };
    return { m, reg, open, clock };
  };

  it('the heater draws its load through the shunt only while K1 is closed, and nothing with open_load', () => {
    const { m, reg, open } = setup();
    m.setLoad(1, 2.1);
    expect(reg(0x01)).toBe(0);
    m.contact(1, true);
    expect(reg(0x01)).toBe(21000); // 2.1 A × 0.1 Ω = 210 mV in 10 µV
    expect(reg(0x02)).toBe((3000 << 3) | 2); // 12 V, conversion ready, no overflow
    open.add(1);
    expect(reg(0x01)).toBe(0);
    expect(m.amps('heater_amps')).toBe(0);
  });

  it('beyond ±320 mV the shunt register saturates and OVF is set; unplugged it does not acknowledge; slow has no conversion ready', () => {
    const { m, reg } = setup();
    m.setValue('heater_amps', 3.5);
    expect(reg(0x01)).toBe(32000);
    expect(reg(0x02)! & 1).toBe(1);
    m.setValue('heater_amps', 0);
    m.setFault('heater_amps', 'slow');
    expect(reg(0x02)! & 2).toBe(0);
    m.setFault('heater_amps', 'unplugged');
    expect(reg(0x02)).toBeNull();
    expect(() => m.setFault('heater_amps', 'crc')).toThrow('sensor "heater_amps" sends no checksum, so "crc" cannot be injected; its faults: unplugged, stuck, slow, noisy');
    expect(() => m.setLoad(2, 1)).toThrow('relay channel 2 has no load_current feedback, so no load of it is modelled; loads on channels: 1');
  });

  it('reading the power register clears CNVR until the next conversion (1.06 ms); a stuck chip never sets it again', () => {
    const { m, reg, clock } = setup();
    expect(reg(0x02)! & 2).toBe(2);
    reg(0x03);
    expect(reg(0x02)! & 2).toBe(0);
    clock.advance(2);
    expect(reg(0x02)! & 2).toBe(2);
    m.setFault('heater_amps', 'stuck');
    reg(0x03);
    clock.advance(100);
    expect(reg(0x02)! & 2).toBe(0);
  });

  it('open_load is a relay fault of the rig', () => {
    expect(resolveFault(climate(), 'relay1', 'open_load')).toEqual({ kind: 'relay', ch: 1, fault: 'open_load' });
  });
});
