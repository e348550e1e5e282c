// The fan kind: fan.set writes a fan's PWM duty and, with a tachometer, reports evidence
// `tachometer` only when the speed measured after spin-up is within tolerance of its curve (pwm.ts).
import { fanWorstMs, PWM, type FanDef } from '../pwm.js';
import type { ActionKind } from './kind.js';

export const FAN_SET: ActionKind = {
  action: 'fan.set',
  motion: false,
  target: 'device',
  evidence: ['tachometer'],
  check: PWM.checkFan,
  timing(args, board) {
    const ms = fanWorstMs(PWM.find(board, args.id as string) as FanDef);
    return { worstMs: ms, expectedMs: ms };
  },
  phrase: (a, dev) => `set fan ${String(a.id)} of ${dev} to ${String(a.duty)} %`,
  short: (a, label) => `fan ${String(a.id)}${label ? ` (${label})` : ''} ${String(a.duty)} %`,
};
