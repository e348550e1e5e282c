// list_commands and the recent-commands resource: journal rows as short summaries.
import type { LifecycleState } from '@proofrig/protocol';
import type { HostCore } from '../core/host.js';
import type { CommandRecord } from '../core/journal/records.js';

export interface CommandFilter {
  device_id?: string;
  state?: LifecycleState[];
  open?: boolean;
  since?: string;
  until?: string;
  limit?: number;
}

export function summary(core: HostCore, c: CommandRecord) {
  const v = core.commands.view(c);
  return {
    command_id: v.command_id,
    request_id: v.request_id,
    device_id: v.device_id,
    action: v.action,
    args: v.args,
    state: v.state,
    terminal: v.terminal,
    verified: v.verified,
    evidence: v.evidence as CommandRecord['evidence'],
    error_code: v.error_code,
    submitted_at: v.submitted_at,
    terminal_at: v.terminal_at,
  };
}

export function listCommands(core: HostCore, f: CommandFilter) {
  const rows = core.journal.recent({
    device_id: f.device_id,
    states: f.state,
    open: f.open,
    since: f.since === undefined ? undefined : Date.parse(f.since),
    until: f.until === undefined ? undefined : Date.parse(f.until),
    limit: f.limit ?? 20,
  });
  return rows.map((c) => summary(core, c));
}
