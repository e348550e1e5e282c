// The MCP tools of every action kind, once: a new kind adds its module and one line here.
import type { ToolContext } from './context.js';
import { registerRelayTools } from './relay.js';
import { registerStepperTools } from './stepper.js';
import { registerDeviceTools } from './device.js';
import { registerSensorTools } from './sensor.js';
import { registerPwmTools } from './pwm.js';

export type { ToolContext } from './context.js';

export const KIND_TOOLS: ((ctx: ToolContext) => void)[] = [registerRelayTools, registerStepperTools, registerDeviceTools, registerSensorTools, registerPwmTools];
