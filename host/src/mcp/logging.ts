// MCP logging: terminal command outcomes and devices going online/offline reach the client as
// notifications/message, filtered by the level the client set (logging/setLevel), and only after it set one.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { LoggingLevelSchema, SetLevelRequestSchema, type LoggingLevel } from '@modelcontextprotocol/sdk/types.js';

const LEVELS: readonly LoggingLevel[] = LoggingLevelSchema.options;
import type { DeviceEvent, HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/command-view.js';

const OUTCOME_LEVEL: Record<string, LoggingLevel> = {
  completed: 'info',
  unverified: 'notice',
  cancelled: 'notice',
  rejected: 'notice',
  failed: 'warning',
  timeout: 'warning',
};

export function forwardLogs(server: McpServer, core: HostCore, cleanups: (() => void)[]): void {
  // Log notifications go to a session once its client asked for them (logging/setLevel), at that
  // level or above; the spec leaves the default to the server. Sending every outcome of every
  // client to every session by default made each command cost O(sessions): with 100 agents, 100
  // notifications per command.
  let min: number | undefined;
  server.server.setRequestHandler(SetLevelRequestSchema, async (req) => {
    if (min === undefined) {
      core.commands.on('change', onCommand);
      core.events.on('device', onDevice);
    }
    min = LEVELS.indexOf(req.params.level);
    return {};
  });
  const send = (level: LoggingLevel, data: Record<string, unknown>) => {
    if (min === undefined || LEVELS.indexOf(level) < min || !server.isConnected()) return;
    void server.server.notification({ method: 'notifications/message', params: { level, logger: 'proofrig', data } }).catch(() => {});
  };
  const onCommand = (s: CommandStatus) => {
    if (!s.terminal) return;
    send(OUTCOME_LEVEL[s.state] ?? 'info', {
      event: 'command_terminal',
      message: `${s.command_id} ${s.action} on ${s.device_id}: ${s.state}${s.error_code ? ' ' + s.error_code : ''}${s.evidence ? ' (evidence ' + s.evidence + ')' : ''}`,
      command_id: s.command_id,
      device_id: s.device_id,
      action: s.action,
      state: s.state,
      verified: s.verified,
      evidence: s.evidence,
      error_code: s.error_code,
      detail: s.detail,
    });
  };
  const onDevice = (e: DeviceEvent) =>
    send(e.online ? 'info' : 'warning', {
      event: e.online ? 'device_online' : 'device_offline',
      message: `device ${e.device_id} ${e.online ? 'online' : 'offline' + (e.reason ? ': ' + e.reason : '')}`,
      device_id: e.device_id,
      reason: e.reason,
    });
  cleanups.push(() => {
    core.commands.off('change', onCommand);
    core.events.off('device', onDevice);
  });
}
