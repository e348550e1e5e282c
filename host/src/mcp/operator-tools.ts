// Operator-only tools, refused at dispatch (here, in the handler) unless the call carries the
// operator scope or the person at the client confirms it; hiding them from an agent is not enough
// (seed 004: xiaozhi's user-only tools were only left out of tools/list).
//
// Scope comes from the HTTP layer's bearer token: `req.auth = { token, clientId, scopes }`, which the
// SDK hands to handlers as `extra.authInfo`; scopes ['agent'] or ['agent', 'operator']. stdio has none.
//
// Elicitation goes back to the same client, so it is a confirmation by whoever answers that client's
// forms, not proof of an operator. It is offered only where a person is presumed at the client:
// requests with no auth (stdio: the desktop client the person launched) or with the `agent` scope,
// and only when the client declared form elicitation. Any other scope never gets it.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { HostCore } from '../core/host.js';
import { CommandStatusSchema } from './schemas.js';

export const OPERATOR_SCOPE = 'operator';
/** How long the person at the client has to answer a confirmation. */
const CONFIRM_TIMEOUT_MS = 120000;
const ACK_WAIT_MS = 1500;

export function hasOperatorScope(auth: AuthInfo | undefined): boolean {
  return !!auth && Array.isArray(auth.scopes) && auth.scopes.indexOf(OPERATOR_SCOPE) >= 0;
}

/** May a person at the client confirm an operator action for this request (see the file comment)? */
export function humanConfirmAllowed(auth: AuthInfo | undefined): boolean {
  return !auth || (Array.isArray(auth.scopes) && auth.scopes.indexOf('agent') >= 0);
}

interface Extra {
  authInfo?: AuthInfo;
  requestId: string | number;
  signal: AbortSignal;
}

type Gate = { ok: true; via: 'operator_scope' | 'client_confirmation' } | { ok: false; result: CallToolResult };

function refused(message: string): { ok: false; result: CallToolResult } {
  return { ok: false, result: { isError: true, content: [{ type: 'text', text: `OPERATOR_REQUIRED: ${message}` }] } };
}

/**
 * The check every operator tool runs first. `what` says what the call would do, `deviceId` is what
 * the person must type to confirm (a deliberate act, not one click), `cli` the same call for a shell.
 */
async function operatorGate(server: McpServer, extra: Extra, tool: string, what: string, deviceId: string, cli: string): Promise<Gate> {
  if (hasOperatorScope(extra.authInfo)) return { ok: true, via: 'operator_scope' };
  const how = `An operator can run it from a shell on the host: \`npx proofrig call --operator ${cli}\`.`;
  const base = `${tool} is operator-only (${what}); this call has no operator scope, so nothing was sent to the device.`;
  if (!humanConfirmAllowed(extra.authInfo)) return refused(`${base} Its scope does not allow a confirmation at the client. ${how}`);
  if (!server.server.getClientCapabilities()?.elicitation?.form)
    return refused(`${base} The client offers no confirmation form (MCP elicitation). ${how}`);
  let answer;
  try {
    answer = await server.server.elicitInput(
      {
        mode: 'form',
        message: `Operator confirmation: ${what}. This is operator-only; an AI agent must not do it alone. To confirm, type the device id "${deviceId}".`,
        requestedSchema: {
          type: 'object',
          properties: { device_id: { type: 'string', title: 'Device id', description: `type ${deviceId} to confirm` } },
          required: ['device_id'],
        },
      },
      { relatedRequestId: extra.requestId, timeout: CONFIRM_TIMEOUT_MS, signal: extra.signal },
    );
  } catch (e) {
    return refused(`${base} The confirmation at the client failed (${(e as Error).message}). ${how}`);
  }
  if (answer.action !== 'accept') return refused(`${base} The person at the client answered "${answer.action}". ${how}`);
  if (answer.content?.device_id !== deviceId)
    return refused(`${base} The confirmation did not name device "${deviceId}". ${how}`);
  return { ok: true, via: 'client_confirmation' };
}

function ok(data: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data, null, 2) }], structuredContent: data as Record<string, unknown> };
}

const deviceId = z.string({ error: 'device_id must be a string' }).min(1, 'device_id must not be empty').max(64);

export function registerOperatorTools(server: McpServer, core: HostCore): void {
  server.registerTool(
    'estop_clear',
    {
      title: 'Clear a latched e-stop (operator only)',
      description:
        'OPERATOR ONLY: refused unless the call carries the operator scope or the person at the client confirms it (the client must support elicitation). ' +
        'Clears the e-stop latch of a device whose e-stop input is released again; outputs stay off until commanded. ' +
        'Rejected ESTOP_ACTIVE while the input is still pressed. Answers with the command once terminal (completed: the device read the input released and cleared the latch).',
      inputSchema: z.strictObject({ device_id: deviceId.describe('device id from list_devices') }),
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id }, extra) => {
      const gate = await operatorGate(server, extra, 'estop_clear', `clear the latched e-stop of device ${device_id}`, device_id, `estop_clear device_id=${device_id}`);
      if (!gate.ok) return gate.result;
      core.log.info({ evt: 'operator_action', tool: 'estop_clear', device_id, via: gate.via, client: extra.authInfo?.clientId ?? null }, 'operator action');
      const s = await core.submit({ device_id, action: 'estop.clear', args: {} });
      await core.commands.waitFor(s.command_id, (n) => n.state !== 'sent', ACK_WAIT_MS);
      return ok((await core.waitTerminal(s.command_id, ACK_WAIT_MS * 2, extra.signal))!);
    },
  );

  server.registerTool(
    'remove_device',
    {
      title: 'Remove a device (operator only)',
      description:
        'OPERATOR ONLY: refused unless the call carries the operator scope or the person at the client confirms it. ' +
        'Forgets a provisioned device and its secret, and disconnects it: it is refused (AUTH_FAILED) until re-provisioned by an upload. Its command history stays in the journal.',
      inputSchema: z.strictObject({ device_id: deviceId.describe('device id from list_devices') }),
      outputSchema: z.object({ device_id: z.string(), removed: z.boolean(), was_online: z.boolean(), reason: z.string().nullable() }),
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async ({ device_id }, extra) => {
      const gate = await operatorGate(server, extra, 'remove_device', `forget device ${device_id} and its secret`, device_id, `remove_device device_id=${device_id}`);
      if (!gate.ok) return gate.result;
      core.log.info({ evt: 'operator_action', tool: 'remove_device', device_id, via: gate.via, client: extra.authInfo?.clientId ?? null }, 'operator action');
      const wasOnline = !!core.devices.session(device_id);
      // Refused while the device has open commands: their outcome would have nowhere to go.
      const r = core.removeDevice(device_id);
      return ok({ device_id, removed: r.ok, was_online: wasOnline, reason: r.ok ? null : r.reason });
    },
  );
}
