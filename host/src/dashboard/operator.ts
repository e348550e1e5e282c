// The dashboard's operator controls: POST /operator runs one MCP tool (switch a relay, home or
// move an axis, stop a device, clear a latched e-stop) for a person who proved the operator token.
//
// Authority: only an `Authorization: Bearer <operator token>` header, which the page holds in
// memory after the person pasted it. The dashboard's cookie never counts here (it is scoped to
// /events and is read-only anyway); the agent token is refused 403 (it drives the rig through
// /mcp, never through the page's controls, and never confirms an operator-only action); a browser
// request from another site is refused (Origin checked by the HTTP layer, Sec-Fetch-Site here,
// and Content-Type application/json, which no form can send). The person clicking in the page
// with the operator token IS the operator confirmation of estop_clear: the call carries the
// operator scope, exactly like `proofrig call --operator`.
//
// The action itself goes through a normal MCP session (in-process, an McpServer made by
// createMcpServer as for every HTTP session) carrying the operator's AuthInfo, so it runs the same
// tool handler as an MCP client's call: the same checks, --expose, request_id dedupe, journal,
// and one terminal state, which the page then shows from /events like any other command.
import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import { createMcpServer, type McpOptions } from '../mcp/tools.js';
import { hasOperatorScope } from '../mcp/operator-tools.js';

export const OPERATOR_PATH = '/operator';
/** The tools the page's controls may call; everything else is MCP's or the shell's. */
export const PAGE_TOOLS = ['relay_set', 'stepper_home', 'stepper_move', 'stop_device', 'estop_clear'] as const;

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

const refuse = (status: number, error: string): Answer => ({ status, body: { error } });

/**
 * Why this request may not use the operator controls, or null. `auth` is what its bearer header
 * proved (undefined: no token, or a host under --no-auth, where no operator token exists).
 */
export function operatorRefusal(req: IncomingMessage, auth: AuthInfo | undefined, authRequired: boolean): Answer | null {
  if (!authRequired)
    return refuse(403, 'this host runs with --no-auth: there is no operator token, so the dashboard has no operator controls; operator-only actions are confirmed at the host\'s own terminal');
  if (!hasOperatorScope(auth))
    return refuse(
      403,
      'the operator controls need the operator token (.proofrig/operator-token beside the journal); the agent token may drive the rig through MCP at /mcp, but never through the dashboard\'s controls and never confirms an operator-only action',
    );
  // A browser says where a request comes from; only the page itself (same origin) may act.
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return refuse(403, `a ${site} request may not use the operator controls: only the dashboard page itself`);
  // Refused before its body is read: a form (or any request a page may send without asking) cannot act.
  if (req.method === 'POST' && !/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return refuse(415, 'send the call as Content-Type: application/json');
  return null;
}

/** GET /operator: whether this token may use the controls (the page asks before it shows them). */
export function operatorWho(): Answer {
  return { status: 200, body: { operator: true, tools: PAGE_TOOLS } };
}

/** POST /operator with {tool, arguments}: the tool's answer, as an MCP client would get it. */
export async function operatorCall(core: HostCore, mcp: McpOptions | undefined, auth: AuthInfo, req: IncomingMessage, body: unknown): Promise<Answer> {
  const b = body as { tool?: unknown; arguments?: unknown } | undefined;
  const tool = b && typeof b.tool === 'string' ? b.tool : '';
  if (!(PAGE_TOOLS as readonly string[]).includes(tool)) return refuse(400, `tool must be one of ${PAGE_TOOLS.join(', ')}`);
  const args = b!.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return refuse(400, 'arguments must be an object');
  const dev = (args as { device_id?: unknown }).device_id;
  core.log.info({ evt: 'dashboard_operator_call', tool, device_id: typeof dev === 'string' ? dev.slice(0, 64) : null, client: auth.clientId }, 'operator control used on the dashboard');
  const result = await callAs(core, mcp, { ...auth, extra: { ...auth.extra, via: 'dashboard' } }, tool, args as Record<string, unknown>);
  return { status: 200, body: { tool, result } };
}

/** One MCP session in this process whose every request carries `auth`, one tools/call, closed. */
async function callAs(core: HostCore, mcp: McpOptions | undefined, auth: AuthInfo, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  // What the HTTP transport does with req.auth: every message the server receives carries it.
  const send = clientSide.send.bind(clientSide);
  clientSide.send = (m, o) => send(m, { ...o, authInfo: auth });
  const server = createMcpServer(core, mcp);
  await server.connect(serverSide);
  const client = new Client({ name: 'proofrig-dashboard', version: '1' });
  try {
    await client.connect(clientSide);
    return (await client.callTool({ name, arguments: args }, undefined, { timeout: 70_000 })) as CallToolResult;
  } finally {
    await client.close().catch(() => {});
    await server.close().catch(() => {});
  }
}
