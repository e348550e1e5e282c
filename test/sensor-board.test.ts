// The board's sensors as `proofrig board check` and the protocol see them: clear messages for the
// ESP32's limits (ADC2 is unusable while Wi-Fi runs; SDA/SCL must be output-capable), the SHT3x's
// addresses and conversion time, a supply relay that must exist; the SHT3x CRC-8 and conversions
// as its datasheet gives them; and the simulator's sensor models with their faults.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { checkBoard, checkSensorReadArgs, crc8, sht3xCelsius, sht3xHumidity, type BoardDef } from '@proofrig/protocol';
import { KINDS } from '@proofrig/protocol/kinds';
import { VirtualClock } from '@proofrig/protocol/clock';
import { Gpio } from '../sim/src/gpio.js';
import { mulberry32 } from '../sim/src/prng.js';
import { SensorModels } from '../sim/src/sensor-models.js';
import { resolveFault } from '@proofrig/sim';

const climate = (): Record<string, unknown> & BoardDef => JSON.parse(readFileSync(new URL('../boards/climate-rig.json', import.meta.url), 'utf8'));

function errorsOf(mutate: (b: Record<string, any>) => void): string[] {
  const b = climate() as Record<string, any>;
  mutate(b);
  const r = checkBoard(b);
  return r.ok ? [] : r.errors;
}

describe('board check of sensors', () => {
  it('accepts the climate rig as it is', () => {
    expect(checkBoard(climate())).toMatchObject({ ok: true, warnings: [] });
  });

  it('refuses an ADC input on an ADC2 pin, naming the Wi-Fi reason and the pins that work', () => {
    expect(errorsOf((b) => (b.sensors[2].pin = 25))).toEqual([
      'sensors[2].pin: GPIO25 is not an ADC1 pin; ADC2 cannot be read while Wi-Fi runs, so use one of GPIO 32, 33, 34, 35, 36, 39',
    ]);
  });

  it('refuses an input-only pin for SDA or SCL, and a pin used twice', () => {
    expect(errorsOf((b) => (b.i2c.sda = 39))).toEqual(['i2c.sda: GPIO39 is input-only; I2C drives SDA low, so it needs an output pin']);
    expect(errorsOf((b) => (b.i2c.scl = 23))).toEqual(['i2c.scl: GPIO23 is already used by relays[0].pin']);
  });

  it('refuses an SHT3x at an address it cannot have, too short a conversion, an unknown supply relay, and no bus', () => {
    expect(errorsOf((b) => (b.sensors[0].address = 0x41))).toEqual(['sensors[0].address: an SHT3x answers at 68 (0x44, ADDR low) or 69 (0x45, ADDR high), not 65']);
    expect(errorsOf((b) => (b.sensors[0].conversion_ms = 5))).toEqual([
      'sensors[0].conversion_ms: an SHT3x needs up to 15 ms for a high-repeatability measurement; 5 ms would read before it is done',
    ]);
    expect(errorsOf((b) => (b.sensors[1].supply.ch = 9))).toEqual(['sensors[1].supply.ch: 9 is not a relay channel of this board (channels: 1, 2, 3)']);
    expect(errorsOf((b) => delete b.i2c)).toEqual([
      'sensors[0]: an SHT3x sits on the I2C bus; the board needs "i2c": {"sda": PIN, "scl": PIN}',
      'sensors[1]: an SHT3x sits on the I2C bus; the board needs "i2c": {"sda": PIN, "scl": PIN}',
      'sensors[3]: an INA219 sits on the I2C bus; the board needs "i2c": {"sda": PIN, "scl": PIN}',
    ]);
  });

  it('refuses a duplicate id, an empty range and a missing max age', () => {
    expect(errorsOf((b) => (b.sensors[1].id = 'air_temp'))).toEqual(['sensors[1].id: sensor "air_temp" is defined twice']);
    expect(errorsOf((b) => (b.sensors[2].range = { min: 5, max: 5 }))).toEqual([
      'sensors[2].range: must be {min, max} with max > min (the plausible values; outside them a reading is OUT_OF_RANGE)',
    ]);
    expect(errorsOf((b) => delete b.sensors[2].max_age_ms)).toEqual(['sensors[2].max_age_ms: must be a number of ms (1..600000): how old a cached reading may be']);
  });

  it('sensor.read takes an id of the board, and its deadline covers the conversion', () => {
    const b = climate();
    expect(checkSensorReadArgs({ id: 'air_rh' }, b)).toBeNull();
    expect(checkSensorReadArgs({ id: 'co2' }, b)).toBe('sensor "co2" does not exist on climate-rig; sensors: air_temp, air_rh, heater_current, heater_amps');
    expect(KINDS['sensor.read'].timing({ id: 'air_temp' }, b, null)).toEqual({ worstMs: 70, expectedMs: 20 });
  });
});

