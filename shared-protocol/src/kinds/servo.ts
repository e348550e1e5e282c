// The servo kind: servo.set writes a hobby servo's pulse. Nothing reports where the horn is, so it
// ends `unverified` with the time the move needs, never `completed` (pwm.ts).
import { PWM } from '../pwm.js';
import type { ActionKind } from './kind.js';

export const SERVO_SET: ActionKind = {
  action: 'servo.set',
  motion: false,
  target: 'device',
  evidence: [],
  check: PWM.checkServo,
  // The device answers once the pulse is written; the move itself runs on after that.
  timing: () => ({ worstMs: 0, expectedMs: 0 }),
  phrase: (a, dev) => `turn servo ${String(a.id)} of ${dev} to ${String(a.deg)}°`,
  short: (a, label) => `servo ${String(a.id)}${label ? ` (${label})` : ''} → ${String(a.deg)}°`,
};
