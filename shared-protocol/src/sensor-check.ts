// `board check` of the board's I2C bus and sensors (sensors.ts), with the ESP32's own limits:
// ADC2 stops working while Wi-Fi runs, so an ADC input must be an ADC1 pin; SDA and SCL are
// open-drain outputs, so they cannot be input-only pins. Called by checkBoard (board-check.ts).
import { echo, isInt, isMs, isNum, isObj } from './check.js';
import { MAX_LABEL_LENGTH } from './constants.js';
import { INA219_BUS_MAX_V, INA219_MIN_CONVERSION_MS, INA219_SHUNT_MAX_V, SHT3X_MIN_CONVERSION_MS } from './sensors.js';

/** GPIOs an ESP32 (WROOM/WROVER module) can use at all (as in board-check.ts). */
const GPIO = [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 25, 26, 27, 32, 33, 34, 35, 36, 39];
const INPUT_ONLY = [34, 35, 36, 39];
/** ADC1 channels of an ESP32 module: the only analog inputs that work while Wi-Fi runs (ADC2 is the radio's). */
export const ESP32_ADC1 = [32, 33, 34, 35, 36, 39];
const SHT3X_ADDRESSES = [0x44, 0x45];
const MAX_SENSORS = 16;

type Claim = (pin: number, what: string) => void;
type Obj = Record<string, unknown>;


/** Check b.i2c and b.sensors, pushing errors; `channels` are the board's relay channels. */
export function checkSensors(b: Obj, channels: number[], errors: string[], claim: Claim): void {
  if (b.i2c !== undefined) checkBus(b.i2c, errors, claim);
  if (b.sensors === undefined) return;
  if (!Array.isArray(b.sensors)) return void errors.push('sensors: must be an array');
  if (b.sensors.length > MAX_SENSORS) errors.push(`sensors: at most ${MAX_SENSORS} sensors per board (got ${b.sensors.length})`);
  const ids: string[] = [];
  const labels: string[] = [];
  /** Which kind of chip answers at each I2C address, and the entry that claimed it first. */
  const chips: Record<string, { kind: unknown; at: string; shunt: unknown }> = {};
  b.sensors.forEach((raw: unknown, i: number) => {
    const at = `sensors[${i}]`;
    if (!isObj(raw)) return errors.push(`${at}: must be an object`);
    const s = raw;
    if (typeof s.id !== 'string' || !/^[a-z][a-z0-9_]{0,15}$/.test(s.id)) errors.push(`${at}.id: must be a short lowercase id like "air_temp" (a-z, 0-9, "_", up to 16)`);
    else if (ids.indexOf(s.id) >= 0) errors.push(`${at}.id: sensor "${s.id}" is defined twice`);
    else ids.push(s.id);
    if (s.label !== undefined) {
      if (typeof s.label !== 'string' || s.label.trim().length === 0 || s.label.length > MAX_LABEL_LENGTH)
        errors.push(`${at}.label: must be a name of 1-${MAX_LABEL_LENGTH} characters, e.g. "air temperature"`);
      else if (labels.indexOf(s.label.trim().toLowerCase()) >= 0) errors.push(`${at}.label: label "${s.label}" is used twice among the sensors`);
      else labels.push(s.label.trim().toLowerCase());
    }
    if (typeof s.unit !== 'string' || s.unit.length < 1 || s.unit.length > 12) errors.push(`${at}.unit: must name the unit in 1-12 characters, e.g. "°C" or "A"`);
    const r = s.range;
    if (!isObj(r) || !isNum(r.min) || !isNum(r.max) || !(r.max > r.min)) errors.push(`${at}.range: must be {min, max} with max > min (the plausible values; outside them a reading is OUT_OF_RANGE)`);
    if (!isMs(s.conversion_ms) || s.conversion_ms <= 0) errors.push(`${at}.conversion_ms: must be a number of ms (1..600000)`);
    if (!isMs(s.max_age_ms) || s.max_age_ms <= 0) errors.push(`${at}.max_age_ms: must be a number of ms (1..600000): how old a cached reading may be`);
    if (s.supply !== undefined) {
      const p = s.supply;
      if (!isObj(p)) errors.push(`${at}.supply: must be {ch, power_up_ms}`);
      else {
        if (!isInt(p.ch) || channels.indexOf(p.ch) < 0)
          errors.push(`${at}.supply.ch: ${echo(p.ch)} is not a relay channel of this board (channels: ${channels.join(', ') || 'none'})`);
        if (!isMs(p.power_up_ms)) errors.push(`${at}.supply.power_up_ms: must be a number of ms (0..600000)`);
      }
    }
    if (s.kind === 'sht3x') {
      if (b.i2c === undefined) errors.push(`${at}: an SHT3x sits on the I2C bus; the board needs "i2c": {"sda": PIN, "scl": PIN}`);
      if (!isInt(s.address) || SHT3X_ADDRESSES.indexOf(s.address) < 0)
        errors.push(`${at}.address: an SHT3x answers at 68 (0x44, ADDR low) or 69 (0x45, ADDR high), not ${echo(s.address)}`);
      if (s.quantity !== 'temperature' && s.quantity !== 'humidity') errors.push(`${at}.quantity: must be "temperature" or "humidity"`);
      if (isMs(s.conversion_ms) && s.conversion_ms < SHT3X_MIN_CONVERSION_MS)
        errors.push(`${at}.conversion_ms: an SHT3x needs up to ${SHT3X_MIN_CONVERSION_MS} ms for a high-repeatability measurement; ${s.conversion_ms} ms would read before it is done`);
    } else if (s.kind === 'adc') {
      if (!isInt(s.pin) || GPIO.indexOf(s.pin) < 0) errors.push(`${at}.pin: GPIO${echo(s.pin)} is not a usable ESP32 GPIO`);
      else if (ESP32_ADC1.indexOf(s.pin) < 0)
        errors.push(`${at}.pin: GPIO${s.pin} is not an ADC1 pin; ADC2 cannot be read while Wi-Fi runs, so use one of GPIO ${ESP32_ADC1.join(', ')}`);
      else claim(s.pin, `${at}.pin`);
      if (!isNum(s.scale) || s.scale === 0) errors.push(`${at}.scale: must be a non-zero number (value = raw 0..1 * scale + offset)`);
      if (!isNum(s.offset)) errors.push(`${at}.offset: must be a number (value = raw 0..1 * scale + offset)`);
      if (s.part !== undefined && typeof s.part !== 'string') errors.push(`${at}.part: must name the part, e.g. "ACS712-5A"`);
    } else if (s.kind === 'ina219') {
      checkIna219(s, at, b.i2c !== undefined, errors);
    } else errors.push(`${at}.kind: must be "sht3x", "ina219" or "adc"`);
    if ((s.kind === 'sht3x' || s.kind === 'ina219') && isInt(s.address)) {
      const c = chips[String(s.address)];
      if (!c) chips[String(s.address)] = { kind: s.kind, at, shunt: s.shunt_ohms };
      else if (c.kind !== s.kind) errors.push(`${at}.address: ${s.address} is already the address of the ${String(c.kind).toUpperCase()} of ${c.at}; two chips cannot share an I2C address`);
      else if (s.kind === 'ina219' && c.shunt !== s.shunt_ohms)
        errors.push(`${at}.shunt_ohms: the INA219 at ${s.address} has shunt_ohms ${echo(c.shunt)} in ${c.at}; entries of one chip must name the same shunt`);
    }
  });
}

