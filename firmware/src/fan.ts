// fan.set: write a fan's PWM duty (LEDC, analogWrite at the board's frequency) and, with a
// tachometer, prove the speed: after spin_up_ms the tach's falling edges are counted for measure_ms
// (a counter and two edge times, nothing allocated per pulse by this code). The watch callback is
// made once at boot, but the watch itself is set only for the window: a fan at 4000 rpm makes 133
// falling edges a second, and each one Espruino hands to a JavaScript callback with a new event
// object, so a watch left on costs CPU for as long as the fan runs (docs/pwm.md).
// completed with evidence `tachometer` only when the measured speed is within tolerance_pct of the
// board's curve (at duty 0: below a tenth of its lowest speed); otherwise failed NO_FEEDBACK with
// the measured rpm. A fan without a tachometer ends unverified. Every fan starts stopped at boot.
// The whole module is one closure exporting one object: every name at the bundle's top level makes
// each lookup of the names after it slower on Espruino (its scopes are lists searched in order).
import type { BoardDef, FanDef, FanState, FanTachDef } from '@proofrig/protocol';
import { PWM } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinInput, pinPwmDuty, pinUnwatch, pinWatch } from './hal';
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
  /**
   * Counting: on (1) or off (0), the window [A0, W1] (s, getTime), edges counted in it, first and
   * last edge time (s). Edges are judged by their own time, not by when their callback runs, so a
   * busy main loop (a late timer, queued edges) cannot stretch or shorten the window.
   */
  const ARM: number[] = [];
  const A0: number[] = [];
  const W1: number[] = [];
  const CNT: number[] = [];
  const T1: number[] = [];
  const TL: number[] = [];
  /** The tach's watch id while a window is open, else 0; its options, made once. */
  const WID: number[] = [];
  const WO: WatchOptions = { repeat: true, edge: 'falling' };
  /** Per fan, made once: the tach watch callback, the end of spin-up and the end of the window. */
  const EDGE: ((e: WatchEvent) => void)[] = [];
  const SPUN: (() => void)[] = [];
  const MEAS: (() => void)[] = [];
  let done: Done;

  function idx(id: unknown): number {
    return IDS.indexOf(id as string);
  }

  function edge(i: number, e: WatchEvent): void {
    if (!ARM[i] || e.time < A0[i] || e.time > W1[i]) return;
    if (!CNT[i]) T1[i] = e.time;
    TL[i] = e.time;
    CNT[i]++;
  }

  /** Spin-up is over: count tach edges from now for the window. */
  function spun(i: number): void {
    const t = FN[i].tach as FanTachDef;
    CNT[i] = 0;
    A0[i] = getTime();
    W1[i] = A0[i] + PWM.windowMs(t) / 1000;
    ARM[i] = 1;
    WID[i] = pinWatch(EDGE[i], t.pin, WO);
    // setWatch may leave the pin with its pull-up: the board's pull again (as the e-stop input does).
    if (t.pull !== 'up') pinInput(t.pin, t.pull);
    if (!WID[i]) console.log('proofrig: setWatch refused the tach GPIO' + t.pin + ' of ' + FN[i].id);
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
    const s = W1[i] - TL[i] > (3 * span) / (n - 1) ? W1[i] - T1[i] : span;
    return Math.round(((n - 1) * 60) / (t.pulses_per_rev * s));
  }

  /** Close the window: no more counting, no watch. */
  function unwatch(i: number): void {
    ARM[i] = 0;
    if (WID[i]) pinUnwatch(WID[i]);
    WID[i] = 0;
  }

  function measured(i: number): void {
    TM[i] = undefined;
    unwatch(i);
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

  /** Every fan's PWM at duty 0 (stopped), its tach an input with the board's pull (watched only while measuring). */
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
      ARM[i] = CNT[i] = WID[i] = 0;
      A0[i] = W1[i] = T1[i] = TL[i] = 0;
      const m = maker(i);
      EDGE[i] = m.e;
      SPUN[i] = m.s;
      MEAS[i] = m.m;
      const t = f.tach;
      if (!t) continue;
      pinInput(t.pin, t.pull);
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
      unwatch(i);
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
    act: { n: 'fan.set', chk: PWM.checkFan, busy: busy, run: run, ak: true },
    init: fanInit,
    off: fanAllOff,
    state: fanState,
    n: function () {
      return FN.length;
    },
  };
})();
