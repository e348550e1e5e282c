// Operator-only tools, refused at dispatch (here, in the handler) unless the call carries the
// operator scope or a person at the host's own terminal confirms it; hiding them from an agent is
// not enough (seed 004: xiaozhi's user-only tools were only left out of tools/list).
//
// Scope comes from the HTTP layer's bearer token: `req.auth = { token, clientId, scopes }`, which the
// SDK hands to handlers as `extra.authInfo`; scopes ['agent'] or ['agent', 'operator']. The xiaozhi
// bridge sets its own ({ clientId: 'xiaozhi', scopes: ['agent'] }). stdio and --no-auth have none.
//
// Operator authority never comes from the MCP client: a confirmation form (elicitation) goes back
// to the caller, and an agent whose client declares form elicitation can answer it itself. So the
// only confirmation is a prompt on the host's own terminal (`serve` in the foreground with an
// interactive terminal; see terminal-confirm.ts), offered to the agent token and to calls without
// auth, never to xiaozhi (a remote third party) or any other scope.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ESTOP_CLEAR } from '@proofrig/protocol/kinds';
import { z } from 'zod';
import type { HostCore } from '../core/host.js';
import { CommandStatusSchema } from './schemas.js';
import { toolResult } from './result.js';

export const OPERATOR_SCOPE = 'operator';
/** The identity the xiaozhi bridge gives every call it carries: an agent that no confirmation can lift. */
export const XIAOZHI_AUTH: AuthInfo = Object.freeze({ token: '', clientId: 'xiaozhi', scopes: ['agent'] }) as AuthInfo;
const ACK_WAIT_MS = 1500;

/** What the host's terminal is asked, and what it answered. */
export interface ConfirmRequest {
  tool: string;
  /** What the call would do, in words. */
  what: string;
  /** What the person must type to confirm (a deliberate act, not one key). */
  deviceId: string;
  /** Who asks (the token's client id, or null without auth). */
  client: string | null;
}
/** Resolves true only when the person at the host's terminal typed the device id; false with why otherwise. */
export type HostConfirm = (q: ConfirmRequest, signal: AbortSignal) => Promise<{ ok: true } | { ok: false; why: string }>;

export function hasOperatorScope(auth: AuthInfo | undefined): boolean {
  return !!auth && Array.isArray(auth.scopes) && auth.scopes.indexOf(OPERATOR_SCOPE) >= 0;
}

/** May the person at the host's terminal be asked to confirm an operator action for this call? */
export function hostConfirmAllowed(auth: AuthInfo | undefined): boolean {
  return !auth || auth.clientId === 'agent';
}

interface Extra {
  authInfo?: AuthInfo;
  requestId: string | number;
  signal: AbortSignal;
}

type Gate = { ok: true; via: 'operator_scope' | 'host_terminal' } | { ok: false; result: CallToolResult };

function refused(message: string): { ok: false; result: CallToolResult } {
  return { ok: false, result: { isError: true, content: [{ type: 'text', text: `OPERATOR_REQUIRED: ${message}` }] } };
}

/**
 * The check every operator tool runs first. `what` says what the call would do, `deviceId` is what
 * the person must type to confirm, `cli` the same call for a shell.
 */
async function operatorGate(confirm: HostConfirm | undefined, extra: Extra, tool: string, what: string, deviceId: string, cli: string): Promise<Gate> {
  if (hasOperatorScope(extra.authInfo)) return { ok: true, via: 'operator_scope' };
  const how = `An operator can run it from a shell on the host with the operator token (.proofrig/operator-token): \`npx proofrig call --operator ${cli}\`.`;
  const base = `${tool} is operator-only (${what}); this call has no operator scope, so nothing was sent to the device.`;
  if (!hostConfirmAllowed(extra.authInfo)) return refused(`${base} Calls of client "${extra.authInfo?.clientId}" are never confirmed on its behalf. ${how}`);
  if (!confirm) return refused(`${base} The host has no interactive terminal where a person could confirm it. ${how}`);
  let answer;
  try {
    answer = await confirm({ tool, what, deviceId, client: extra.authInfo?.clientId ?? null }, extra.signal);
  } catch (e) {
    return refused(`${base} The confirmation at the host's terminal failed (${(e as Error).message}). ${how}`);
  }
  if (!answer.ok) return refused(`${base} The person at the host's terminal did not confirm it (${answer.why}). ${how}`);
  return { ok: true, via: 'host_terminal' };
}

const ok = toolResult;

const deviceId = z.string({ error: 'device_id must be a string' }).min(1, 'device_id must not be empty').max(64);

export function registerOperatorTools(server: McpServer, core: HostCore, confirm?: HostConfirm): void {
  server.registerTool(
    'estop_clear',
    {
      title: 'Clear a latched e-stop (operator only)',
      description:
        'OPERATOR ONLY: refused unless the call carries the operator token\'s scope or the person at the host\'s own terminal confirms it. ' +
        'Clears the e-stop latch of a device whose e-stop input is released again; outputs stay off until commanded. ' +
        'Rejected ESTOP_ACTIVE while the input is still pressed. Answers with the command once terminal (completed: the device read the input released and cleared the latch).',
      inputSchema: z.strictObject({ device_id: deviceId.describe('device id from list_devices') }),
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id }, extra) => {
      const gate = await operatorGate(confirm, extra, 'estop_clear', `clear the latched e-stop of device ${device_id}`, device_id, `estop_clear device_id=${device_id}`);
      if (!gate.ok) return gate.result;
      core.log.info({ evt: 'operator_action', tool: 'estop_clear', device_id, via: gate.via, client: extra.authInfo?.clientId ?? null }, 'operator action');
      const s = await core.submit({ device_id, action: ESTOP_CLEAR.action, args: {} });
      await core.commands.waitFor(s.command_id, (n) => n.state !== 'sent', ACK_WAIT_MS);
      return ok((await core.waitTerminal(s.command_id, ACK_WAIT_MS * 2, extra.signal))!);
    },
  );

  server.registerTool(
    'remove_device',
    {
      title: 'Remove a device (operator only)',
      description:
        'OPERATOR ONLY: refused unless the call carries the operator token\'s scope or the person at the host\'s own terminal confirms it. ' +
        'Forgets a provisioned device and its secret, and disconnects it: it is refused (AUTH_FAILED) until re-provisioned by an upload. Its command history stays in the journal.',
      inputSchema: z.strictObject({ device_id: deviceId.describe('device id from list_devices') }),
      outputSchema: z.object({ device_id: z.string(), removed: z.boolean(), was_online: z.boolean(), reason: z.string().nullable() }),
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id }, extra) => {
      const gate = await operatorGate(confirm, extra, 'remove_device', `forget device ${device_id} and its secret`, device_id, `remove_device device_id=${device_id}`);
      if (!gate.ok) return gate.result;
      core.log.info({ evt: 'operator_action', tool: 'remove_device', device_id, via: gate.via, client: extra.authInfo?.clientId ?? null }, 'operator action');
      const wasOnline = !!core.devices.session(device_id);
      // Refused while the device has open commands: their outcome would have nowhere to go.
      const r = core.removeDevice(device_id);
      return ok({ device_id, removed: r.ok, was_online: wasOnline, reason: r.ok ? null : r.reason });
    },
  );
}
