// The MCP tools. Each returns structuredContent (validated by its outputSchema) and the same
// JSON as text for clients that read only text. Business outcomes (rejected, failed, timeout)
// are fields of a normal result; isError is only for a call the tool could not serve.
import type { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import type { CommandStatus, SubmitInput } from '../core/command-view.js';
import { VERSION } from '../version.js';
import { followProgress } from './progress.js';
import { resolveAxis, resolveChannel } from './names.js';
import { deviceViews, registerResources } from './resources.js';
import { registerPrompts } from './prompts.js';
import { forwardLogs } from './logging.js';
import { JournalTaskStore, TASK_CAPABILITIES, taskToolHandler } from './tasks.js';
import { listCommands } from './commands-list.js';
import { registerOperatorTools, type HostConfirm } from './operator-tools.js';
import { toolResult } from './result.js';
import { durable } from './durable.js';
import {
  ActionStatusInput,
  CommandListSchema,
  ListCommandsInput,
  ListDevicesInput,
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

export const SERVER_INFO = { name: 'proofrig', version: VERSION };

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface McpOptions {
  /** Resolves once the simulated rigs this host started are online (or their bounded boot wait passed); tools answer after it. */
  ready?: Promise<unknown>;
  /** How long an action waits for a provisioned device that is booting or reconnecting before DEVICE_OFFLINE (default 5000). */
  bootWaitMs?: number;
  /** Asks the person at the host's own terminal to confirm an operator-only call (absent: nobody can). */
  confirmAtHost?: HostConfirm;
}

/** How long an action tool waits for the device's acknowledgement before answering. */
const ACK_WAIT_MS = 1500;
/** How long an action waits for a booting or reconnecting device before it is rejected DEVICE_OFFLINE. */
const BOOT_WAIT_MS = 5000;

const ok = toolResult;

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

export function createMcpServer(core: HostCore, opts: McpOptions = {}): McpServer {
  const server = durable(core, new McpServer(SERVER_INFO, {
    instructions:
      'proofrig drives real relays through ESP32 devices and reports only what the hardware confirmed. Action tools return a command_id after the device ACCEPTED the command; ' +
      'call get_action_status for the outcome (or pass wait_ms to get it in the same call) and act on `state`/`verified`, never on the action tool returning. ' +
      'list_commands finds commands again; the prompts hold the safe sequences. ' +
      OUTCOME,
    capabilities: { logging: {}, resources: { subscribe: true, listChanged: true }, tasks: TASK_CAPABILITIES },
    taskStore: new JournalTaskStore(core),
  }));
  const cleanups: (() => void)[] = [];
  server.server.onclose = () => {
    for (const c of cleanups.splice(0)) c();
  };
  const bootWaitMs = opts.bootWaitMs ?? BOOT_WAIT_MS;
  const ready = async () => {
    if (opts.ready) await opts.ready;
  };

  /** Submit an action: wait (bounded) for a booting device, answer after the ack, or after the outcome when wait_ms asks for it. */
  const act = async (input: SubmitInput, waitMs: number | undefined, extra: Extra): Promise<CommandStatus> => {
    await ready();
    if (core.booting(input.device_id)) await core.waitOnline(input.device_id, bootWaitMs, extra.signal);
    const s = await core.submit(input);
    const stop = followProgress(core, s.command_id, extra);
    try {
      const acked = await untilAcked(core, s);
      return waitMs ? (await core.waitTerminal(s.command_id, waitMs, extra.signal))! : acked;
    } finally {
      stop();
    }
  };
  const board = (dev: string) => core.devices.board(dev);

  server.registerTool(
    'list_devices',
    {
      title: 'List devices',
      description: 'Lists every provisioned device with online/offline, boot id, last-seen age and the cached state with its age. Reads the host registry only; nothing is sent to devices.',
      inputSchema: ListDevicesInput,
      outputSchema: DeviceListSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async () => {
      await ready();
      return ok({ devices: deviceViews(core) });
    },
  );

  server.registerTool(
    'list_commands',
    {
      title: 'List commands',
      description:
        'Recent commands from the journal, newest first, filtered by device, lifecycle state, open (not terminal) and submission time. Use it to find a command_id you lost; ' +
        'get_action_status(command_id) gives the full status, the resource proofrig://commands/{command_id} its event history.',
      inputSchema: ListCommandsInput,
      outputSchema: CommandListSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async (q) => ok({ commands: listCommands(core, q) }),
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
    async ({ device_id, refresh }, extra) => {
      await ready();
      if (refresh && core.booting(device_id)) await core.waitOnline(device_id, bootWaitMs, extra.signal);
      const s = await core.deviceStatus(device_id, refresh);
      if (!s) return toolError('DEVICE_OFFLINE', `no device "${device_id}" is provisioned; known devices: ${core.devices.ids().join(', ') || 'none'}`);
      return ok({ ...s, ...deviceViews(core, device_id)[0] });
    },
  );

  server.registerTool(
    'relay_set',
    {
      title: 'Switch a relay',
      description:
        'Switches one relay channel on or off. Returning means the command was journaled and (state "accepted") the device acknowledged it — NOT that the relay switched: ' +
        'executed is false until the device reports a result. Call get_action_status(command_id) for the outcome, or pass wait_ms to get it in this call. ' +
        'channel is the number or the label list_devices shows ("bench lamp"). ' +
        'An offline or unknown device, a channel the board does not have, or a busy channel comes back as state "rejected" with error_code, and nothing is sent or switched. ' +
        'Passing the same request_id again returns the same command and never switches twice. ' +
        OUTCOME,
      inputSchema: RelaySetInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id, channel, on, request_id, wait_ms }, extra) => {
      const ch = resolveChannel(board(device_id), channel);
      if ('error' in ch) return toolError('INVALID_ARGS', ch.error);
      return ok(await act({ device_id, action: 'relay.set', args: { ch: ch.ch, on }, request_id }, wait_ms, extra));
    },
  );

  server.experimental.tasks.registerToolTask(
    'stepper_move',
    {
      title: 'Move an axis to an absolute position',
      description:
        'Moves a stepper axis to an ABSOLUTE position in mm (relative moves are not offered, so a retry can never add distance). Returning means the device ACCEPTED the move, not that it arrived: ' +
        'call get_action_status(command_id) until terminal (it reports position_mm and estimated_remaining_seconds while running), or pass wait_ms to get the outcome in this call; ' +
        'clients with MCP tasks can run it as a task (task cancel = stop). axis is the id or the label list_devices shows. ' +
        'The axis must be homed since the device booted (else rejected NOT_HOMED); a target outside travel is rejected INVALID_ARGS before anything moves; a busy axis is rejected BUSY (not queued). ' +
        'The same request_id again returns the same command and never moves twice. ' +
        MOVE_OUTCOME +
        ' ' +
        OUTCOME,
      inputSchema: StepperMoveInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
      execution: { taskSupport: 'optional' },
    },
    taskToolHandler<z.infer<typeof StepperMoveInput>>(core, async ({ device_id, axis, target_mm, speed_mm_s, request_id, wait_ms }, extra) => {
      const args: Record<string, unknown> = { axis: resolveAxis(board(device_id), axis), mm: target_mm };
      if (speed_mm_s !== undefined) args.speed = speed_mm_s;
      return act({ device_id, action: 'stepper.move', args, request_id }, wait_ms, extra);
    }),
  );

  server.experimental.tasks.registerToolTask(
    'stepper_home',
    {
      title: 'Home an axis',
      description:
        'Drives the axis towards its home switch at the board home speed and sets 0 mm where the switch closes. Completed (evidence aux_contact) only when the home switch closed; ' +
        'if the switch never closes within the travel it ends failed NO_FEEDBACK. Returns after the device accepted; call get_action_status for the outcome, or pass wait_ms, or run it as an MCP task. ' +
        OUTCOME,
      inputSchema: StepperHomeInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
      execution: { taskSupport: 'optional' },
    },
    taskToolHandler<z.infer<typeof StepperHomeInput>>(core, async ({ device_id, axis, request_id, wait_ms }, extra) =>
      act({ device_id, action: 'stepper.home', args: { axis: resolveAxis(board(device_id), axis) }, request_id }, wait_ms, extra),
    ),
  );

  server.registerTool(
    'stop_device',
    {
      title: 'Stop all motion on a device',
      description:
        'Stops every moving actuator (stepper axes) on the device at once; it wins over any running move, which then ends cancelled with its measured position. ' +
        'Answers once the device CONFIRMED motion has stopped (state completed, evidence encoder: the encoder no longer changes), or after wait_ms (default 5 s) with the state so far. Relays keep their state. ' +
        'An offline device is rejected DEVICE_OFFLINE: then nothing was stopped by this call.',
      inputSchema: StopDeviceInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async ({ device_id, wait_ms }, extra) => {
      await ready();
      const s = await core.submit({ device_id, action: 'stop', args: {} });
      const stop = followProgress(core, s.command_id, extra);
      try {
        return ok((await core.waitTerminal(s.command_id, wait_ms, extra.signal))!);
      } finally {
        stop();
      }
    },
  );

  server.registerTool(
    'cancel_action',
    {
      title: 'Cancel a command',
      description:
        'Cancels a running motion command (stepper_move, stepper_home) by stopping its axis, and answers once it is terminal (cancelled with the measured position, or whatever it reached first) or after wait_ms (default 5 s). ' +
        'Terminal commands are left unchanged, and relay switching cannot be recalled (it takes milliseconds): then cancel_requested is false and reason says why.',
      inputSchema: CancelInput,
      outputSchema: CancelResultSchema,
      annotations: { destructiveHint: false },
    },
    async ({ command_id, wait_ms }, extra) => {
      await ready();
      const r = await core.commands.cancel(command_id);
      if (!r) return unknownOrPruned(core, command_id);
      const target = r.stop && r.stop.state !== 'rejected' ? (await core.waitTerminal(command_id, wait_ms, extra.signal))! : r.target;
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
      const stop = followProgress(core, command_id, extra);
      try {
        return ok((await core.waitTerminal(command_id, wait_ms, extra.signal))!);
      } finally {
        stop();
      }
    },
  );

  registerOperatorTools(server, core, opts.confirmAtHost);
  registerResources(server, core, cleanups);
  registerPrompts(server, core);
  forwardLogs(server, core, cleanups);
  return server;
}

/** Give the device a moment to acknowledge, so `accepted` reflects the device and not just the host. */
async function untilAcked(core: HostCore, s: CommandStatus): Promise<CommandStatus> {
  return (await core.commands.waitFor(s.command_id, (n) => n.state !== 'sent', ACK_WAIT_MS))!;
}
