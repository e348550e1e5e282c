// Sensors a device reads on request (action sensor.read): an SHT3x temperature/humidity sensor on
// the board's I2C bus, and ADC inputs such as an ACS712 current sensor. A reading is a number only
// when the bus answered, its CRC matched and it lies in the plausible range; otherwise it is an
// error code (BUS_NAK, SENSOR_CRC, OUT_OF_RANGE), never a number. The firmware bundles this file:
// ES5-compatible code only.
import type { BoardDef, Gpio, Ms } from './board.js';
import { echo } from './check.js';

/** The board's I2C bus (Espruino's I2C1): its pins and clock. */
export interface I2cBusDef {
  sda: Gpio;
  scl: Gpio;
  /**
   * Bus clock, Hz (default 100000).
   * @asType integer
   * @minimum 10000
   * @maximum 400000
   */
  bitrate?: number;
}

/** A sensor on a relay-switched supply: it answers only once that relay is on and power_up_ms passed. */
export interface SensorSupply {
  /**
   * The relay channel of this board that powers the sensor.
   * @asType integer
   */
  ch: number;
  /** Time from power on until the sensor answers, ms. */
  power_up_ms: Ms;
}

interface SensorBase {
  /**
   * Short id the firmware reports it under, e.g. "air_temp".
   * @pattern ^[a-z][a-z0-9_]{0,15}$
   */
  id: string;
  /** What it measures, in the words people use ("air temperature"); read_sensor accepts it for the id. */
  label?: string;
  /** Unit of the value after conversion, e.g. "°C", "%RH", "A" (1-12 characters). */
  unit: string;
  /** Plausible range: a value outside it is OUT_OF_RANGE (a broken sensor or wire), never a number. */
  range: { min: number; max: number };
  /** Worst-case time from triggering a measurement to its result, ms. */
  conversion_ms: Ms;
  /** How old a reading may be and still count as current (read_sensor's cache answers SENSOR_STALE beyond it), ms. */
  max_age_ms: Ms;
  supply?: SensorSupply;
}

/**
 * A Sensirion SHT3x on the board's I2C bus: single-shot high-repeatability measurement
 * (command 0x2400, 15 ms), 6 bytes back, each 16-bit word followed by its CRC-8 (poly 0x31,
 * init 0xFF). One entry per quantity; two entries may share the chip's address.
 */
export interface Sht3xSensorDef extends SensorBase {
  kind: 'sht3x';
  /**
   * 7-bit I2C address: 68 (0x44, ADDR low) or 69 (0x45, ADDR high).
   * @asType integer
   */
  address: number;
  quantity: 'temperature' | 'humidity';
}

/**
 * An analog input read with analogRead (0..1 of the ADC range): value = raw * scale + offset.
 * An ACS712-5A (185 mV/A, 2.5 V at 0 A) behind a 2:3 divider into 3.3 V full scale reads
 * amps = raw * 26.757 - 13.514 (boards/climate-rig.json).
 */
export interface AdcSensorDef extends SensorBase {
  kind: 'adc';
  /** The part, e.g. "ACS712-5A". */
  part?: string;
  /** An ADC1 pin (GPIO 32-39): ADC2 cannot be read while Wi-Fi runs. */
  pin: Gpio;
  scale: number;
  offset: number;
}

/**
 * A TI INA219 current/voltage monitor on the board's I2C bus, at its power-on configuration
 * (continuous shunt and bus conversions, shunt range ±320 mV, bus range 32 V). The firmware reads the
 * bus voltage register (0x02: 4 mV per bit above bit 3; CNVR bit 1, OVF bit 0) and the shunt voltage
 * register (0x01: signed, 10 µV per bit) and computes amps = shunt volts / shunt_ohms itself: no
 * calibration register, so a chip that lost power cannot read a plausible 0 A from a lost calibration.
 * One entry per quantity; entries for the same chip share its address.
 */
export interface Ina219SensorDef extends SensorBase {
  kind: 'ina219';
  /**
   * 7-bit I2C address set by A0/A1: 64..79 (0x40-0x4F).
   * @asType integer
   */
  address: number;
  /** The shunt resistor between VIN+ and VIN-, ohms (0.1 on the common breakouts). */
  shunt_ohms: number;
  /** current: amps through the shunt; voltage: volts on VIN- (the load side); power: their product, watts. */
  quantity: 'current' | 'voltage' | 'power';
}

