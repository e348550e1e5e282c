// Actions a device executes: their argument checks run on the host before sending and
// again on the device before touching a pin, from this one definition.
import type { BoardDef } from './board.js';
import { findAxis, findRelay, softLimits } from './board.js';
import { echo } from './check.js';
import { MIN_STEP_HZ } from './constants.js';

// idempotent: a retry with the same request_id is safe (the device's dedupe ring answers it).
// always: executes even while the target is busy and even for a request_id already seen.
export const ACTIONS = {
  /** Absolute: setting the same level twice is harmless. */
  'relay.set': { idempotent: true, always: false },
  /** Absolute target in mm: a retry cannot add distance. Relative moves are not offered. */
  'stepper.move': { idempotent: true, always: false },
  'stepper.home': { idempotent: true, always: false },
  /** Stop all motion at once; wins over a running move and is never deduplicated away. */
  stop: { idempotent: true, always: true },
  /** Clear a latched e-stop (operator-only on the host); refused ESTOP_ACTIVE while the input is still active. */
  'estop.clear': { idempotent: true, always: false },
  /** Take one reading of a sensor (sensors.ts); a repeat replays the reading already taken. */
  'sensor.read': { idempotent: true, always: false },
  /** Set a fan's duty (pwm.ts); absolute, so a repeat is harmless; it replays the speed already measured. */
  'fan.set': { idempotent: true, always: false },
  /** Set a servo's angle (pwm.ts); absolute; never verified (a hobby servo reports nothing). */
  'servo.set': { idempotent: true, always: false },
} as const;
export type ActionName = keyof typeof ACTIONS;

export interface RelaySetArgs {
  ch: number;
  on: boolean;
}

export interface StepperMoveArgs {
  axis: string;
  /** Absolute target, mm from home. */
  mm: number;
  /** Cruise speed, mm/s; the board's max_speed_mm_s when absent. */
  speed?: number;
}

export interface StepperHomeArgs {
  axis: string;
}

/** Stop one axis, or every moving actuator when `axis` is absent. */
export interface StopArgs {
  axis?: string;
}

/** Slowest cruise speed an axis can be driven at, mm/s: the firmware's step-rate floor. */
export function minSpeedMmS(stepsPerMm: number): number {
  return MIN_STEP_HZ / stepsPerMm;
}

export function isActionName(a: unknown): a is ActionName {
  return typeof a === 'string' && Object.prototype.hasOwnProperty.call(ACTIONS, a);
}

/** null when the arguments are valid for this board, else the reason (an INVALID_ARGS detail). */
export function checkRelaySetArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  // The channel list is built only for a message (the firmware runs this on every command).
  if (typeof p.ch !== 'number' || Math.floor(p.ch) !== p.ch)
    return 'ch must be an integer channel number (' + channelList(board) + ')';
  if (!findRelay(board, p.ch)) return 'ch ' + p.ch + ' does not exist on ' + board.id + '; valid channels: ' + channelList(board);
  if (typeof p.on !== 'boolean') return 'on must be true or false';
  return null;
}

function channelList(board: BoardDef): string {
  const chs: number[] = [];
  for (let i = 0; i < board.relays.length; i++) chs.push(board.relays[i].ch);
  return chs.join(', ');
}

function axesOf(board: BoardDef): string {
  const s = board.steppers || [];
  const out: string[] = [];
  for (let i = 0; i < s.length; i++) out.push(s[i].axis);
  return out.length ? out.join(', ') : 'none';
}

/** null when valid: an absolute target inside travel, a speed inside the board's limit. */
export function checkStepperMoveArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  if (typeof p.axis !== 'string') return 'axis must be a string (axes: ' + axesOf(board) + ')';
  const ax = findAxis(board, p.axis);
  if (!ax) return 'axis ' + echo(p.axis) + ' does not exist on ' + board.id + '; axes: ' + axesOf(board);
  if (typeof p.mm !== 'number' || !isFinite(p.mm)) return 'mm must be a number (absolute target in mm)';
  const lim = softLimits(ax);
  if (p.mm < lim.min_mm || p.mm > lim.max_mm)
    return 'target ' + p.mm + ' mm is outside the ' + (ax.soft_limits ? 'soft limits' : 'travel') + ' of axis ' + ax.axis + ': ' + lim.min_mm + '..' + lim.max_mm + ' mm';
  if (p.speed !== undefined) {
    const lo = minSpeedMmS(ax.steps_per_mm);
    if (typeof p.speed !== 'number' || !isFinite(p.speed) || p.speed < lo || p.speed > ax.max_speed_mm_s)
      return 'speed must be a number in [' + lo + ', ' + ax.max_speed_mm_s + '] mm/s for axis ' + ax.axis + ' (its slowest step rate is ' + MIN_STEP_HZ + ' Hz)';
  }
  return null;
}

export function checkStepperHomeArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  if (typeof p.axis !== 'string') return 'axis must be a string (axes: ' + axesOf(board) + ')';
  if (!findAxis(board, p.axis)) return 'axis ' + echo(p.axis) + ' does not exist on ' + board.id + '; axes: ' + axesOf(board);
  return null;
}

export function checkStopArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  if (p.axis === undefined) return null;
  return checkStepperHomeArgs(p, board);
}

export function checkEstopClearArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  if (!board.estop) return 'board ' + board.id + ' has no e-stop input; there is no latch to clear';
  for (const k in p) if (Object.prototype.hasOwnProperty.call(p, k)) return 'estop.clear takes no arguments (got ' + k.slice(0, 20) + ')';
  return null;
}
