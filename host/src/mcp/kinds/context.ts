// What a kind's MCP tools get from the server that registers them: the core, the one way to
// submit an action and wait for its acknowledgement, and what --expose hides.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../../core/host.js';
import type { CommandStatus, SubmitInput } from '../../core/command-view.js';
import type { NameScope } from '../names.js';

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface ToolContext {
  server: McpServer;
  core: HostCore;
  /** Submit an action: wait (bounded) for a booting device, answer after the ack, or after the outcome when wait_ms asks for it. */
  act(input: SubmitInput, waitMs: number | undefined, extra: Extra): Promise<CommandStatus>;
  /** Resolves once the simulated rigs this host started are online. */
  ready(): Promise<void>;
  /** Devices and output names MCP clients may target. */
  scope: NameScope;
  /** Is this device hidden from MCP clients (--expose)? */
  hidden(dev: string): boolean;
  hiddenError(dev: string): CallToolResult;
}

export function toolError(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] };
}
