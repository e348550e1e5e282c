// The rig's sensors: an I2C bus with SHT3x chips on it, and analog inputs (an ACS712 current
// sensor) attached to ADC pins. Both engines reach them: the vm's I2C1 and analogRead globals
// (context.ts), and the Espruino engine's .boot0 shim (espruino-shim.ts) through the same calls.
// Faults per sensor id: unplugged (no acknowledge; an ADC input floats to 0), stuck (the same
// reading every time), crc (the chip's CRC bytes are corrupted), slow (the conversion takes 4x its
// board time, so a read at the board time is not acknowledged), noisy (ADC: 40x the noise), drift
// (what the sensor reports walks away from what it measures, DRIFT_PER_S of its range per second
// from when the fault was set: plausible, wrong readings nothing on the device can tell from good
// ones until they leave the range, then OUT_OF_RANGE). A
// sensor with a `supply` does not answer until its relay's contact is closed and power_up_ms passed.
// Loads: a relay with load_current feedback switches a load (default: midway between its on_above
// and its sensor's range maximum; setLoad) through that current sensor, which measures the load
// while the relay's contact is closed, nothing with the relay fault open_load (a blown lamp, a fuse
// out), plus any baseline set with setValue. An INA219 (ina219-model.ts) sits on the bus beside the SHT3x.
import type { AdcSensorDef, BoardDef, Ina219SensorDef, SensorDef, Sht3xSensorDef } from '@proofrig/protocol';
import { crc8, SHT3X_MEASURE } from '@proofrig/protocol';
import type { Clock } from '@proofrig/protocol/clock';
import type { Gpio } from './gpio.js';
import type { Rng } from './prng.js';
import { Ina219Chip } from './ina219-model.js';

export type SensorFault = 'unplugged' | 'stuck' | 'crc' | 'slow' | 'noisy' | 'drift';
export const SENSOR_FAULTS: readonly SensorFault[] = ['unplugged', 'stuck', 'crc', 'slow', 'noisy', 'drift'];
/** How fast a drifting sensor's reading walks upwards: this fraction of its range's span per second. */
export const DRIFT_PER_S = 0.005;

/** The SHT3x's typical conversion at high repeatability (datasheet: 12.5 ms typical, 15 ms max), ms. */
const SHT3X_TYPICAL_MS = 12.5;
/** ADC noise, standard deviation as a fraction of full scale (about 8 LSB of 12 bits). */
const ADC_NOISE = 0.002;

/** The world the sensors measure, per sensor id (°C, %RH, A ...); defaults in the middle of each range. */
type Values = Map<string, number>;

/** Power of a sensor: true once its supply relay has been closed power_up_ms. */
class Supply {
  private closedAt: number | undefined;
  constructor(
    private readonly def: SensorDef,
    private readonly clock: Clock,
    closedNow: boolean,
  ) {
    this.closedAt = closedNow ? -Infinity : undefined;
  }
  contact(ch: number, closed: boolean): void {
    if (!this.def.supply || ch !== this.def.supply.ch) return;
    if (!closed) this.closedAt = undefined;
    else if (this.closedAt === undefined) this.closedAt = this.clock.now();
  }
  on(): boolean {
    const s = this.def.supply;
    if (!s) return true;
    return this.closedAt !== undefined && this.clock.now() - this.closedAt >= s.power_up_ms;
  }
}

/** One SHT3x chip at one address; the board may list it twice (temperature and humidity). */
class Sht3xChip {
  readonly defs: Sht3xSensorDef[] = [];
  supply!: Supply;
  private readyAt = Infinity;
  private data: number[] | null = null;
  private stuck: number[] | null = null;
  /** The pending conversion's CRC bytes are corrupted (a crc fault when it was triggered). */
  private corrupt = false;
  constructor(
    private readonly clock: Clock,
    private readonly sensors: SensorModels,
  ) {}

  private fault(f: SensorFault): boolean {
    for (const d of this.defs) if (this.sensors.fault(d.id) === f) return true;
    return false;
  }

