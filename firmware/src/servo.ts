// servo.set: write a hobby servo's pulse (LEDC at the board's 50 Hz, the width for the angle
// between pulse_us.min and .max). A hobby servo reports nothing, so the command ends unverified
// with the time the move needs at the board's deg_per_s (the whole range when the angle before was
// unknown), never completed. At boot no servo is driven (no pulses: it stays where it is); the
// e-stop stops the pulses too. One closure exporting one object, as fan.ts (fewer top-level names).
import type { BoardDef, ServoDef, ServoState } from '@proofrig/protocol';
import { PWM } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinPwmDuty, pinWrite } from './hal';
import { upMs } from './clock';

/** What the executor and the interlocks use of the servos. */
export interface Servos {
  act: Action;
  init(b: BoardDef): void;
  /** E-stop: no more pulses (the servo stops driving where it is); its angle is unknown from now. */
  off(): void;
  state(): ServoState[];
  n(): number;
}

export const SERVOS: Servos = (function (): Servos {
  let SV: ServoDef[] = [];
  /** Servo ids, indexed like SV (a native indexOf finds one). */
  let IDS: string[] = [];
  /** analogWrite options per servo ({freq}), made once. */
  const SO: { freq: number }[] = [];
  /** Angle commanded (null: not driven), the time that move needs and when it was commanded. */
  const DEG: (number | null)[] = [];
  const MV: number[] = [];
  const AT: number[] = [];

  function servoInit(b: BoardDef): void {
    const all = b.pwm || [];
    SV = [];
    IDS = [];
    for (let k = 0; k < all.length; k++) if (all[k].kind === 'servo') SV.push(all[k] as ServoDef);
    for (let i = 0; i < SV.length; i++) {
      IDS.push(SV[i].id);
      SO[i] = { freq: SV[i].freq_hz };
      pinWrite(SV[i].pin, 0);
      DEG[i] = null;
      MV[i] = AT[i] = 0;
    }
  }

  function run(slot: number, p: Record<string, unknown>, done: Done): void {
    const i = IDS.indexOf(p.id as string);
    const s = SV[i];
    const deg = p.deg as number;
    const us = PWM.pulseUs(s, deg);
    pinPwmDuty(s.pin, (us * s.freq_hz) / 1e6, SO[i]);
    const from = DEG[i];
    const mv = PWM.moveMs(s, from, deg);
    DEG[i] = deg;
    MV[i] = mv;
    AT[i] = upMs();
    done(slot, 'unverified', 'none', false, undefined,
      s.id + ' (GPIO' + s.pin + '): ' + Math.round(us) + ' us pulses at ' + s.freq_hz + ' Hz for ' + deg + ' deg; the move needs ' + mv + ' ms at ' + s.deg_per_s + ' deg/s ' +
        (from === null ? '(from an unknown angle: the whole range)' : 'from ' + from + ' deg') + '; nothing reports where the servo is, so it is not verified');
  }


  /** E-stop: no more pulses (the servo stops driving where it is); its angle is unknown from now. */
  function servoAllOff(): void {
    for (let i = 0; i < SV.length; i++) {
      pinWrite(SV[i].pin, 0);
      DEG[i] = null;
    }
  }

  /** Every servo's commanded angle, for the state snapshot. */
  function servoState(): ServoState[] {
    const o: ServoState[] = [];
    for (let i = 0; i < SV.length; i++) o.push({ id: SV[i].id, deg: DEG[i], move_ms: MV[i], at: AT[i] });
    return o;
  }

  return {
    act: { n: 'servo.set', chk: PWM.checkServo, busy: function () {
      return null;
    }, run: run },
    init: servoInit,
    off: servoAllOff,
    state: servoState,
    n: function () {
      return SV.length;
    },
  };
})();
