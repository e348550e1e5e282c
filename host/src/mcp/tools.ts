// The MCP tools. Each returns structuredContent (validated by its outputSchema) and the same
// JSON as text for clients that read only text. Business outcomes (rejected, failed, timeout)
// are fields of a normal result; isError is only for a call the tool could not serve.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/commands.js';
import {
  ActionStatusInput,
  CancelInput,
  CancelResultSchema,
  CommandStatusSchema,
  DeviceListSchema,
  DeviceStatusInput,
  DeviceStatusSchema,
  RelaySetInput,
  StepperHomeInput,
  StepperMoveInput,
  StopDeviceInput,
} from './schemas.js';

export const SERVER_INFO = { name: 'proofrig', version: '0.1.0' };

/** How long an action tool waits for the device's acknowledgement before answering. */
const ACK_WAIT_MS = 1500;
/** How long stop_device and cancel_action wait for the device to confirm motion stopped. */
const STOP_WAIT_MS = 5000;

function ok(data: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }], structuredContent: data as Record<string, unknown> };
}

function toolError(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] };
}

/** A command id the journal does not hold: pruned by retention (with what is kept of it), or never known. */
function unknownOrPruned(core: HostCore, commandId: string): CallToolResult {
  const p = core.pruned(commandId);
  if (!p) return toolError('UNKNOWN_COMMAND', `no command "${commandId}" in the journal`);
  const days = Math.round(core.retention.maxAgeMs / 86400000);
  return toolError(
    'COMMAND_PRUNED',
    `command "${commandId}" (${p.action} on ${p.device_id}, request_id ${p.request_id}) ended ${p.state} at ${new Date(p.terminal_at).toISOString()} ` +
      `and was pruned from the journal at ${new Date(p.pruned_at).toISOString()} (retention: terminal commands older than ${days} days or beyond the newest ${core.retention.maxCommands}); its details and evidence are no longer kept`,
  );
}

const OUTCOME =
  'Outcome semantics: completed = executed AND confirmed by evidence (aux_contact: a feedback contact followed; pin_readback: only the MCU pin was read back); ' +
  'unverified = executed on an output nothing observes (not a success claim); failed = tried and the evidence contradicts, or the device rebooted (see error_code); ' +
  'rejected = refused before anything moved; timeout = no evidence by the deadline even after asking the device: outcome UNKNOWN, not failed.';

const MOVE_OUTCOME =
  'For a move, completed means the ENCODER measured the carriage within the board tolerance of the target (evidence: encoder); a driver FAULT ends failed MOTOR_STALL, ' +
  'a measured position off target ends failed POSITION_ERROR, an encoder that did not count ends failed NO_FEEDBACK, a limit switch ends failed LIMIT_HIT; position_mm is the measured position. ' +
  'After a failed or timed-out motion, read the real state (get_device_status refresh=true) before moving that axis again, or the move is rejected STATE_READ_REQUIRED.';

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
    'stepper_move',
    {
      title: 'Move an axis to an absolute position',
      description:
        'Moves a stepper axis to an ABSOLUTE position in mm (relative moves are not offered, so a retry can never add distance). Returning means the device ACCEPTED the move, not that it arrived: ' +
        'call get_action_status(command_id) until terminal (it reports position_mm and estimated_remaining_seconds while running). ' +
        'The axis must be homed since the device booted (else rejected NOT_HOMED); a target outside travel is rejected INVALID_ARGS before anything moves; a busy axis is rejected BUSY (not queued). ' +
        'The same request_id again returns the same command and never moves twice. ' +
        MOVE_OUTCOME +
        ' ' +
        OUTCOME,
      inputSchema: StepperMoveInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id, axis, target_mm, speed_mm_s, request_id }) => {
      const args: Record<string, unknown> = { axis, mm: target_mm };
      if (speed_mm_s !== undefined) args.speed = speed_mm_s;
      return ok(await untilAcked(core, core.submit({ device_id, action: 'stepper.move', args, request_id })));
    },
  );

  server.registerTool(
    'stepper_home',
    {
      title: 'Home an axis',
      description:
        'Drives the axis towards its home switch at the board home speed and sets 0 mm where the switch closes. Completed (evidence aux_contact) only when the home switch closed; ' +
        'if the switch never closes within the travel it ends failed NO_FEEDBACK. Returns after the device accepted; call get_action_status for the outcome. ' +
        OUTCOME,
      inputSchema: StepperHomeInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id, axis, request_id }) =>
      ok(await untilAcked(core, core.submit({ device_id, action: 'stepper.home', args: { axis }, request_id }))),
  );

  server.registerTool(
    'stop_device',
    {
      title: 'Stop all motion on a device',
      description:
        'Stops every moving actuator (stepper axes) on the device at once; it wins over any running move, which then ends cancelled with its measured position. ' +
        'Answers once the device CONFIRMED motion has stopped (state completed, evidence encoder: the encoder no longer changes), or after 5 s with the state so far. Relays keep their state. ' +
        'An offline device is rejected DEVICE_OFFLINE: then nothing was stopped by this call.',
      inputSchema: StopDeviceInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async ({ device_id }, extra) => {
      const s = core.submit({ device_id, action: 'stop', args: {} });
      return ok((await core.waitTerminal(s.command_id, STOP_WAIT_MS, extra.signal))!);
    },
  );

  server.registerTool(
    'cancel_action',
    {
      title: 'Cancel a command',
      description:
        'Cancels a running motion command (stepper_move, stepper_home) by stopping its axis, and answers once it is terminal (cancelled with the measured position, or whatever it reached first) or after 5 s. ' +
        'Terminal commands are left unchanged, and relay switching cannot be recalled (it takes milliseconds): then cancel_requested is false and reason says why.',
      inputSchema: CancelInput,
      outputSchema: CancelResultSchema,
      annotations: { destructiveHint: false },
    },
    async ({ command_id }, extra) => {
      const r = core.commands.cancel(command_id);
      if (!r) return unknownOrPruned(core, command_id);
      const target = r.stop && r.stop.state !== 'rejected' ? (await core.waitTerminal(command_id, STOP_WAIT_MS, extra.signal))! : r.target;
      return ok({ command: target, cancel_requested: !!r.stop && r.stop.state !== 'rejected', stop_command_id: r.stop?.command_id ?? null, reason: r.reason });
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
      if (!core.status(command_id)) return unknownOrPruned(core, command_id);
      const token = extra._meta?.progressToken;
      let stop = () => {};
      if (token !== undefined) {
        // MCP progress must increase: the device's percent when it reports one, else a counter of state changes.
        let last = -1;
        const notify = (s: CommandStatus) => {
          const progress = s.terminal ? 100 : s.progress_pct ?? Math.min(99, last + 1);
          if (progress <= last) return;
          last = progress;
          const where = s.position_mm !== null ? ` at ${s.position_mm} mm` : '';
          const left = s.estimated_remaining_seconds !== null ? `, ~${s.estimated_remaining_seconds.toFixed(1)} s left` : '';
          void extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress, total: 100, message: `${s.state}${where}${left}` },
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
  return (await core.commands.waitFor(s.command_id, (n) => n.state !== 'sent', ACK_WAIT_MS))!;
}
