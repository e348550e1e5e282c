// Host-side planning of a command: the kind's argument check against the device's board, the
// deadline from the timeout formula with the kind's actuator time, and the expected duration.
import { ACTIONS, commandDeadlineMs, type ActionName, type BoardDef, type DeviceState, type ErrorCode } from '@proofrig/protocol';
import { kindOf } from '@proofrig/protocol/kinds';

export type Plan =
  | { ok: true; action: ActionName; deadlineMs: number; estimatedMs: number; idempotent: boolean; always: boolean }
  | { ok: false; code: ErrorCode; detail: string };

export function planAction(
  board: BoardDef,
  action: string,
  args: Record<string, unknown>,
  rttMaxMs: number,
  state: DeviceState | null = null,
): Plan {
  const kind = kindOf(action);
  if (!kind) return { ok: false, code: 'UNKNOWN_ACTION', detail: `action "${action}" is not one of ${Object.keys(ACTIONS).join(', ')}` };
  const why = kind.check(args, board);
  if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
  const t = kind.timing(args, board, state);
  return {
    ok: true,
    action: kind.action,
    idempotent: ACTIONS[kind.action].idempotent,
    always: ACTIONS[kind.action].always,
    deadlineMs: commandDeadlineMs({ rttMaxMs, deviceProcessingMaxMs: board.device_processing_max_ms, actuatorWorstMs: t.worstMs }),
    estimatedMs: rttMaxMs + t.expectedMs,
  };
}
