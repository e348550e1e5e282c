// Whole-device tools: stop_device (estop_clear is an operator tool: operator-tools.ts).
import { STOP } from '@proofrig/protocol/kinds';
import { CommandStatusSchema, StopDeviceInput } from '../schemas.js';
import { followProgress } from '../progress.js';
import { toolResult as ok } from '../result.js';
import type { ToolContext } from './context.js';

export function registerDeviceTools({ server, core, ready, hidden, hiddenError }: ToolContext): void {
  server.registerTool(
    'stop_device',
    {
      title: 'Stop all motion on a device',
      description:
        'Stops all motion on a device; running moves end cancelled with their measured position. Answers when the device CONFIRMED the axes stopped (completed, evidence encoder) or after wait_ms. ' +
        'Relays keep their state. Rejected DEVICE_OFFLINE = nothing was stopped.',
      inputSchema: StopDeviceInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async ({ device_id, wait_ms }, extra) => {
      await ready();
      if (hidden(device_id)) return hiddenError(device_id);
      const s = await core.submit({ device_id, action: STOP.action, args: {} });
      const stop = followProgress(core, s.command_id, extra);
      try {
        return ok((await core.waitTerminal(s.command_id, wait_ms, extra.signal))!);
      } finally {
        stop();
      }
    },
  );

}
