// A TI INA219 current/voltage monitor on the rig's I2C bus (sensor-models.ts wires it): a register
// pointer set by a one-byte write, 16-bit registers read MSB first, as the chip has them at its
// power-on configuration (continuous conversions, PGA /8: shunt ±320 mV in 10 µV bits, bus 32 V range
// in 4 mV bits above bit 3 with CNVR in bit 1 and OVF in bit 0). The current through the shunt is
// what the rig's loads draw (SensorModels.amps). Faults: unplugged (no acknowledge), stuck (the same
// registers every time, and no new conversion: CNVR stays 0 once read), slow (no conversion ready:
// CNVR 0), noisy (2 % of the shunt range as noise). CNVR is set by a conversion (every 1.06 ms at 12
// bits, shunt and bus) and cleared by reading the power register (0x03), as on the chip.
// The model raises OVF when the shunt voltage is beyond the PGA range (and the shunt register
// saturates); the chip itself sets OVF for its current and power arithmetic.
import type { Ina219SensorDef } from '@proofrig/protocol';
import { INA219_SHUNT_FULL } from '@proofrig/protocol';
import type { Rng } from './prng.js';

/** What the chip needs of the rig: its fault, power, and the world it measures. */
export interface Ina219World {
  fault(): string | undefined;
  powered(): boolean;
  /** Amps through the shunt now. */
  amps(): number;
  /** Volts on the bus (VIN-). */
  volts(): number;
  rng: Rng;
  /** One answer to the firmware (a write or a read): good = acknowledged with a conversion ready. */
  observed(good: boolean): void;
}

const CONFIG_RESET = 0x399f;
/** One shunt and one bus conversion at 12 bits, ms. */
const CONVERSION_MS = 1.06;

export class Ina219Chip {
  readonly defs: Ina219SensorDef[] = [];
  world!: Ina219World;
  private ptr = 0;
  private config = CONFIG_RESET;
  private cal = 0;
  private stuck: number[] | null = null;
  /** When the power register was last read (CNVR cleared); CNVR is set again a conversion later, unless stuck or slow. */
  private clearedAt = -Infinity;
  now: () => number = () => 0;

  private present(): boolean {
    return this.world.fault() !== 'unplugged' && this.world.powered();
  }

  /** One I2C write: [pointer] or [pointer, MSB, LSB]; false = not acknowledged. */
  write(bytes: number[]): boolean {
    if (!this.present()) {
      this.world.observed(false);
      return false;
    }
    if (bytes.length >= 1) this.ptr = bytes[0]!;
    if (bytes.length >= 3) {
      const w = (bytes[1]! << 8) | bytes[2]!;
      if (this.ptr === 0) this.config = w & 0x8000 ? CONFIG_RESET : w;
      if (this.ptr === 5) this.cal = w & 0xfffe;
    }
    return true;
  }

  /** One I2C read of n bytes from the pointed register; null = not acknowledged. */
  read(n: number): number[] | null {
    if (!this.present()) {
      this.world.observed(false);
      return null;
    }
    this.world.observed(this.world.fault() !== 'slow' && this.cnvr());
    const w = this.register(this.ptr);
    if (this.ptr === 3) this.clearedAt = this.now();
    const out = [w >> 8, w & 0xff];
    while (out.length < n) out.push(0);
    return out.slice(0, n);
  }

  /** A conversion completed since CNVR was last cleared (a stuck chip converts nothing more). */
  private cnvr(): boolean {
    const f = this.world.fault();
    if (f === 'slow') return false;
    if (f === 'stuck') return this.stuck !== null && (this.stuck[2]! & 2) !== 0 && this.clearedAt < this.frozenAt;
    return this.now() - this.clearedAt >= CONVERSION_MS;
  }
  private frozenAt = -Infinity;

  /** The registers 0-5 now (or as they froze, with the stuck fault; CNVR then only until it is read once). */
  private registers(): number[] {
    if (this.world.fault() === 'stuck' && this.stuck) {
      const r = this.stuck.slice();
      r[2] = (r[2]! & ~2) | (this.cnvr() ? 2 : 0);
      return r;
    }
    const shunt = this.defs[0]!.shunt_ohms;
    const noise = this.world.fault() === 'noisy' ? gauss(this.world.rng) * 0.02 * INA219_SHUNT_FULL : 0;
    const raw = Math.round((this.world.amps() * shunt) / 0.00001 + noise);
    const ovf = Math.abs(raw) > INA219_SHUNT_FULL;
    const sh = Math.max(-INA219_SHUNT_FULL, Math.min(INA219_SHUNT_FULL, raw));
    const busRaw = Math.max(0, Math.min(8000, Math.round(this.world.volts() / 0.004)));
    const cnvr = this.cnvr() ? 1 : 0;
    const current = Math.round((sh * this.cal) / 4096);
    const power = Math.round((current * busRaw) / 5000);
    const regs = [this.config, sh & 0xffff, (busRaw << 3) | (cnvr << 1) | (ovf ? 1 : 0), power & 0xffff, current & 0xffff, this.cal];
    this.stuck = regs;
    this.frozenAt = this.now();
    return regs;
  }

  private register(p: number): number {
    return this.registers()[p] ?? 0;
  }
}

/** A standard normal draw (Box-Muller) from the rig's seeded stream. */
function gauss(rng: Rng): number {
  const u = Math.max(1e-12, rng());
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}
