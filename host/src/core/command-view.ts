// What get_action_status (and every other view of a command) shows of a journaled record, at a given
// time: its lifecycle, evidence, estimates, and the device state it last carried, with that state's age.
import type { ErrorCode, Evidence, LifecycleState } from '@proofrig/protocol';
import type { CommandRecord } from './journal/records.js';
import { isoTime } from './iso.js';
import { isTerminal } from '@proofrig/protocol';

export interface SubmitInput {
  device_id: string;
  action: string;
  args: Record<string, unknown>;
  /** Idempotency key: the same key on the same device returns the same command, never a second execution. */
  request_id?: string;
}

export interface CommandStatus {
  command_id: string;
  request_id: string;
  device_id: string;
  action: string;
  args: Record<string, unknown>;
  state: LifecycleState;
  terminal: boolean;
  accepted: boolean;
  executed: boolean;
  verified: boolean;
  evidence: Evidence | null;
  error_code: ErrorCode | null;
  detail: string | null;
  submitted_at: string;
  terminal_at: string | null;
  elapsed_ms: number;
  deadline_ms: number | null;
  estimated_seconds: number;
  estimated_remaining_seconds: number | null;
  progress_pct: number | null;
  /** Last measured position (mm) of a motion command, from the device's progress or result. */
  position_mm: number | null;
  device_state: CommandRecord['device_state'];
  device_state_observed_at: string | null;
  device_state_age_ms: number | null;
}

export function commandView(c: CommandRecord, now: number): CommandStatus {
  const terminal = isTerminal(c.state);
  const end = c.terminal_at ?? now;
  return {
    command_id: c.command_id,
    request_id: c.request_id,
    device_id: c.device_id,
    action: c.action,
    args: c.args,
    state: c.state,
    terminal,
    accepted: c.accepted,
    executed: c.executed,
    verified: c.verified,
    evidence: c.evidence,
    error_code: c.error_code,
    detail: c.detail,
    submitted_at: isoTime(c.submitted_at),
    terminal_at: c.terminal_at === null ? null : isoTime(c.terminal_at),
    elapsed_ms: end - c.submitted_at,
    deadline_ms: c.deadline_at === null ? null : c.deadline_at - c.submitted_at,
    estimated_seconds: c.estimated_ms / 1000,
    estimated_remaining_seconds: terminal ? null : Math.max(0, c.submitted_at + c.estimated_ms - now) / 1000,
    progress_pct: c.progress,
    position_mm: c.position,
    device_state: c.device_state,
    device_state_observed_at: c.device_state_at === null ? null : isoTime(c.device_state_at),
    device_state_age_ms: c.device_state_at === null ? null : now - c.device_state_at,
  };
}
