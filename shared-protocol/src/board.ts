// Board definitions: the JSON files in boards/ and the `board` field of a rig config.
// Pins are ESP32 GPIO numbers (Espruino accepts a number wherever it takes a pin).
import type { I2cBusDef, SensorDef } from './sensors.js';
import type { PwmDef } from './pwm.js';

export type RelayFeedback =
  /** An auxiliary (mirror) contact of the relay wired to an input pin. */
  | { kind: 'aux_contact'; pin: Gpio; active_low: boolean; pull: 'up' | 'down' | 'external' }
  /** Only the MCU output pin is read back. */
  | { kind: 'pin_readback' }
  /** Nothing observes this output. */
  | { kind: 'none' }
  /**
   * The load's own current, measured by a current sensor of this board (an INA219 with quantity
   * current, or an ADC input in A) settle_ms after switching: on when above on_above, off when
   * below off_below. A coil that switched with no current flowing (a blown lamp, a fuse out) fails NO_FEEDBACK.
   */
  | LoadCurrentFeedback;

export interface LoadCurrentFeedback {
  kind: 'load_current';
  /** The id of the current sensor in this board's sensors. */
  sensor: string;
  /** Amps the load draws when on: switched on is verified only above this. */
  on_above: number;
  /** Amps below which the load counts as off: switched off is verified only below this. */
  off_below: number;
}

/**
 * An ESP32 GPIO number. Which pins may be used for what (input-only, strapping, watchable, DAC)
 * is checked by `proofrig board check`.
 * @asType integer
 * @minimum 0
 * @maximum 39
 */
export type Gpio = number;

/**
 * Milliseconds.
 * @minimum 0
 * @maximum 600000
 */
export type Ms = number;

export interface RelayDef {
  /**
   * Channel number as printed on the module, 1-based.
   * @asType integer
   * @minimum 1
   * @maximum 64
   */
  ch: number;
  name: string;
  /** What the channel drives, in the words people use ("bench lamp"); tools accept it for the channel number. */
  label?: string;
  /** GPIO driving the module input. */
  pin: Gpio;
  /** true when the module energises the coil on a LOW input (most opto-isolated modules). */
  active_low: boolean;
  /** Datasheet worst-case operate and release times of the relay. */
  operate_ms: Ms;
  release_ms: Ms;
  /** Wait after writing before feedback is read; must cover operate/release plus contact bounce. */
  settle_ms: Ms;
  feedback: RelayFeedback;
  /**
   * Interlock: the device switches the channel off by itself this long after it was switched on
   * (and reports an `evt` of kind `max_on`). Absent: no limit. No command can exceed it; only a
   * re-upload of the board changes it.
   */
  max_on_ms?: number;
  /**
   * Interlock: once the channel is off (switched off by a command, its max on-time or the e-stop,
   * or at boot) the device refuses to switch it on again for this long (rejected MIN_OFF_TIME).
   * With max_on_ms it bounds the duty cycle to max_on_ms / (max_on_ms + min_off_ms). Absent: none.
   */
  min_off_ms?: number;
}

/** A switch wired to an input: closed reads the active level. */
export interface SwitchDef {
  pin: Gpio;
  active_low: boolean;
  pull: 'up' | 'down' | 'external';
}

/**
 * A lead-screw axis: step/dir driver with enable and an active-low FAULT output, a quadrature
 * encoder on the carriage (the truth about position), a home switch at travel.min and
 * optional limit switch at travel.max.
 */