/** An INA219: its address, shunt, quantity, and what its power-on ranges can measure. */
function checkIna219(s: Obj, at: string, hasBus: boolean, errors: string[]): void {
  if (!hasBus) errors.push(`${at}: an INA219 sits on the I2C bus; the board needs "i2c": {"sda": PIN, "scl": PIN}`);
  if (!isInt(s.address) || s.address < 0x40 || s.address > 0x4f)
    errors.push(`${at}.address: an INA219 answers at 64..79 (0x40-0x4F, set by A0/A1), not ${echo(s.address)}`);
  const shuntOk = isNum(s.shunt_ohms) && s.shunt_ohms > 0 && s.shunt_ohms <= 100;
  if (!shuntOk) errors.push(`${at}.shunt_ohms: must be the shunt resistor in ohms, above 0 and at most 100 (0.1 on the common breakouts)`);
  if (s.quantity !== 'current' && s.quantity !== 'voltage' && s.quantity !== 'power') errors.push(`${at}.quantity: must be "current", "voltage" or "power"`);
  if (isMs(s.conversion_ms) && s.conversion_ms < INA219_MIN_CONVERSION_MS)
    errors.push(`${at}.conversion_ms: an INA219 needs ${INA219_MIN_CONVERSION_MS} ms for one shunt and one bus conversion; ${s.conversion_ms} ms would read before they are done`);
  const r = s.range;
  if (!isObj(r) || !isNum(r.max) || !isNum(r.min)) return;
  const worst = Math.max(Math.abs(r.max), Math.abs(r.min));
  if (s.quantity === 'current' && shuntOk && worst * (s.shunt_ohms as number) > INA219_SHUNT_MAX_V)
    errors.push(`${at}.range: ${worst} A through ${s.shunt_ohms} ohm is ${Math.round(worst * (s.shunt_ohms as number) * 1000)} mV, beyond the INA219's ±${INA219_SHUNT_MAX_V * 1000} mV shunt input; use a smaller shunt or a narrower range`);
  if (s.quantity === 'voltage' && worst > INA219_BUS_MAX_V) errors.push(`${at}.range: the INA219 measures a bus of at most ${INA219_BUS_MAX_V} V, not ${worst} V`);
}

function checkBus(raw: unknown, errors: string[], claim: Claim): void {
  if (!isObj(raw)) return void errors.push('i2c: must be {sda, scl} (GPIO numbers)');
  for (const k of ['sda', 'scl']) {
    const pin = raw[k];
    if (!isInt(pin) || GPIO.indexOf(pin) < 0) errors.push(`i2c.${k}: GPIO${echo(pin)} is not a usable ESP32 GPIO`);
    else if (INPUT_ONLY.indexOf(pin) >= 0) errors.push(`i2c.${k}: GPIO${pin} is input-only; I2C drives ${k.toUpperCase()} low, so it needs an output pin`);
    else claim(pin, `i2c.${k}`);
  }
  if (raw.bitrate !== undefined && (!isInt(raw.bitrate) || raw.bitrate < 10000 || raw.bitrate > 400000))
    errors.push('i2c.bitrate: must be a whole number of Hz 10000..400000 (or absent for 100000)');
}
