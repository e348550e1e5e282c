// Whole-device actions: stop (all motion, or one axis) and clearing a latched e-stop.
import { checkEstopClearArgs, checkStopArgs } from '../actions.js';
import { MOTION_SETTLE_MS } from '../constants.js';
import type { ActionKind } from './kind.js';

export const STOP: ActionKind = {
  action: 'stop',
  motion: false,
  target: 'device',
  evidence: ['encoder'],
  check: checkStopArgs,
  timing(_args, board) {
    // The longest deceleration of any axis, then the settle before the encoder is read.
    let ms = MOTION_SETTLE_MS;
    for (const ax of board.steppers ?? []) ms = Math.max(ms, (ax.max_speed_mm_s / ax.accel_mm_s2) * 1000 + MOTION_SETTLE_MS);
    return { worstMs: ms, expectedMs: ms };
  },
  phrase: (a, dev) => (a.axis === undefined ? `stop all motion on ${dev}` : `stop axis ${String(a.axis)} of ${dev}`),
  short: (a) => (a.axis === undefined ? 'stop' : `stop ${String(a.axis)}`),
};

export const ESTOP_CLEAR: ActionKind = {
  action: 'estop.clear',
  motion: false,
  target: 'device',
  evidence: ['pin_readback'],
  check: checkEstopClearArgs,
  timing: () => ({ worstMs: 0, expectedMs: 0 }),
  phrase: (_a, dev) => `clear the e-stop latch of ${dev}`,
  short: () => 'clear e-stop',
};
