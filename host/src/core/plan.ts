// Host-side knowledge of each action: argument checks against the device's board, the
// deadline from the timeout formula, and the expected duration.
import {
  ACTIONS,
  checkEstopClearArgs,
  checkRelaySetArgs,
  checkStopArgs,
  checkStepperHomeArgs,
  checkStepperMoveArgs,
  commandDeadlineMs,
  findAxis,
  findRelay,
  isActionName,
  HOME_OVERRUN_MM,
  moveDurationS,
  relayWorstMs,
  type ActionName,
  type BoardDef,
  type DeviceState,
  type ErrorCode,
} from '@proofrig/protocol';

export type Plan =
  | { ok: true; action: ActionName; deadlineMs: number; estimatedMs: number; idempotent: boolean; always: boolean }
  | { ok: false; code: ErrorCode; detail: string };

/** After the motion ends the firmware waits this long for the carriage to settle before reading the encoder. */
export const MOTION_SETTLE_MS = 100;

export function planAction(
  board: BoardDef,
  action: string,
  args: Record<string, unknown>,
  rttMaxMs: number,
  state: DeviceState | null = null,
): Plan {
  if (!isActionName(action)) return { ok: false, code: 'UNKNOWN_ACTION', detail: `action "${action}" is not one of ${Object.keys(ACTIONS).join(', ')}` };
  const deadline = (actuatorWorstMs: number) =>
    commandDeadlineMs({ rttMaxMs, deviceProcessingMaxMs: board.device_processing_max_ms, actuatorWorstMs });
  const base = { ok: true as const, action, idempotent: ACTIONS[action].idempotent, always: ACTIONS[action].always };
  switch (action) {
    case 'relay.set': {
      const why = checkRelaySetArgs(args, board);
      if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
      const relay = findRelay(board, args.ch as number)!;
      return { ...base, deadlineMs: deadline(relayWorstMs(relay)), estimatedMs: rttMaxMs + relay.settle_ms };
    }
    case 'stepper.move': {
      const why = checkStepperMoveArgs(args, board);
      if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
      const ax = findAxis(board, args.axis as string)!;
      const known = state?.axes?.find((a) => a.axis === ax.axis);
      // Without a known position, plan for the longest move the travel allows.
      const dist = known ? Math.abs((args.mm as number) - known.pos) : ax.travel.max_mm - ax.travel.min_mm;
      const speed = (args.speed as number | undefined) ?? ax.max_speed_mm_s;
      const moveMs = moveDurationS(ax, dist, speed) * 1000 + MOTION_SETTLE_MS;
      return { ...base, deadlineMs: deadline(moveMs), estimatedMs: rttMaxMs + moveMs };
    }
    case 'stepper.home': {
      const why = checkStepperHomeArgs(args, board);
      if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
      const ax = findAxis(board, args.axis as string)!;
      // Homing runs at home speed until its switch, at most the travel plus HOME_OVERRUN_MM.
      const moveMs = moveDurationS(ax, ax.travel.max_mm - ax.travel.min_mm + HOME_OVERRUN_MM, ax.home_speed_mm_s, false) * 1000 + MOTION_SETTLE_MS;
      return { ...base, deadlineMs: deadline(moveMs), estimatedMs: rttMaxMs + moveMs };
    }
    case 'estop.clear': {
      const why = checkEstopClearArgs(args, board);
      if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
      return { ...base, deadlineMs: deadline(0), estimatedMs: rttMaxMs };
    }
    case 'stop': {
      const why = checkStopArgs(args, board);
      if (why) return { ok: false, code: 'INVALID_ARGS', detail: why };
      let stopMs = MOTION_SETTLE_MS;
      for (const ax of board.steppers ?? []) stopMs = Math.max(stopMs, (ax.max_speed_mm_s / ax.accel_mm_s2) * 1000 + MOTION_SETTLE_MS);
      return { ...base, deadlineMs: deadline(stopMs), estimatedMs: rttMaxMs + stopMs };
    }
  }
}
