// The stepper kind's MCP tools: stepper_move and stepper_home, both also MCP tasks.
import type { z } from 'zod';
import { STEPPER_HOME, STEPPER_MOVE } from '@proofrig/protocol/kinds';
import { CommandStatusSchema, StepperHomeInput, StepperMoveInput } from '../schemas.js';
import { resolveAxisTarget } from '../names.js';
import { taskToolHandler } from '../tasks.js';
import type { ToolContext } from './context.js';

/** A move or home whose target cannot be resolved: a tool error, also through the task path. */
class InvalidTarget extends Error {}

export function registerStepperTools({ server, core, act, ready, scope }: ToolContext): void {
  server.experimental.tasks.registerToolTask(
    'stepper_move',
    {
      title: 'Move an axis to an absolute position',
      description:
        'Moves an axis to an ABSOLUTE position in mm: name alone ("slide") or device_id + axis. "accepted" is not arrived: poll get_action_status (position_mm, time left), pass wait_ms, or run it as a task. ' +
        'completed = the ENCODER measured the target; failed MOTOR_STALL, POSITION_ERROR, NO_FEEDBACK or LIMIT_HIT otherwise; timeout = position UNKNOWN. Needs homing since boot (NOT_HOMED). ' +
        'After a failed or timed-out motion read get_device_status refresh=true first (STATE_READ_REQUIRED). The same request_id never moves twice.',
      inputSchema: StepperMoveInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
      execution: { taskSupport: 'optional' },
    },
    taskToolHandler<z.infer<typeof StepperMoveInput>>(core, async ({ name, device_id, axis, target_mm, speed_mm_s, request_id, wait_ms }, extra) => {
      await ready();
      const t = resolveAxisTarget(scope, { name, device_id, axis });
      if ('error' in t) throw new InvalidTarget('INVALID_ARGS: ' + t.error);
      const args: Record<string, unknown> = { axis: t.axis, mm: target_mm };
      if (speed_mm_s !== undefined) args.speed = speed_mm_s;
      return act({ device_id: t.device_id, action: STEPPER_MOVE.action, args, request_id }, wait_ms, extra);
    }),
  );

  server.experimental.tasks.registerToolTask(
    'stepper_home',
    {
      title: 'Home an axis',
      description:
        'Homes an axis (name alone, or device_id + axis): 0 mm where the home switch closes. completed only when the switch closed; failed NO_FEEDBACK if it never does. ' +
        '"accepted" is not homed: poll get_action_status, pass wait_ms, or run it as a task.',
      inputSchema: StepperHomeInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
      execution: { taskSupport: 'optional' },
    },
    taskToolHandler<z.infer<typeof StepperHomeInput>>(core, async ({ name, device_id, axis, request_id, wait_ms }, extra) => {
      await ready();
      const t = resolveAxisTarget(scope, { name, device_id, axis });
      if ('error' in t) throw new InvalidTarget('INVALID_ARGS: ' + t.error);
      return act({ device_id: t.device_id, action: STEPPER_HOME.action, args: { axis: t.axis }, request_id }, wait_ms, extra);
    }),
  );

}
