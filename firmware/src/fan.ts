// fan.set: write a fan's PWM duty (LEDC, analogWrite at the board's frequency) and, with a
// tachometer, prove the speed: after spin_up_ms the tach's falling edges are counted for measure_ms
// by one watch per fan made at boot (a counter and two edge times, nothing allocated per pulse).
// completed with evidence `tachometer` only when the measured speed is within tolerance_pct of the
// board's curve (at duty 0: below a tenth of its lowest speed); otherwise failed NO_FEEDBACK with
// the measured rpm. A fan without a tachometer ends unverified. Every fan starts stopped at boot.
// The whole module is one closure exporting one object: every name at the bundle's top level makes
// each lookup of the names after it slower on Espruino (its scopes are lists searched in order).
import type { BoardDef, FanDef, FanState, FanTachDef } from '@proofrig/protocol';
import { PWM } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinInput, pinPwmDuty, pinWatch } from './hal';
import { upMs } from './clock';

/** What the executor and the interlocks use of the fans. */
export interface Fans {
  act: Action;
  init(b: BoardDef, d: Done): void;
  /** E-stop: every fan to duty 0; a fan.set still measuring ends failed ESTOP_LATCHED. */
  off(): void;
  state(): FanState[];
  /** How many fans the board has (the snapshot lists them only then). */
  n(): number;
}

