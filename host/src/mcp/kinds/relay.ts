// The relay kind's MCP tool: relay_set.
import { RELAY_SET } from '@proofrig/protocol/kinds';
import { CommandStatusSchema, RelaySetInput } from '../schemas.js';
import { resolveRelayTarget } from '../names.js';
import { toolResult as ok } from '../result.js';
import { toolError, type ToolContext } from './context.js';

export function registerRelayTools({ server, act, ready, scope }: ToolContext): void {
  server.registerTool(
    'relay_set',
    {
      title: 'Switch a relay',
      description:
        'Switches a relay on or off: name alone ("bench lamp") or device_id + channel. Answering "accepted" is NOT that the relay switched: ' +
        'the outcome comes from get_action_status, or in this call with wait_ms. completed = a feedback contact or the pin read-back confirmed it; unverified = executed, nothing observes it; ' +
        'rejected = nothing sent; timeout = outcome UNKNOWN. The same request_id never switches twice.',
      inputSchema: RelaySetInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ name, device_id, channel, on, request_id, wait_ms }, extra) => {
      await ready();
      const t = resolveRelayTarget(scope, { name, device_id, channel });
      if ('error' in t) return toolError('INVALID_ARGS', t.error);
      return ok(await act({ device_id: t.device_id, action: RELAY_SET.action, args: { ch: t.ch, on }, request_id }, wait_ms, extra));
    },
  );

}
