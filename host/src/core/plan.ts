// Host-side knowledge of each action: argument checks against the device's board, the
// deadline from the timeout formula, and the expected duration.
import {
  ACTIONS,
  checkRelaySetArgs,
  commandDeadlineMs,
  findRelay,
  isActionName,
  relayWorstMs,
  type ActionName,
  type BoardDef,
  type ErrorCode,
} from '@proofrig/protocol';

export type Plan =
  | { ok: true; action: ActionName; deadlineMs: number; estimatedMs: number; idempotent: boolean }
  | { ok: false; code: ErrorCode; detail: string };

export function planAction(board: BoardDef, action: string, args: Record<string, unknown>, rttMaxMs: number): Plan {
  if (!isActionName(action)) return { ok: false, code: 'UNKNOWN_ACTION', detail: `action "${action}" is not one of ${Object.keys(ACTIONS).join(', ')}` };
  switch (action) {
    case 'relay.set': {
      const why = checkRelaySetArgs(args, board);
      if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
      const relay = findRelay(board, args.ch as number)!;
      const worst = relayWorstMs(relay);
      return {
        ok: true,
        action,
        idempotent: ACTIONS[action].idempotent,
        deadlineMs: commandDeadlineMs({ rttMaxMs, deviceProcessingMaxMs: board.device_processing_max_ms, actuatorWorstMs: worst }),
        estimatedMs: rttMaxMs + relay.settle_ms,
      };
    }
  }
}