export interface StepperDef {
  axis: string;
  name: string;
  /** What the axis moves, in the words people use ("slide"); tools accept it for the axis. */
  label?: string;
  driver: {
    /** The driver chip, e.g. "DRV8825". */
    part: string;
    step_pin: Gpio;
    dir_pin: Gpio;
    /** Level on dir_pin that moves towards +mm. */
    dir_positive_level: 0 | 1;
    enable_pin: Gpio;
    enable_active_low: boolean;
    /** FAULT (nFAULT on a DRV8825): open-drain, low on over-current/over-temperature. */
    fault: SwitchDef;
    /** Datasheet minimum STEP high/low time and DIR setup time, µs. */
    min_pulse_us: number;
    dir_setup_us: number;
    /** Highest step rate the driver and firmware support, steps/s. */
    max_step_hz: number;
  };
  encoder: { a_pin: Gpio; b_pin: Gpio; pull: 'up' | 'down' | 'external'; counts_per_mm: number };
  /** Home switch at travel.min_mm; also the negative end-of-travel switch. */
  home: SwitchDef;
  /** Limit switch at travel.max_mm, when fitted. */
  limit_max?: SwitchDef;
  travel: { min_mm: number; max_mm: number };
  steps_per_mm: number;
  max_speed_mm_s: number;
  accel_mm_s2: number;
  home_speed_mm_s: number;
  /** A finished move is `completed` only when the encoder is within this of the target. */
  tolerance_mm: number;
  /**
   * Interlock: the span targets must stay in, checked on the device (and by the host); the device
   * also stops a move whose encoder leaves it. Within travel; travel when absent.
   */
  soft_limits?: { min_mm: number; max_mm: number };
}

export interface BoardDef {
  /**
   * Stable identifier, also the default device id of a simulated rig.
   * @pattern ^[a-z0-9][a-z0-9_-]{0,31}$
   */
  id: string;
  name: string;
  mcu: 'esp32';
  /** The dev board, e.g. "ESP32-DevKitC-32E". */
  module: string;
  /** Where the device is (a room, a bench: "lab bench"), shown with its outputs' names; 1-40 characters. */
  area?: string;
  /** Worst case from receiving a frame to starting the action, measured on the device. */
  device_processing_max_ms: Ms;
  relays: RelayDef[];
  steppers?: StepperDef[];
  /**
   * Interlock: an e-stop input. While it reads its active level (and after, until an operator
   * clears the latch with estop.clear) every relay is off and every axis stopped and disabled.
   */
  estop?: SwitchDef;
  /** The I2C bus the board's I2C sensors are on (sensors.ts). */
  i2c?: I2cBusDef;
  /** Sensors read on request (sensor.read): I2C and ADC inputs, sensors.ts. */
  sensors?: SensorDef[];
  /** PWM outputs on the ESP32's LEDC (pwm.ts): fans (fan.set, proven by their tachometer) and hobby servos (servo.set, unverified). */
  pwm?: PwmDef[];
  /** Interlock: the device reboots when its main loop stalls this long, s (E.enableWatchdog; whole seconds on the ESP32). Default 5. */
  watchdog_s?: number;
  notes?: string[];
}

/** Worst-case actuator time of a relay channel, the `actuator_worst` term of the timeout formula. */
export function relayWorstMs(r: RelayDef): number {
  return Math.max(r.settle_ms, r.operate_ms, r.release_ms);
}

/** The span a target must stay inside: soft_limits, else travel. */
export function softLimits(s: StepperDef): { min_mm: number; max_mm: number } {
  return s.soft_limits || s.travel;
}

/** Watchdog timeout when the board does not set one, s. */
export const DEFAULT_WATCHDOG_S = 5;

export function findRelay(board: BoardDef, ch: number): RelayDef | undefined {
  for (let i = 0; i < board.relays.length; i++) if (board.relays[i].ch === ch) return board.relays[i];
  return undefined;
}

export function findAxis(board: BoardDef, axis: string): StepperDef | undefined {
  const s = board.steppers || [];
  for (let i = 0; i < s.length; i++) if (s[i].axis === axis) return s[i];
  return undefined;
}

/** A channel by label or name (case-insensitive; the number itself is not a name); undefined when none matches. */
export function relayByName(board: BoardDef, key: string): RelayDef | undefined {
  const k = key.trim().toLowerCase();
  for (let i = 0; i < board.relays.length; i++) {
    const r = board.relays[i];
    if ((r.label !== undefined && r.label.toLowerCase() === k) || r.name.toLowerCase() === k) return r;
  }
  return undefined;
}

/** An axis by id, label or name (case-insensitive); undefined when none matches. */
export function axisByName(board: BoardDef, key: string): StepperDef | undefined {
  const k = key.trim().toLowerCase();
  const s = board.steppers || [];
  for (let i = 0; i < s.length; i++) if (s[i].axis === k || (s[i].label !== undefined && s[i].label!.toLowerCase() === k) || s[i].name.toLowerCase() === k) return s[i];
  return undefined;
}