describe('the SHT3x data format', () => {
  it('CRC-8 poly 0x31 init 0xFF: 0xBEEF gives 0x92 (the datasheet example)', () => {
    expect(crc8([0xbe, 0xef], 0, 2)).toBe(0x92);
  });
  it('converts the raw words to °C and %RH', () => {
    expect(sht3xCelsius(0)).toBe(-45);
    expect(sht3xCelsius(65535)).toBe(130);
    expect(sht3xHumidity(32767.5)).toBeCloseTo(50, 6);
  });
});

describe('the simulator sensor models', () => {
  const setup = (closed = false) => {
    const clock = new VirtualClock();
    const gpio = new Gpio();
    const m = new SensorModels(climate(), gpio, clock, mulberry32(1), () => closed);
    return { clock, gpio, m };
  };

  it('an SHT3x on an unpowered supply does not acknowledge; once powered up it answers after its conversion with valid CRCs', () => {
    const { clock, m } = setup();
    expect(m.i2cWrite(0x44, [0x24, 0x00])).toBe(false);
    m.contact(3, true);
    clock.advance(499);
    expect(m.i2cWrite(0x44, [0x24, 0x00])).toBe(false);
    clock.advance(1);
    expect(m.i2cWrite(0x44, [0x24, 0x00])).toBe(true);
    expect(m.i2cRead(0x44, 6)).toBeNull(); // still converting
    clock.advance(20);
    const d = m.i2cRead(0x44, 6)!;
    expect(crc8(d, 0, 2)).toBe(d[2]);
    expect(crc8(d, 3, 2)).toBe(d[5]);
    expect(sht3xCelsius((d[0]! << 8) | d[1]!)).toBeCloseTo(22.5, 1);
    m.contact(3, false);
    expect(m.i2cWrite(0x44, [0x24, 0x00])).toBe(false);
  });

  it('faults: crc corrupts the checksum, stuck repeats the last reading, slow is not ready at the board time', () => {
    const { clock, m } = setup(true);
    const take = () => {
      m.i2cWrite(0x44, [0x24, 0x00]);
      clock.advance(20);
      return m.i2cRead(0x44, 6);
    };
    m.setFault('air_temp', 'crc');
    const bad = take()!;
    expect(crc8(bad, 0, 2)).not.toBe(bad[2]);
    m.setFault('air_temp', 'stuck');
    const first = take();
    m.setValue('air_temp', 30);
    expect(take()).toEqual(first);
    m.setFault('air_temp', 'slow');
    expect(take()).toBeNull();
    expect(() => m.setFault('co2', 'crc')).toThrow('no sensor "co2" on this rig; sensors: air_temp, air_rh, heater_current, heater_amps');
  });

  it('each answer is reported to the chaos checker as what its bytes are: stuck with crc on the same chip sends the frozen frame corrupted (chaos seed 5000), and a crc fault set during a conversion does not touch it', () => {
    const { clock, m } = setup(true);
    const told: [string, boolean][] = [];
    m.observer = (id, good) => void told.push([id, good]);
    const take = () => {
      m.i2cWrite(0x44, [0x24, 0x00]);
      clock.advance(20);
      return m.i2cRead(0x44, 6)!;
    };
    const intact = (d: number[]) => crc8(d, 0, 2) === d[2] && crc8(d, 3, 2) === d[5];

    m.setFault('air_temp', 'stuck');
    const frozen = take();
    expect(intact(frozen)).toBe(true);
    m.setFault('air_rh', 'crc'); // air_temp and air_rh are one SHT3x at 0x44: its CRC bytes go bad
    told.length = 0;
    const d = take();
    expect([d[0], d[1], d[3], d[4]]).toEqual([frozen[0], frozen[1], frozen[3], frozen[4]]);
    expect(intact(d)).toBe(false);
    expect(told).toEqual([['air_temp', false], ['air_rh', false]]);

    // The fault moves between the trigger and the read: the answer is the conversion's, and so is its report.
    m.setFault('air_temp', null);
    m.setFault('air_rh', null);
    m.i2cWrite(0x44, [0x24, 0x00]);
    m.setFault('air_rh', 'crc');
    clock.advance(20);
    told.length = 0;
    expect(intact(m.i2cRead(0x44, 6)!)).toBe(true);
    expect(told).toEqual([['air_temp', true], ['air_rh', true]]);
    m.i2cWrite(0x44, [0x24, 0x00]);
    m.setFault('air_rh', null);
    clock.advance(20);
    told.length = 0;
    expect(intact(m.i2cRead(0x44, 6)!)).toBe(false);
    expect(told).toEqual([['air_temp', false], ['air_rh', false]]);
  });

  it('drift: the reading walks up by 0.5 % of the range per second from when the fault was set, plausible until it leaves the range; clearing it reads true again', () => {
    const { clock, m } = setup(true);
    const take = () => {
      m.i2cWrite(0x44, [0x24, 0x00]);
      clock.advance(20);
      const d = m.i2cRead(0x44, 6)!;
      expect(crc8(d, 0, 2)).toBe(d[2]); // a drifting sensor still sends intact data
      return sht3xCelsius((d[0]! << 8) | d[1]!);
    };
    m.setValue('air_temp', 20);
    m.setFault('air_temp', 'drift');
    clock.advance(9980); // 10 s after the fault when the conversion is read: 0.4 °C/s over a -20..60 °C range
    expect(take()).toBeCloseTo(24, 1);
    clock.advance(89980); // 100 s: 60 °C, the top of the plausible range
    expect(take()).toBeCloseTo(60, 1);
    m.setFault('air_temp', null);
    expect(take()).toBeCloseTo(20, 1);
  });

  it('--fault DEV:SENSOR:FAULT names a sensor by its id, and an unknown fault lists the known ones', () => {
    expect(resolveFault(climate(), 'air_temp', 'unplugged')).toEqual({ kind: 'sensor', id: 'air_temp', fault: 'unplugged' });
    expect(() => resolveFault(climate(), 'air_temp', 'melted')).toThrow('unknown fault "melted" for sensor air_temp; known: unplugged, stuck, crc, slow, noisy, drift (or null to clear)');
    expect(() => resolveFault(climate(), 'co2', 'crc')).toThrow(/this rig's parts: relay1, relay2, relay3, air_temp, air_rh, heater_current/);
  });

  it('the ACS712 reads its current through the divider with noise; unplugged it reads 0 V', () => {
    const { gpio, m } = setup();
    m.setValue('heater_current', 2);
    const raw = gpio.analogRead(36);
    expect(raw * 26.757 - 13.514).toBeCloseTo(2, 0);
    m.setFault('heater_current', 'unplugged');
    expect(gpio.analogRead(36)).toBe(0);
  });
});