  private present(): boolean {
    return !this.fault('unplugged') && this.supply.on();
  }

  /** An I2C write: the measure command starts a conversion; false = not acknowledged. */
  write(bytes: number[]): boolean {
    if (!this.present()) return false;
    if (bytes.length === 2 && bytes[0] === SHT3X_MEASURE[0] && bytes[1] === SHT3X_MEASURE[1]) {
      const conv = Math.max(...this.defs.map((d) => d.conversion_ms));
      this.readyAt = this.clock.now() + (this.fault('slow') ? conv * 4 : Math.min(conv, SHT3X_TYPICAL_MS));
      this.data = this.measure();
    }
    return true;
  }

  /** An I2C read of n bytes; null = not acknowledged (absent, unpowered, or still converting). */
  read(n: number): number[] | null {
    if (!this.present() || this.data === null || this.clock.now() < this.readyAt) {
      for (const d of this.defs) this.sensors.observed(d.id, false, null);
      return null;
    }
    const d = this.data.slice(0, n);
    this.data = null;
    for (const x of this.defs) this.sensors.observed(x.id, !this.corrupt, null);
    return d;
  }

  /**
   * The frame of one conversion: the frozen one while stuck, else a new one; with a crc fault its
   * CRC bytes are corrupted, whichever it is. `corrupt` keeps what this conversion's bytes are for
   * the answer's report: a stuck frame was once returned before the corruption (stuck on air_temp
   * and crc on air_rh of the same chip: intact bytes reported as a CRC failure, chaos seed 5000), and
   * a crc fault set or cleared during the conversion must not change the verdict of its bytes.
   */
  private measure(): number[] {
    let b: number[];
    if (this.fault('stuck') && this.stuck) b = this.stuck.slice();
    else {
      const t = this.sensors.value(this.defs.find((d) => d.quantity === 'temperature')?.id, 22.5);
      const h = this.sensors.value(this.defs.find((d) => d.quantity === 'humidity')?.id, 45);
      const rt = clampWord(((t + 45) * 65535) / 175);
      const rh = clampWord((h * 65535) / 100);
      b = [rt >> 8, rt & 0xff, 0, rh >> 8, rh & 0xff, 0];
      b[2] = crc8(b, 0, 2);
      b[5] = crc8(b, 3, 2);
      this.stuck = b.slice();
    }
    this.corrupt = this.fault('crc');
    if (this.corrupt) {
      b[2] ^= 0x5a;
      b[5] ^= 0x5a;
    }
    return b;
  }
}

function clampWord(x: number): number {
  return Math.max(0, Math.min(65535, Math.round(x)));
}

/** A load a relay switches through a current sensor. */
interface Load {
  ch: number;
  sensor: string;
  amps: number;
  closed: boolean;
}

/** The INA219's bus voltage when nothing sets it (a 12 V heater supply), V. */
const DEFAULT_BUS_V = 12;

/** Every sensor of a board: the I2C bus, the ADC sources, their faults and the values they measure. */
export class SensorModels {
  private readonly chips = new Map<number, Sht3xChip | Ina219Chip>();
  private readonly loads: Load[] = [];
  /**
   * Every answer a sensor gives the firmware (an I2C data read, an ADC sample), for the chaos checker:
   * good = acknowledged with intact data from a powered sensor with a conversion ready; amps = the
   * current it measured then (current sensors), else null.
   */
  observer: ((id: string, good: boolean, amps: number | null) => void) | undefined;
  private readonly supplies: Supply[] = [];
  private readonly faults = new Map<string, SensorFault>();
  private readonly values: Values = new Map();
  /** When each drifting sensor began to drift (clock ms). */
  private readonly driftSince = new Map<string, number>();
  private readonly defs: SensorDef[];
  private readonly adcPins: number[] = [];