export type SensorDef = Sht3xSensorDef | AdcSensorDef | Ina219SensorDef;

export interface SensorReadArgs {
  id: string;
}

/** SHT3x single-shot measurement, high repeatability, no clock stretching. */
export const SHT3X_MEASURE = [0x24, 0x00];
/** The SHT3x's own worst-case conversion time at high repeatability, ms. */
export const SHT3X_MIN_CONVERSION_MS = 15;
/** INA219 registers: shunt voltage and bus voltage. */
export const INA219_SHUNT = 0x01;
export const INA219_BUS = 0x02;
/** INA219 power register: reading it clears CNVR, so the next reading can tell a new conversion from a frozen chip. */
export const INA219_POWER = 0x03;
/** INA219 shunt register full scale at its power-on PGA (/8, ±320 mV), in its 10 µV bits: beyond it the input saturates. */
export const INA219_SHUNT_FULL = 32000;
/** INA219 shunt voltage range at its power-on PGA, volts. */
export const INA219_SHUNT_MAX_V = 0.32;
/** INA219 bus voltage the chip tolerates (its 32 V range reads up to 26 V), volts. */
export const INA219_BUS_MAX_V = 26;
/** INA219 one shunt and one bus conversion at 12 bits (532 µs each), rounded up, ms. */
export const INA219_MIN_CONVERSION_MS = 2;

/** INA219 bus voltage register → volts (bits 15..3, 4 mV each). */
export function ina219BusVolts(reg: number): number {
  return (reg >> 3) * 0.004;
}

/** INA219 shunt voltage register (a 16-bit word) → volts (two's complement, 10 µV each). */
export function ina219ShuntVolts(reg: number): number {
  return (reg & 0x8000 ? reg - 0x10000 : reg) * 0.00001;
}

/** Time an I2C or ADC transaction adds to a reading, for the deadline, ms. */
export const SENSOR_BUS_MS = 50;

/** CRC-8 of the SHT3x (poly 0x31, init 0xFF, no reflection) over bytes [i, i+n) of b. */
export function crc8(b: ArrayLike<number>, i: number, n: number): number {
  let c = 0xff;
  for (let k = i; k < i + n; k++) {
    c ^= b[k];
    for (let j = 0; j < 8; j++) c = c & 0x80 ? ((c << 1) ^ 0x31) & 0xff : (c << 1) & 0xff;
  }
  return c;
}

/** SHT3x raw word → °C. */
export function sht3xCelsius(raw: number): number {
  return -45 + (175 * raw) / 65535;
}

/** SHT3x raw word → %RH. */
export function sht3xHumidity(raw: number): number {
  return (100 * raw) / 65535;
}

export function findSensor(board: BoardDef, id: string): SensorDef | undefined {
  const s = board.sensors || [];
  for (let i = 0; i < s.length; i++) if (s[i].id === id) return s[i];
  return undefined;
}

/** A sensor by id or label (case-insensitive); undefined when none matches. */
export function sensorByName(board: BoardDef, key: string): SensorDef | undefined {
  const k = key.trim().toLowerCase();
  const s = board.sensors || [];
  for (let i = 0; i < s.length; i++) if (s[i].id === k || (s[i].label !== undefined && s[i].label!.toLowerCase() === k)) return s[i];
  return undefined;
}

function sensorList(board: BoardDef): string {
  const s = board.sensors || [];
  const o: string[] = [];
  for (let i = 0; i < s.length; i++) o.push(s[i].id);
  return o.length ? o.join(', ') : 'none';
}

/** null when the arguments name a sensor of this board, else the INVALID_ARGS reason. */
export function checkSensorReadArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  if (typeof p.id !== 'string') return 'id must be a string (sensors: ' + sensorList(board) + ')';
  if (!findSensor(board, p.id)) return 'sensor ' + echo(p.id) + ' does not exist on ' + board.id + '; sensors: ' + sensorList(board);
  return null;
}

/** Worst case of one reading on the device, ms: the conversion plus the bus. */
export function sensorWorstMs(s: SensorDef): number {
  return s.conversion_ms + SENSOR_BUS_MS;
}
