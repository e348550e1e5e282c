// MCP progress notifications for one command, while a tool call waits on it.
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/command-view.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The last progress value sent for each open command, across calls: an agent that polls
 * get_action_status with a new progress token each time still sees one increasing series.
 * An entry lives until its command is terminal, whether or not a call is still following it.
 */
const sent = new Map<string, number>();

function remember(core: HostCore, commandId: string, progress: number): void {
  if (!sent.has(commandId)) {
    const forget = (s: CommandStatus) => {
      if (!s.terminal) return;
      sent.delete(commandId);
      core.commands.off('change:' + commandId, forget);
    };
    core.commands.on('change:' + commandId, forget);
  }
  sent.set(commandId, progress);
}

/** How many commands have a remembered progress value (for tests). */
export function rememberedProgress(): number {
  return sent.size;
}

/** Send progress for every change of the command while the call runs, when the request carries a progress token; returns the unsubscribe. */
export function followProgress(core: HostCore, commandId: string, extra: Extra): () => void {
  const token = extra._meta?.progressToken;
  if (token === undefined) return () => {};
  // MCP progress must increase: the device's percent when it reports one, else a counter of state
  // changes; 100 only once the command is terminal (a device at 100 % may still be settling).
  const notify = (s: CommandStatus) => {
    const last = sent.get(commandId) ?? -1;
    const progress = s.terminal ? 100 : Math.min(99, s.progress_pct ?? last + 1);
    if (progress <= last) return;
    if (!s.terminal) remember(core, commandId, progress);
    const where = s.position_mm !== null ? ` at ${s.position_mm} mm` : '';
    const left = s.estimated_remaining_seconds !== null ? `, ~${s.estimated_remaining_seconds.toFixed(1)} s left` : '';
    void extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100, message: `${s.state}${where}${left}` } })
      .catch(() => {});
  };
  // Only changes are notified: a client that polls get_action_status sees one increasing series.
  core.commands.on('change:' + commandId, notify);
  return () => core.commands.off('change:' + commandId, notify);
}
