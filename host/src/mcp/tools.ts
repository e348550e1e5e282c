// The MCP tools. Each returns structuredContent (validated by its outputSchema) and the same
// JSON as text for clients that read only text. Business outcomes (rejected, failed, timeout)
// are fields of a normal result; isError is only for a call the tool could not serve.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import type { CommandStatus, SubmitInput } from '../core/command-view.js';
import { VERSION } from '../version.js';
import { followProgress } from './progress.js';
import type { NameScope } from './names.js';
import { KIND_TOOLS, type ToolContext } from './kinds/index.js';
import { toolError, type Extra } from './kinds/context.js';
import { deviceViews, registerResources, visibleIds } from './resources.js';
import { Exposure } from './exposure.js';
import { registerPrompts } from './prompts.js';
import { forwardLogs } from './logging.js';
import { JournalTaskStore, TASK_CAPABILITIES } from './tasks.js';
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
} from './schemas.js';

export const SERVER_INFO = { name: 'proofrig', version: VERSION };

export interface McpOptions {
  /** Resolves once the simulated rigs this host started are online (or their bounded boot wait passed); tools answer after it. */
  ready?: Promise<unknown>;
  /** How long an action waits for a provisioned device that is booting or reconnecting before DEVICE_OFFLINE (default 5000). */
  bootWaitMs?: number;
  /** Asks the person at the host's own terminal to confirm an operator-only call (absent: nobody can). */
  confirmAtHost?: HostConfirm;
  /** Which devices and outputs MCP clients see and act on (--expose); default all. */
  exposure?: Exposure;
}

/** How long an action tool waits for the device's acknowledgement (or, for an action that sends none, its result) before answering. */
const ACK_WAIT_MS = 1500;
/** How long an action waits for a booting or reconnecting device before it is rejected DEVICE_OFFLINE. */
const BOOT_WAIT_MS = 5000;

const ok = toolResult;


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

// The outcome semantics once, in the server's instructions; each tool's description says only
// what is its own (descriptions are read into small contexts such as xiaozhi's).
const OUTCOME =
  'Outcome semantics: completed = executed AND confirmed by evidence (aux_contact: a feedback contact followed; pin_readback: only the MCU pin was read back; load_current: the load drew its current; encoder; home_switch); ' +
  'unverified = executed on an output nothing observes (not a success claim); failed = tried and the evidence contradicts, or the device rebooted (see error_code); ' +
  'rejected = refused before anything moved; timeout = no evidence by the deadline even after asking the device: outcome UNKNOWN, not failed.';

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
  const exposure = opts.exposure ?? Exposure.all();
  const scope: NameScope = { ids: () => core.devices.ids(), board: (id) => core.devices.board(id), exposure };
  /** Hidden from MCP clients by --expose (a device this host does not know is not hidden: the core answers for it). */
  const hidden = (dev: string) => !exposure.device(dev, core.devices.board(dev)) && core.devices.board(dev) !== undefined;
  const hiddenError = (dev: string) => toolError('DEVICE_OFFLINE', `no device "${dev}" is exposed to MCP clients on this host`);
  /** A command of a device hidden from MCP clients is answered as unknown. */
  const hiddenCommand = (id: string) => {
    const s = core.status(id);
    return !!s && hidden(s.device_id);
  };

  server.registerTool(
    'list_devices',
    {
      title: 'List devices',
      description: 'Every device: its output names first (action tools take a unique name alone), area, online/offline, and the cached state with its age. Nothing is sent to devices.',
      inputSchema: ListDevicesInput,
      outputSchema: DeviceListSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async () => {
      await ready();
      return ok({ devices: deviceViews(core, undefined, exposure) });
    },
  );

  server.registerTool(
    'list_commands',
    {
      title: 'List commands',
      description: 'Recent commands from the journal, newest first, filtered by device, state, open and time: finds a lost command_id.',
      inputSchema: ListCommandsInput,
      outputSchema: CommandListSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async (q) => ok({ commands: listCommands(core, q).filter((c) => !hidden(c.device_id)) }),
  );

  server.registerTool(
    'get_device_status',
    {
      title: 'Device status',
      description: 'One device. refresh=true asks the device now (source "device"; the cache with refresh_error when it cannot answer); else the cached state and state_age_ms.',
      inputSchema: DeviceStatusInput,
      outputSchema: DeviceStatusSchema,
      annotations: { readOnlyHint: true },
    },
    async ({ device_id, refresh }, extra) => {
      await ready();
      if (hidden(device_id)) return hiddenError(device_id);
      if (refresh && core.booting(device_id)) await core.waitOnline(device_id, bootWaitMs, extra.signal);
      const s = await core.deviceStatus(device_id, refresh);
      if (!s) return toolError('DEVICE_OFFLINE', `no device "${device_id}" is provisioned; known devices: ${visibleIds(core, exposure).join(', ') || 'none'}`);
      return ok({ ...s, ...deviceViews(core, device_id, exposure)[0] });
    },
  );

  server.registerTool(
    'cancel_action',
    {
      title: 'Cancel a command',
      description:
        'Cancels a running move or home by stopping its axis; answers once it ended (cancelled, with its position) or after wait_ms. Relay commands and ended ones are left alone (reason says why).',
      inputSchema: CancelInput,
      outputSchema: CancelResultSchema,
      annotations: { destructiveHint: false },
    },
    async ({ command_id, wait_ms }, extra) => {
      await ready();
      if (hiddenCommand(command_id)) return toolError('UNKNOWN_COMMAND', `no command "${command_id}" in the journal`);
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
        'A command\'s state from the journal (survives host restarts). Returns as soon as it is terminal, or after wait_ms (default 3000) with terminal false: then call again. Act on state and verified.',
      inputSchema: ActionStatusInput,
      outputSchema: CommandStatusSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ command_id, wait_ms }, extra) => {
      if (hiddenCommand(command_id)) return toolError('UNKNOWN_COMMAND', `no command "${command_id}" in the journal`);
      if (!core.status(command_id)) return unknownOrPruned(core, command_id);
      const stop = followProgress(core, command_id, extra);
      try {
        return ok((await core.waitTerminal(command_id, wait_ms, extra.signal))!);
      } finally {
        stop();
      }
    },
  );

  const ctx: ToolContext = { server, core, act, ready, scope, hidden, hiddenError };
  for (const register of KIND_TOOLS) register(ctx);
  registerOperatorTools(server, core, opts.confirmAtHost);
  registerResources(server, core, cleanups, exposure);
  registerPrompts(server, core);
  forwardLogs(server, core, cleanups);
  return server;
}

/**
 * Give the device a moment to acknowledge, so `accepted` reflects the device and not just the host. An
 * action that ends within its settle time (a relay, a sensor read, a servo) sends no ack: its first word
 * is its result, so the answer is then already terminal.
 */
async function untilAcked(core: HostCore, s: CommandStatus): Promise<CommandStatus> {
  return (await core.commands.waitFor(s.command_id, (n) => n.state !== 'sent', ACK_WAIT_MS))!;
}
