// The MCP tools. Each returns structuredContent (validated by its outputSchema) and the same
// JSON as text for clients that read only text. Business outcomes (rejected, failed, timeout)
// are fields of a normal result; isError is only for a call the tool could not serve.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/commands.js';
import {
  ActionStatusInput,
  CommandStatusSchema,
  DeviceListSchema,
  DeviceStatusInput,
  DeviceStatusSchema,
  RelaySetInput,
} from './schemas.js';

export const SERVER_INFO = { name: 'proofrig', version: '0.1.0' };

/** How long an action tool waits for the device's acknowledgement before answering. */
const ACK_WAIT_MS = 1500;

function ok(data: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }], structuredContent: data as Record<string, unknown> };
}

function toolError(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] };
}

const OUTCOME =
  'Outcome semantics: completed = executed AND confirmed by evidence (aux_contact: a feedback contact followed; pin_readback: only the MCU pin was read back); ' +
  'unverified = executed on an output nothing observes (not a success claim); failed = tried and the evidence contradicts, or the device rebooted (see error_code); ' +
  'rejected = refused before anything moved; timeout = no evidence by the deadline even after asking the device: outcome UNKNOWN, not failed.';

export function createMcpServer(core: HostCore): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      'proofrig drives real relays through ESP32 devices and reports only what the hardware confirmed. Action tools return a command_id after the device ACCEPTED the command; ' +
      'call get_action_status for the outcome and act on `state`/`verified`, never on the action tool returning. ' +
      OUTCOME,
  });

  server.registerTool(
    'list_devices',
    {
      title: 'List devices',
      description: 'Lists every provisioned device with online/offline, boot id, last-seen age and the cached state with its age. Reads the host registry only; nothing is sent to devices.',
      inputSchema: {},
      outputSchema: DeviceListSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async () => ok({ devices: core.listDevices() }),
  );

  server.registerTool(
    'get_device_status',
    {
      title: 'Device status',
      description:
        'Status of one device. refresh=false returns the cached state and how old it is (state_age_ms); refresh=true asks the device now and returns what it reports (source: "device"), or the cache with refresh_error when it cannot.',
      inputSchema: DeviceStatusInput,
      outputSchema: DeviceStatusSchema,
      annotations: { readOnlyHint: true },
    },
    async ({ device_id, refresh }) => {
      const s = await core.deviceStatus(device_id, refresh);
      if (!s) return toolError('DEVICE_OFFLINE', `no device "${device_id}" is provisioned; known devices: ${core.devices.ids().join(', ') || 'none'}`);
      return ok(s);
    },
  );

  server.registerTool(
    'relay_set',
    {
      title: 'Switch a relay',
      description:
        'Switches one relay channel on or off. Returning means the command was journaled and (state "accepted") the device acknowledged it — NOT that the relay switched: ' +
        'executed is false until the device reports a result. Call get_action_status(command_id) for the outcome. ' +
        'An offline or unknown device, a channel the board does not have, or a busy channel comes back as state "rejected" with error_code, and nothing is sent or switched. ' +
        'Passing the same request_id again returns the same command and never switches twice. ' +
        OUTCOME,
      inputSchema: RelaySetInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id, channel, on, request_id }) => {
      const s = core.submit({ device_id, action: 'relay.set', args: { ch: channel, on }, request_id });
      return ok(await untilAcked(core, s));
    },
  );

  server.registerTool(
    'get_action_status',
    {
      title: 'Action status',
      description:
        'The lifecycle state of a command from the persistent journal (it survives host restarts). Waits up to wait_ms (default 3000, max 5000) and returns as soon as the command is terminal; ' +
        'if terminal is false, call again. While running it gives estimated_remaining_seconds. Sends MCP progress notifications when the request carries a progress token. ' +
        OUTCOME,
      inputSchema: ActionStatusInput,
      outputSchema: CommandStatusSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ command_id, wait_ms }, extra) => {
      if (!core.status(command_id)) return toolError('UNKNOWN_COMMAND', `no command "${command_id}" in the journal`);
      const token = extra._meta?.progressToken;
      let stop = () => {};
      if (token !== undefined) {
        let n = 0;
        const notify = (s: CommandStatus) => {
          void extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: ++n, message: `${s.state}${s.progress_pct !== null ? ' ' + s.progress_pct + '%' : ''}` },
            })
            .catch(() => {});
        };
        core.commands.on('change:' + command_id, notify);
        stop = () => core.commands.off('change:' + command_id, notify);
      }
      try {
        const s = await core.waitTerminal(command_id, wait_ms, extra.signal);
        return ok(s!);
      } finally {
        stop();
      }
    },
  );

  return server;
}

/** Give the device a moment to acknowledge, so `accepted` reflects the device and not just the host. */
async function untilAcked(core: HostCore, s: CommandStatus): Promise<CommandStatus> {
  if (s.state !== 'sent') return s;
  return new Promise((resolve) => {
    const ev = 'change:' + s.command_id;
    const done = () => {
      core.commands.off(ev, onChange);
      core.clock.clearTimeout(timer);
      resolve(core.status(s.command_id)!);
    };
    const onChange = (n: CommandStatus) => {
      if (n.state !== 'sent') done();
    };
    const timer = core.clock.setTimeout(done, ACK_WAIT_MS);
    core.commands.on(ev, onChange);
  });
}
