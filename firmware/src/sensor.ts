// sensor.read: one reading of a board sensor. An SHT3x is triggered over I2C, read after its
// conversion time and checked against its CRC-8; an ADC input is averaged over a few samples and
// scaled. A reading is a number only when the bus answered, the CRC matched and the value lies in
// the board's plausible range; otherwise it ends failed with BUS_NAK, SENSOR_CRC or OUT_OF_RANGE
// and carries no value. Per-sensor state lives in arrays made once at init, indexed like
// board.sensors; the last reading of each is in every state snapshot with its device time.
import type { BoardDef, ErrorCode, SensorDef, SensorState } from '@proofrig/protocol';
import { checkSensorReadArgs, crc8, SHT3X_MEASURE, sht3xCelsius, sht3xHumidity } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { adcRead, i2cRead, i2cSetup, i2cWrite } from './hal';
import { upMs } from './clock';
import { INA, ina219Read } from './ina219';

/** ADC samples averaged per reading. */
const ADC_SAMPLES = 8;

let SN: SensorDef[] = [];
/** Sensor ids, indexed like SN (a native indexOf finds one). */
let IDS: string[] = [];
/** Ring slot of the reading in progress, -1 when idle. */
const SLOT: number[] = [];
/** Last reading: value (null unless ok), status ("ok", an error code, "none") and device uptime ms. */
const V: (number | null)[] = [];
const ST: string[] = [];
const AT: number[] = [];
/** One conversion callback per sensor, made once at init. */
const CONV: (() => void)[] = [];
let done: Done;
/** The message of the last reading (sensorWhy). */
let MSG = '';

function idx(id: unknown): number {
  return IDS.indexOf(id as string);
}

/** Record the outcome of sensor i and report it. */
function end(i: number, v: number | null, code: ErrorCode | undefined, msg: string): void {
  const slot = SLOT[i];
  SLOT[i] = -1;
  V[i] = code ? null : v;
  ST[i] = code ? code : 'ok';
  AT[i] = upMs();
  MSG = msg;
  // A reading taken for a relay's load_current verdict (sensorNow) has no command of its own.
  if (slot < 0) return;
  if (code) done(slot, 'failed', 'none', false, code, msg);
  else done(slot, 'completed', 'sensor', true, undefined, msg);
}

/** A converted value: kept only inside the board's plausible range. */
function judge(i: number, v: number, what: string): void {
  const s = SN[i];
  if (!(v >= s.range.min && v <= s.range.max))
    return end(i, null, 'OUT_OF_RANGE', s.id + ': ' + what + ' gives ' + v + ', outside the plausible ' + s.range.min + '..' + s.range.max + '; no value reported');
  end(i, v, undefined, s.id + ': ' + v + ' (' + what + ')');
}

/** The SHT3x's conversion time has passed: read its 6 bytes and check both CRCs. */
function convDone(i: number): void {
  const s = SN[i];
  if (SLOT[i] < 0 || s.kind !== 'sht3x') return;
  const d = i2cRead(s.address, 6);
  if (!d) return end(i, null, 'BUS_NAK', s.id + ': no acknowledge from the SHT3x at I2C address ' + s.address + ' when reading ' + s.conversion_ms + ' ms after the trigger (unplugged, unpowered or still converting); no value');
  const o = s.quantity === 'temperature' ? 0 : 3;
  if (crc8(d, o, 2) !== d[o + 2])
    return end(i, null, 'SENSOR_CRC', s.id + ': CRC mismatch on the ' + s.quantity + ' word from I2C address ' + s.address + ' (got ' + d[o + 2] + ', computed ' + crc8(d, o, 2) + '); reading discarded');
  const raw = (d[o] << 8) | d[o + 1];
  const v = s.quantity === 'temperature' ? sht3xCelsius(raw) : sht3xHumidity(raw);
  judge(i, Math.round(v * 100) / 100, 'SHT3x raw ' + raw);
}

function conv(i: number): () => void {
  return function () {
    convDone(i);
  };
}

export function sensorInit(b: BoardDef, d: Done): void {
  SN = b.sensors || [];
  IDS = [];
  done = d;
  if (b.i2c) i2cSetup(b.i2c.sda, b.i2c.scl, b.i2c.bitrate || 100000);
  for (let i = 0; i < SN.length; i++) {
    IDS.push(SN[i].id);
    SLOT[i] = -1;
    V[i] = null;
    ST[i] = 'none';
    AT[i] = 0;
    CONV[i] = conv(i);
  }
}

/** One reading at a time per sensor, and one I2C transaction at a time on the bus. */
function busy(p: Record<string, unknown>): string | null {
  const i = idx(p.id);
  if (SLOT[i] >= 0) return SN[i].id + ' is still being read; ask again when it has a result';
  if (SN[i].kind !== 'sht3x') return null;
  for (let k = 0; k < SN.length; k++) if (SLOT[k] >= 0 && SN[k].kind === 'sht3x') return 'the I2C bus is reading ' + SN[k].id + '; ask again when it has a result';
  return null;
}

function run(slot: number, p: Record<string, unknown>, d: Done): void {
  const i = idx(p.id);
  const s = SN[i];
  done = d;
  SLOT[i] = slot;
  if (s.kind === 'sht3x') {
    if (!i2cWrite(s.address, SHT3X_MEASURE))
      return end(i, null, 'BUS_NAK', s.id + ': no acknowledge from the SHT3x at I2C address ' + s.address + ' to the measure command (unplugged, unpowered or wrong address); no value');
    setTimeout(CONV[i], s.conversion_ms);
    return;
  }
  now(i);
}

/** Read sensor i (an ADC input or an INA219: no waiting) and record the reading. */
function now(i: number): void {
  const s = SN[i];
  if (s.kind === 'ina219') {
    ina219Read(s);
    if (INA.code) return end(i, null, INA.code, INA.why);
    return judge(i, INA.v, INA.what);
  }
  if (s.kind !== 'adc') return;
  let sum = 0;
  for (let k = 0; k < ADC_SAMPLES; k++) sum += adcRead(s.pin);
  const raw = sum / ADC_SAMPLES;
  judge(i, Math.round((raw * s.scale + s.offset) * 1000) / 1000, 'ADC GPIO' + s.pin + ' ' + Math.round(raw * 4095) + '/4095');
}

/** The index of sensor id, -1 when the board has none such. */
export function sensorIndex(id: string): number {
  return IDS.indexOf(id);
}

/**
 * Read sensor i now, outside any sensor.read (a relay's load_current verdict): an ADC input or an
 * INA219. The reading is recorded like any other (state snapshot); returns its status, "ok" or an
 * error code; sensorValue and sensorWhy say the rest.
 */
export function sensorNow(i: number): string {
  now(i);
  return ST[i];
}

export function sensorValue(i: number): number | null {
  return V[i];
}

/** The message of the last reading: its raw data when ok, else why there is no value. */
export function sensorWhy(): string {
  return MSG;
}

/** A read actuates nothing: it runs while the e-stop is latched (the temperature during an emergency). */
export const SENSOR_READ: Action = { n: 'sensor.read', chk: checkSensorReadArgs, busy: busy, run: run, ro: true };

/** The last reading of every sensor, for the state snapshot. */
export function sensorState(): SensorState[] {
  const o: SensorState[] = [];
  for (let i = 0; i < SN.length; i++) o.push({ id: SN[i].id, v: V[i], st: ST[i], at: AT[i] });
  return o;
}
