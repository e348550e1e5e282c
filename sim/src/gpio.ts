// The ESP32's GPIO pins as the simulated rig sees them: modes, driven values, pulls, external
// attachments (relay module inputs, contacts) and the resulting electrical level of every pin.
//
// Espruino rules reproduced here (src/jspin.c, src/jswrap_io.c):
// - digitalWrite/digitalRead/analogWrite/digitalPulse change the pin mode automatically unless pinMode
//   set it "manually"; digitalRead on an auto-mode pin turns it into an INPUT (an output stops driving).
// - An output pin's digitalRead returns the electrical level (the ESP32 keeps the input buffer on).
// - GPIO 34..39 are input-only: they never drive and have no internal pull resistors.

export type PinMode =
  | 'analog'
  | 'input'
  | 'input_pullup'
  | 'input_pulldown'
  | 'output'
  | 'opendrain'
  | 'opendrain_pullup'
  | 'af_output'
  | 'af_opendrain';

export const PIN_MODES: readonly PinMode[] = [
  'analog',
  'input',
  'input_pullup',
  'input_pulldown',
  'output',
  'opendrain',
  'opendrain_pullup',
  'af_output',
  'af_opendrain',
];

export type Level = 0 | 1;

/** GPIO numbers that exist on an ESP32 (WROOM/WROVER); Espruino rejects the others with "Invalid pin!". */
export const ESP32_PINS: readonly number[] = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 25, 26, 27, 32, 33, 34, 35, 36, 37,
  38, 39,
];
/** GPIO 6..11 drive the flash chip; the ESP32 cannot watch them. */
export const FLASH_PINS: readonly number[] = [6, 7, 8, 9, 10, 11];

export function isValidPin(n: number): boolean {
  return ESP32_PINS.indexOf(n) >= 0;
}
export function isInputOnly(n: number): boolean {
  return n >= 34 && n <= 39;
}

/** Something wired to a pin outside the MCU. Each hook may return undefined for "no influence". */
export interface PinAttachment {
  /** A fault that pins the line to a level whatever drives it. */
  stuck?(): Level | undefined;
  /** A strong external source, e.g. a closed contact to GND. Beaten only by the MCU's own driver. */
  drive?(): Level | undefined;
  /** An analog source (a sensor's output voltage): what analogRead sees, 0..1 of the ADC range. */
  analog?(): number;
  /** A resistor to a rail (external pull-up, a module's input pull). Beats the MCU's weak internal pulls. */
  pull?(): Level | undefined;
}

export interface PwmState {
  /** 0..1 */
  duty: number;
  /** Hz */
  freq: number;
}

interface Pin {
  /** What Espruino reports with getPinMode (undefined until something set it). */
  mode: PinMode | undefined;
  /** The electrical configuration (differs from `mode` only after setWatch forced input+pull-up). */
  hw: PinMode | undefined;
  manual: boolean;
  /** The output register. */
  out: Level;
  pwm: PwmState | undefined;
  level: Level;
}

/** A level change; `atMs` is the clock time it happened when that is earlier than now (rig physics integrated on a tick). */
export type LevelListener = (pin: number, level: Level, atMs?: number) => void;

export class Gpio {
  private pins = new Map<number, Pin>();
  private attachments = new Map<number, PinAttachment>();
  private listeners = new Set<LevelListener>();
  private refreshListeners = new Set<(pin: number) => void>();
  private writeCounts = new Map<number, number>();
  private powered = false;

  constructor() {
    for (const n of ESP32_PINS) this.pins.set(n, fresh());
  }

  // ---- wiring -----------------------------------------------------------------------------------

  attach(pin: number, a: PinAttachment): void {
    this.attachments.set(pin, a);
    this.refresh(pin);
  }

  detach(pin: number): void {
    this.attachments.delete(pin);
    this.refresh(pin);
  }

