// One reading of an INA219 current/voltage monitor on the I2C bus, at its power-on configuration
// (continuous conversions, shunt ±320 mV, bus 32 V). Reads the bus voltage register (0x02) for its
// CNVR (a conversion is ready) and OVF (overflow) bits, then the shunt voltage register (0x01), and
// computes amps = shunt volts / shunt_ohms here: no calibration register, so a chip that lost power
// (and with it any calibration) cannot report a plausible 0 A. Last it reads the power register
// (0x03), which clears CNVR: the next reading then needs a conversion made after this one, so a chip
// whose conversions stopped (its registers frozen) is refused instead of repeating an old current.
// The outcome is left in INA (made once):
// a value, or an error code with why; sensor.ts judges the range and reports it.
import type { ErrorCode, Ina219SensorDef } from '@proofrig/protocol';
import { INA219_BUS, INA219_POWER, INA219_SHUNT, INA219_SHUNT_FULL, ina219BusVolts, ina219ShuntVolts } from '@proofrig/protocol';
import { i2cRead, i2cWrite } from './hal';

/** Register pointers, made once. */
const PB = [INA219_BUS];
const PS = [INA219_SHUNT];
const PP = [INA219_POWER];

/** The last reading: v when code is undefined, else the code and why; what = the raw words, for the detail. */
export const INA: { v: number; code: ErrorCode | undefined; why: string; what: string } = { v: 0, code: undefined, why: '', what: '' };

/** A 16-bit register, or -1 when the chip did not acknowledge the pointer write or the read. */
function reg(addr: number, p: number[]): number {
  if (!i2cWrite(addr, p)) return -1;
  const d = i2cRead(addr, 2);
  return d ? (d[0] << 8) | d[1] : -1;
}

function fail(code: ErrorCode, why: string): void {
  INA.code = code;
  INA.why = why;
}

export function ina219Read(s: Ina219SensorDef): void {
  INA.code = undefined;
  const nak = s.id + ': no acknowledge from the INA219 at I2C address ' + s.address + ' (unplugged, unpowered or wrong address); no value';
  const bus = reg(s.address, PB);
  if (bus < 0) return fail('BUS_NAK', nak);
  if (!(bus & 2)) return fail('BUS_NAK', s.id + ': the INA219 at I2C address ' + s.address + ' answered with no conversion ready (CNVR 0: no new conversion since its last reading or power-up); no value');
  if (bus & 1) return fail('OUT_OF_RANGE', s.id + ': the INA219 at I2C address ' + s.address + ' set its overflow flag (OVF): the shunt input is beyond its range; no value');
  const volts = ina219BusVolts(bus);
  const sh = s.quantity === 'voltage' ? 0 : reg(s.address, PS);
  if (sh < 0) return fail('BUS_NAK', nak);
  // Clears CNVR (reading it is the datasheet's way): the next reading waits for a new conversion.
  if (reg(s.address, PP) < 0) return fail('BUS_NAK', nak);
  if (s.quantity === 'voltage') {
    INA.v = Math.round(volts * 1000) / 1000;
    INA.what = 'INA219 bus register ' + bus;
    return;
  }
  const sv = ina219ShuntVolts(sh);
  if (Math.abs(sv) >= INA219_SHUNT_FULL * 0.00001)
    return fail('OUT_OF_RANGE', s.id + ': the INA219 shunt input at I2C address ' + s.address + ' is saturated (' + Math.round(sv * 1000) + ' mV); no value');
  const amps = sv / s.shunt_ohms;
  INA.v = s.quantity === 'power' ? Math.round(amps * volts * 1000) / 1000 : Math.round(amps * 1000) / 1000;
  INA.what = 'INA219 shunt register ' + sh + ', bus ' + bus;
}