export const FANS: Fans = (function (): Fans {
  let FN: FanDef[] = [];
  /** Fan ids, indexed like FN (a native indexOf finds one). */
  let IDS: string[] = [];
  /** analogWrite options per fan ({freq}), made once. */
  const FO: { freq: number }[] = [];
  /** Duty commanded (%), last measured rpm (null: none yet) and its device uptime. */
  const DUTY: number[] = [];
  const RPM: (number | null)[] = [];
  const RAT: number[] = [];
  /** Ring slot of the fan.set in progress, -1 when idle; its pending timer. */
  const SLOT: number[] = [];
  const TM: (TimerId | undefined)[] = [];
  /** Counting: on (1) or off (0), since when (s, getTime), edges counted, first and last edge time (s). */
  const ARM: number[] = [];
  const A0: number[] = [];
  const CNT: number[] = [];
  const T1: number[] = [];
  const TL: number[] = [];
  /** Per fan, made once: the tach watch, the end of spin-up and the end of the window. */
  const EDGE: ((e: WatchEvent) => void)[] = [];
  const SPUN: (() => void)[] = [];
  const MEAS: (() => void)[] = [];
  let done: Done;

  function idx(id: unknown): number {
    return IDS.indexOf(id as string);
  }

  function edge(i: number, e: WatchEvent): void {
    if (!ARM[i] || e.time < A0[i]) return;
    if (!CNT[i]) T1[i] = e.time;
    TL[i] = e.time;
    CNT[i]++;
  }

  /** Spin-up is over: count tach edges from now for the window. */
  function spun(i: number): void {
    const t = FN[i].tach as FanTachDef;
    CNT[i] = 0;
    A0[i] = getTime();
    ARM[i] = 1;
    TM[i] = setTimeout(MEAS[i], PWM.windowMs(t));
  }

  /**
   * The speed over the window, rpm: from the first to the last counted edge (not quantised by the
   * window), or over the whole window when the fan went quiet for three mean periods before its end.
   */
  function rpmNow(i: number, t: FanTachDef): number {
    const n = CNT[i];
    if (n < 2 || !(TL[i] > T1[i])) return 0;
    const span = TL[i] - T1[i];
    const end = getTime();
    const s = end - TL[i] > (3 * span) / (n - 1) ? end - T1[i] : span;
    return Math.round(((n - 1) * 60) / (t.pulses_per_rev * s));
  }

  function measured(i: number): void {
    TM[i] = undefined;
    ARM[i] = 0;
    const slot = SLOT[i];
    if (slot < 0) return;
    SLOT[i] = -1;
    const f = FN[i];
    const t = f.tach as FanTachDef;
    const rpm = rpmNow(i, t);
    const d = DUTY[i];
    RPM[i] = rpm;
    RAT[i] = upMs();
    const how = rpm + ' rpm over ' + PWM.windowMs(t) + ' ms (' + CNT[i] + ' tach pulses on GPIO' + t.pin + ') ' + t.spin_up_ms + ' ms after setting ' + d + ' %';
    if (d === 0) {
      const stop = PWM.stoppedRpm(t);
      if (rpm < stop) return done(slot, 'completed', 'tachometer', true, undefined, f.id + ': stopped, ' + how);
      return done(slot, 'failed', 'tachometer', false, 'NO_FEEDBACK', f.id + ': still turning at ' + how + '; stopped means under ' + stop + ' rpm');
    }
    const exp = Math.round(PWM.fanRpm(t, d));
    const tol = (exp * t.tolerance_pct) / 100;
    const ok = rpm >= exp - tol && rpm <= exp + tol;
    const want = 'expected ' + exp + ' rpm +-' + t.tolerance_pct + ' %';
    if (ok) return done(slot, 'completed', 'tachometer', true, undefined, f.id + ': ' + how + ', ' + want);
    done(slot, 'failed', 'tachometer', false, 'NO_FEEDBACK', f.id + ': ' + how + ', ' + want + (rpm === 0 ? ': no tach pulses (stalled, unplugged or no power)' : rpm < exp ? ': too slow (obstructed or worn)' : ': too fast (a noisy tach line, or the curve does not fit this fan)'));
  }

  function maker(i: number) {
    return {
      e: function (e: WatchEvent) {
        edge(i, e);
      },
      s: function () {
        spun(i);
      },
      m: function () {
        measured(i);
      },
    };
  }

  /** Every fan's PWM at duty 0 (stopped), and one tach watch each for the whole boot. */
  function fanInit(b: BoardDef, d: Done): void {
    const all = b.pwm || [];
    FN = [];
    IDS = [];
    done = d;
    for (let k = 0; k < all.length; k++) if (all[k].kind === 'fan') FN.push(all[k] as FanDef);
    for (let i = 0; i < FN.length; i++) {
      const f = FN[i];
      IDS.push(f.id);
      FO[i] = { freq: f.freq_hz };
      pinPwmDuty(f.pin, 0, FO[i]);
      DUTY[i] = 0;
      RPM[i] = null;
      RAT[i] = 0;
      SLOT[i] = -1;
      TM[i] = undefined;
      ARM[i] = CNT[i] = 0;
      A0[i] = T1[i] = TL[i] = 0;
      const m = maker(i);
      EDGE[i] = m.e;
      SPUN[i] = m.s;
      MEAS[i] = m.m;
      const t = f.tach;
      if (!t) continue;
      pinInput(t.pin, t.pull);
      if (!pinWatch(EDGE[i], t.pin, { repeat: true, edge: 'falling' })) console.log('proofrig: setWatch refused the tach GPIO' + t.pin + ' of ' + f.id);
      else if (t.pull !== 'up') pinInput(t.pin, t.pull);
    }
  }

  function busy(p: Record<string, unknown>): string | null {
    const i = idx(p.id);
    return SLOT[i] >= 0 ? FN[i].id + ' is still measuring its speed after the last fan.set; ask again when it has a result' : null;
  }

  function run(slot: number, p: Record<string, unknown>, d: Done): void {
    const i = idx(p.id);
    const f = FN[i];
    const duty = p.duty as number;
    done = d;
    pinPwmDuty(f.pin, duty / 100, FO[i]);
    DUTY[i] = duty;
    if (!f.tach)
      return done(slot, 'unverified', 'none', false, undefined, f.id + ' (GPIO' + f.pin + '): wrote ' + duty + ' % at ' + f.freq_hz + ' Hz; it has no tachometer, so nothing observes its speed and it is not verified');
    SLOT[i] = slot;
    ARM[i] = 0;
    TM[i] = setTimeout(SPUN[i], f.tach.spin_up_ms);
  }


  /** E-stop: every fan to duty 0; a fan.set still measuring ends failed ESTOP_LATCHED. */
  function fanAllOff(): void {
    for (let i = 0; i < FN.length; i++) {
      pinPwmDuty(FN[i].pin, 0, FO[i]);
      DUTY[i] = 0;
      ARM[i] = 0;
      if (TM[i] !== undefined) clearTimeout(TM[i]);
      TM[i] = undefined;
      const slot = SLOT[i];
      if (slot < 0) continue;
      SLOT[i] = -1;
      done(slot, 'failed', 'none', false, 'ESTOP_LATCHED', FN[i].id + ': the e-stop stopped it (duty 0) before its speed was measured');
    }
  }

  /** Every fan's duty and last measured speed, for the state snapshot. */
  function fanState(): FanState[] {
    const o: FanState[] = [];
    for (let i = 0; i < FN.length; i++) o.push({ id: FN[i].id, duty: DUTY[i], rpm: RPM[i], at: RAT[i] });
    return o;
  }

  return {
    act: { n: 'fan.set', chk: PWM.checkFan, busy: busy, run: run },
    init: fanInit,
    off: fanAllOff,
    state: fanState,
    n: function () {
      return FN.length;
    },
  };
})();
