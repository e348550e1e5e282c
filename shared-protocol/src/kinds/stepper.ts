// The stepper kind: absolute moves checked by the encoder, and homing on the home switch.
import { checkStepperHomeArgs, checkStepperMoveArgs } from '../actions.js';
import { findAxis } from '../board.js';
import { MOTION_SETTLE_MS } from '../constants.js';
import { HOME_OVERRUN_MM, moveDurationS } from '../motion.js';
import type { ActionKind } from './kind.js';

const stopAxis = (a: Record<string, unknown>) => ({ action: 'stop' as const, args: { axis: a.axis } });

export const STEPPER_MOVE: ActionKind = {
  action: 'stepper.move',
  motion: true,
  target: 'axis',
  evidence: ['encoder'],
  check: checkStepperMoveArgs,
  timing(args, board, state) {
    const ax = findAxis(board, args.axis as string)!;
    const known = state?.axes?.find((a) => a.axis === ax.axis);
    // Without a known position, plan for the longest move the travel allows.
    const dist = known ? Math.abs((args.mm as number) - known.pos) : ax.travel.max_mm - ax.travel.min_mm;
    const speed = (args.speed as number | undefined) ?? ax.max_speed_mm_s;
    const ms = moveDurationS(ax, dist, speed) * 1000 + MOTION_SETTLE_MS;
    return { worstMs: ms, expectedMs: ms };
  },
  phrase: (a, dev) => `move axis ${String(a.axis)} of ${dev} to ${String(a.mm)} mm`,
  short: (a, label) => `move ${String(a.axis)}${label ? ` (${label})` : ''} → ${String(a.mm)} mm`,
  cancel: stopAxis,
};

export const STEPPER_HOME: ActionKind = {
  action: 'stepper.home',
  motion: true,
  target: 'axis',
  evidence: ['aux_contact'], // the home switch is a contact
  check: checkStepperHomeArgs,
  timing(args, board) {
    const ax = findAxis(board, args.axis as string)!;
    // Homing runs at home speed until its switch, at most the travel plus HOME_OVERRUN_MM.
    const ms = moveDurationS(ax, ax.travel.max_mm - ax.travel.min_mm + HOME_OVERRUN_MM, ax.home_speed_mm_s, false) * 1000 + MOTION_SETTLE_MS;
    return { worstMs: ms, expectedMs: ms };
  },
  phrase: (a, dev) => `home axis ${String(a.axis)} of ${dev}`,
  short: (a, label) => `home ${String(a.axis)}${label ? ` (${label})` : ''}`,
  cancel: stopAxis,
};
