// Every action kind, once: the host core, MCP and the dashboard read these traits instead of
// naming actions. A new kind adds its module and one line here.
import type { ActionName } from '../actions.js';
import type { ActionKind } from './kind.js';
import { RELAY_SET } from './relay.js';
import { STEPPER_HOME, STEPPER_MOVE } from './stepper.js';
import { ESTOP_CLEAR, STOP } from './device.js';
import { SENSOR_READ } from './sensor.js';
import { FAN_SET } from './fan.js';
import { SERVO_SET } from './servo.js';

export type { ActionKind } from './kind.js';
export { RELAY_SET } from './relay.js';
export { STEPPER_HOME, STEPPER_MOVE } from './stepper.js';
export { ESTOP_CLEAR, STOP } from './device.js';
export { SENSOR_READ } from './sensor.js';
export { FAN_SET } from './fan.js';
export { SERVO_SET } from './servo.js';

export const KINDS: Record<ActionName, ActionKind> = {
  [RELAY_SET.action]: RELAY_SET,
  [STEPPER_MOVE.action]: STEPPER_MOVE,
  [STEPPER_HOME.action]: STEPPER_HOME,
  [STOP.action]: STOP,
  [ESTOP_CLEAR.action]: ESTOP_CLEAR,
  [SENSOR_READ.action]: SENSOR_READ,
  [FAN_SET.action]: FAN_SET,
  [SERVO_SET.action]: SERVO_SET,
} as Record<ActionName, ActionKind>;

/** The kind of an action name, or undefined for one no kind declares. */
export function kindOf(action: string): ActionKind | undefined {
  return Object.prototype.hasOwnProperty.call(KINDS, action) ? KINDS[action as ActionName] : undefined;
}

/** The actions that occupy an axis (motion: true). */
export const MOTION_ACTIONS: readonly ActionName[] = (Object.keys(KINDS) as ActionName[]).filter((a) => KINDS[a].motion);