  constructor(
    board: BoardDef,
    private readonly gpio: Gpio,
    private readonly clock: Clock,
    private readonly rng: Rng,
    /** Is a relay channel's contact closed right now (the supply of a sensor at construction)? */
    contactClosed: (ch: number) => boolean,
    faults?: Map<string, SensorFault>,
    values?: Values,
    /** Does relay channel ch's load carry no current (the relay fault open_load)? */
    private readonly openLoad: (ch: number) => boolean = () => false,
    loads?: Map<number, number>,
  ) {
    this.defs = board.sensors ?? [];
    for (const [k, v] of faults ?? []) {
      this.faults.set(k, v);
      // A drift carried over to a board read again starts walking again from here.
      if (v === 'drift') this.driftSince.set(k, clock.now());
    }
    for (const [k, v] of values ?? []) this.values.set(k, v);
    for (const r of board.relays) {
      const fb = r.feedback;
      if (fb.kind !== 'load_current') continue;
      const sd = this.defs.find((d) => d.id === fb.sensor);
      const amps = loads?.get(r.ch) ?? Math.round(((fb.on_above + (sd ? sd.range.max : 2 * fb.on_above)) / 2) * 100) / 100;
      this.loads.push({ ch: r.ch, sensor: fb.sensor, amps, closed: contactClosed(r.ch) });
    }
    for (const d of this.defs) {
      const supply = new Supply(d, clock, d.supply ? contactClosed(d.supply.ch) : true);
      this.supplies.push(supply);
      if (d.kind === 'sht3x') {
        let chip = this.chips.get(d.address);
        if (!chip) this.chips.set(d.address, (chip = new Sht3xChip(clock, this)));
        if (!(chip instanceof Sht3xChip)) continue;
        chip.defs.push(d);
        chip.supply = supply;
      } else if (d.kind === 'ina219') this.attachIna219(d, supply);
      else this.attachAdc(d, supply);
    }
  }

  /** A relay's contact moved (the rig's 'contact' event): sensors on that supply power up or off, its load draws or stops. */
  contact(ch: number, closed: boolean): void {
    for (const s of this.supplies) s.contact(ch, closed);
    for (const l of this.loads) if (l.ch === ch) l.closed = closed;
  }

  /** Set the amps the load of relay channel ch draws when its contact is closed. Throws when that relay switches no modelled load. */
  setLoad(ch: number, amps: number): void {
    const l = this.loads.find((x) => x.ch === ch);
    if (!l) throw new Error(`relay channel ${ch} has no load_current feedback, so no load of it is modelled; loads on channels: ${this.loads.map((x) => x.ch).join(', ') || 'none'}`);
    l.amps = amps;
  }

  /** What current sensor `id` measures now, A: its baseline (setValue, default 0) plus every load drawing through it. */
  amps(id: string): number {
    let a = this.value(id, 0);
    for (const l of this.loads) if (l.sensor === id && l.closed && !this.openLoad(l.ch)) a += l.amps;
    return a;
  }

  /** Inject (or clear, with null) a fault on sensor `id`. */
  setFault(id: string, fault: SensorFault | null): void {
    if (!this.defs.some((d) => d.id === id)) throw new Error(`no sensor "${id}" on this rig; sensors: ${this.defs.map((d) => d.id).join(', ') || 'none'}`);
    if (fault !== null && SENSOR_FAULTS.indexOf(fault) < 0) throw new Error(`unknown sensor fault "${String(fault)}"; faults: ${SENSOR_FAULTS.join(', ')}`);
    if (fault === 'crc' && this.defs.find((d) => d.id === id)!.kind !== 'sht3x')
      throw new Error(`sensor "${id}" sends no checksum, so "crc" cannot be injected; its faults: ${SENSOR_FAULTS.filter((f) => f !== 'crc').join(', ')}`);
    if (fault === 'drift') {
      if (!this.driftSince.has(id)) this.driftSince.set(id, this.clock.now());
    } else this.driftSince.delete(id);
    if (fault === null) this.faults.delete(id);
    else this.faults.set(id, fault);
  }