  /** Listen to every change of a pin's electrical level. Returns the unsubscribe function. */
  onChange(fn: LevelListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Listen to every re-evaluation of a pin, changed level or not: its mode, output register or PWM
   * may have changed (a step train's frequency, say). Returns the unsubscribe function.
   */
  onRefresh(fn: (pin: number) => void): () => void {
    this.refreshListeners.add(fn);
    return () => this.refreshListeners.delete(fn);
  }

  /**
   * Recompute a pin's level after anything it depends on changed; notifies level listeners on a
   * change, then refresh listeners. `atMs`: when the change really happened, if before now.
   */
  refresh(pin: number, atMs?: number): void {
    const p = this.pins.get(pin);
    if (!p) return;
    const level = this.compute(pin, p);
    if (level !== p.level) {
      p.level = level;
      for (const fn of [...this.listeners]) fn(pin, level, atMs);
    }
    for (const fn of [...this.refreshListeners]) fn(pin);
  }

  refreshAll(): void {
    for (const n of this.pins.keys()) this.refresh(n);
  }

  /** Power on or off. Either way every pin returns to its reset state (input, floating). */
  setPowered(on: boolean): void {
    this.powered = on;
    for (const [n, p] of this.pins) {
      const level = p.level;
      Object.assign(p, fresh());
      p.level = level;
      this.refresh(n);
    }
  }

  get isPowered(): boolean {
    return this.powered;
  }

  // ---- what the outside world observes ------------------------------------------------------------

  level(pin: number): Level {
    return this.pin(pin).level;
  }

  writes(pin: number): number {
    return this.writeCounts.get(pin) ?? 0;
  }

  getMode(pin: number): PinMode | undefined {
    return this.pin(pin).mode;
  }

  isManual(pin: number): boolean {
    return this.pin(pin).manual;
  }

  /** The output register (what the firmware last wrote), whether or not the pin drives it. */
  outputValue(pin: number): Level {
    return this.pin(pin).out;
  }

  pwm(pin: number): PwmState | undefined {
    const p = this.pin(pin).pwm;
    return p ? { duty: p.duty, freq: p.freq } : undefined;
  }

  // ---- what Espruino's functions do ----------------------------------------------------------------

  /** pinMode(pin, mode, automatic): a mode, or undefined/'auto' to go back to automatic. */
  setMode(pin: number, mode: PinMode | undefined, automatic = false): void {
    const p = this.pin(pin);
    if (mode === undefined) {
      p.manual = false;
      return;
    }
    p.manual = !automatic;
    p.mode = mode;
    p.hw = mode;
    if (!isOutputMode(mode)) p.pwm = undefined;
    this.refresh(pin);
  }

  /** digitalWrite on one pin. */
  write(pin: number, value: Level): void {
    const p = this.pin(pin);
    this.writeCounts.set(pin, this.writes(pin) + 1);
    p.out = value;
    p.pwm = undefined;
    if (!p.manual) {
      p.mode = 'output';
      p.hw = 'output';
    }
    this.refresh(pin);
  }

  /** digitalRead on one pin. */
  read(pin: number): Level {
    const p = this.pin(pin);
    if (!p.manual) {
      // jshPinInput: an auto-mode pin is (re)configured as a plain input, even a watched one.
      p.mode = 'input';
      p.hw = 'input';
      p.pwm = undefined;
      this.refresh(pin);
    }
    return p.level;
  }

  /** analogRead: an attached analog source's voltage (0..1), else the level as 0 or 1. */
  analogRead(pin: number): number {
    const p = this.pin(pin);
    if (!p.manual) {
      p.mode = 'analog';
      p.hw = 'analog';
      p.pwm = undefined;
      this.refresh(pin);
    }
    const src = this.attachments.get(pin)?.analog;
    return src ? src() : p.level;
  }

  /** analogWrite: records duty and frequency; the level model is the duty rounded to 0 or 1. */
  analogWrite(pin: number, duty: number, freq: number): void {
    const p = this.pin(pin);
    if (!p.manual) {
      p.mode = 'output';
      p.hw = 'output';
    }
    p.pwm = { duty: Math.min(1, Math.max(0, duty)), freq };
    this.refresh(pin);
  }

  /** The output register changed by a pulse (digitalPulse): not counted as a digitalWrite. */
  setOut(pin: number, value: Level): void {
    const p = this.pin(pin);
    p.out = value;
    p.pwm = undefined;
    this.refresh(pin);
  }

  /** Prepare a pin for output without writing (digitalPulse sets the mode first). */
  autoOutput(pin: number): void {
    const p = this.pin(pin);
    if (!p.manual) {
      p.mode = 'output';
      p.hw = 'output';
      this.refresh(pin);
    }
  }

  /** What the ESP32 port of Espruino does in setWatch: GPIO input with the pull-up on. */
  forceWatchInput(pin: number): void {
    const p = this.pin(pin);
    p.hw = 'input_pullup';
    p.pwm = undefined;
    this.refresh(pin);
  }

  // ---- internals -------------------------------------------------------------------------------

  private pin(n: number): Pin {
    const p = this.pins.get(n);
    if (!p) throw new Error(`GPIO${n} does not exist on an ESP32`);
    return p;
  }

  private compute(n: number, p: Pin): Level {
    const a = this.attachments.get(n);
    const stuck = a?.stuck?.();
    if (stuck !== undefined) return this.powered ? stuck : 0;
    if (!this.powered) return 0;
    const driven = this.driven(n, p);
    if (driven !== undefined) return driven;
    const drive = a?.drive?.();
    if (drive !== undefined) return drive;
    const pull = a?.pull?.();
    if (pull !== undefined) return pull;
    if (!isInputOnly(n)) {
      if (p.hw === 'input_pullup' || p.hw === 'opendrain_pullup') return 1;
      if (p.hw === 'input_pulldown') return 0;
    }
    return 0;
  }

  /** The level the MCU itself forces on the line, if any. */
  private driven(n: number, p: Pin): Level | undefined {
    if (isInputOnly(n) || p.hw === undefined) return undefined;
    const value: Level = p.pwm ? (p.pwm.duty >= 0.5 ? 1 : 0) : p.out;
    if (p.hw === 'output' || p.hw === 'af_output') return value;
    if (p.hw === 'opendrain' || p.hw === 'opendrain_pullup' || p.hw === 'af_opendrain') return value === 0 ? 0 : undefined;
    return undefined;
  }
}

function fresh(): Pin {
  return { mode: undefined, hw: undefined, manual: false, out: 0, pwm: undefined, level: 0 };
}

function isOutputMode(m: PinMode): boolean {
  return m === 'output' || m === 'af_output' || m === 'opendrain' || m === 'opendrain_pullup' || m === 'af_opendrain';
}