  /** How far a drifting sensor's reading has walked from what it measures (0 without the fault), in its unit. */
  private drift(id: string): number {
    const t0 = this.driftSince.get(id);
    if (t0 === undefined || this.faults.get(id) !== 'drift') return 0;
    const d = this.defs.find((x) => x.id === id)!;
    return (DRIFT_PER_S * (d.range.max - d.range.min) * (this.clock.now() - t0)) / 1000;
  }

  /** Report one answer of sensor id to the observer. */
  observed(id: string, good: boolean, amps: number | null): void {
    this.observer?.(id, good, amps);
  }

  fault(id: string): SensorFault | undefined {
    return this.faults.get(id);
  }

  /** Set what sensor `id` measures (°C, %RH, A ... in the board's unit). */
  setValue(id: string, v: number): void {
    this.values.set(id, v);
  }

  /** What sensor `id` reports measuring: its value (setValue, else dflt) plus any drift. */
  value(id: string | undefined, dflt: number): number {
    if (id === undefined) return dflt;
    return (this.values.has(id) ? this.values.get(id)! : dflt) + this.drift(id);
  }

  /** Faults and values, to carry over when the board is read again. */
  carry(): { faults: Map<string, SensorFault>; values: Values; loads: Map<number, number> } {
    return { faults: new Map(this.faults), values: new Map(this.values), loads: new Map(this.loads.map((l) => [l.ch, l.amps])) };
  }

  /** I2C1.writeTo: false when no chip acknowledged. */
  i2cWrite(addr: number, bytes: number[]): boolean {
    const c = this.chips.get(addr);
    return c ? c.write(bytes) : false;
  }

  /** I2C1.readFrom: the bytes, or null when no chip acknowledged. */
  i2cRead(addr: number, n: number): number[] | null {
    const c = this.chips.get(addr);
    return c ? c.read(n) : null;
  }

  dispose(): void {
    for (const p of this.adcPins) this.gpio.detach(p);
  }

  /** An INA219 entry: the chip at its address (shared by its entries), measuring the loads through it. */
  private attachIna219(d: Ina219SensorDef, supply: Supply): void {
    let chip = this.chips.get(d.address);
    if (!chip) {
      const c = new Ina219Chip();
      c.now = () => this.clock.now();
      const ids = (): string[] => c.defs.map((x) => x.id);
      const cur = (): string | undefined => c.defs.find((x) => x.quantity === 'current')?.id ?? c.defs[0]?.id;
      c.world = {
        fault: () => {
          for (const id of ids()) if (this.faults.has(id)) return this.faults.get(id);
          return undefined;
        },
        powered: () => supply.on(),
        amps: () => (cur() !== undefined ? this.amps(cur()!) : 0),
        volts: () => this.value(c.defs.find((x) => x.quantity === 'voltage')?.id, DEFAULT_BUS_V),
        rng: this.rng,
        observed: (good: boolean) => {
          for (const x of c.defs) this.observed(x.id, good, x.quantity === 'current' ? this.amps(x.id) : null);
        },
      };
      this.chips.set(d.address, (chip = c));
    }
    if (chip instanceof Ina219Chip) chip.defs.push(d);
  }

  private attachAdc(d: AdcSensorDef, supply: Supply): void {
    let last: number | undefined;
    this.adcPins.push(d.pin);
    this.gpio.attach(d.pin, {
      analog: () => {
        const f = this.faults.get(d.id);
        const amps = this.amps(d.id);
        this.observed(d.id, f !== 'unplugged' && supply.on(), d.unit === 'A' ? amps : null);
        if (f === 'unplugged' || !supply.on()) return 0;
        if (f === 'stuck' && last !== undefined) return last;
        const noise = gauss(this.rng) * ADC_NOISE * (f === 'noisy' ? 40 : 1);
        const raw = Math.max(0, Math.min(1, (amps - d.offset) / d.scale + noise));
        last = Math.round(raw * 4095) / 4095;
        return last;
      },
    });
  }
}

/** A standard normal draw (Box-Muller) from the rig's seeded stream. */
function gauss(rng: Rng): number {
  const u = Math.max(1e-12, rng());
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}
