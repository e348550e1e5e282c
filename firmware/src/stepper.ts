// stepper.move, stepper.home and stop: step/dir axes whose quadrature encoder is the truth.
// Steps come from hardware PWM retuned by a 20 ms profile tick; the encoder, the driver FAULT and
// the home/limit switches are pin watches made once at boot. A move ends only on evidence: the
// encoder within tolerance (completed), or FAULT, a limit switch, an encoder that never counted or
// one that counted short (failed). Per-axis state lives in parallel arrays indexed like
// board.steppers; every callback is made at init, none per command, edge or tick.
import type { AxisState, BoardDef, ErrorCode, StepperDef, SwitchDef } from '@proofrig/protocol';
import { checkStepperHomeArgs, checkStepperMoveArgs, checkStopArgs, HOME_OVERRUN_MM, MIN_STEP_HZ, MOTION_SETTLE_MS, softLimits, STEP_TICK_MS, stepHz } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinInput, pinOutput, pinPwm, pinRead, pinWatch, pinWrite } from './hal';

/** Wait after the last step before the encoder is read for the verdict, and a stop's still-check. */
export const SETTLE_MS = MOTION_SETTLE_MS;
/** Profile tick: retunes the step rate and integrates the steps issued. */
export const TICK_MS = STEP_TICK_MS;
/** After a stop: when the encoder counts are snapshotted (queued edges drained, rotor settled). */
export const STOP_SNAP_MS = 20;
/** Shortest gap between two progress frames of one command. */
export const PROG_MS = 250;
/** Slowest step rate while moving, so a move always finishes (the protocol refuses speeds below it). */
export const MIN_HZ = MIN_STEP_HZ;

/**
 * Steps (in mm) without a single encoder count that mean the encoder, not the carriage, stopped: the
 * axis's tolerance, as the count then lags the carriage by that much and a later move would
 * "complete" outside it (chaos seeds 617 and 624: 0.94 and 0.4 mm dead, below the 1 mm this was).
 * Never under two count spacings, which a working encoder can leave between counts.
 */
function encGap(s: StepperDef): number {
  return Math.max(s.tolerance_mm, 2 / s.encoder.counts_per_mm);
}
const IDLE = 0;
const MOVE = 1;
const HOME = 2;
/** Steps are done; the encoder verdict is due after SETTLE_MS. */
const VERDICT_DUE = 3;
/** Stopped by request (CANCEL: a move, CANCEL + 1: homing); the cancelled result is sent at STOP_SNAP_MS. */
const CANCEL = 4;
let AX: StepperDef[] = [];
let done: Done;
let prog: (slot: number, pct: number, pos: number) => void;
/** Ring slot of the move/home running on the axis, -1 when none. */
const SLOT: number[] = [];
const MODE: number[] = [];
const HOMED: boolean[] = [];
/** Encoder count (x2 decoding); written by the encoder watch, so a typed array: no JsVar per edge. */
let CNT = new Int32Array(0);
/** Encoder count when the command started. */
const C0: number[] = [];
/** +1 towards +mm, -1 towards -mm. */
const DIR: number[] = [];
/** Steps to issue (move), or the most steps homing may issue. */
const stepsToIssue: number[] = [];
/** Steps issued so far: step rate × elapsed time, integrated at every tick and at the stop. */
const stepsIssued: number[] = [];
/** Step rate running now, Hz (0 when the step output is off). */
const HZ: number[] = [];
/** Start, last integration and last progress frame, getTime() seconds. */
const T0: number[] = [];
const integratedAt: number[] = [];
const TP: number[] = [];
/** Cruise speed mm/s. */
const V: number[] = [];
/** Target mm (travel.min_mm when homing). */
const TGT: number[] = [];
/** Commanded position when stepsIssued was last zeroed, mm: cmd = cmdOrigin + DIR × stepsIssued / steps_per_mm. */
const cmdOrigin: number[] = [];
/** Encoder count at the last tick, and stepsIssued at the last tick that saw the count change. */
const countAtTick: number[] = [];
const stepsAtLastCount: number[] = [];
/** The encoder came back after this move's steps ran on without a single count for a while (encGap). */
const BACK: boolean[] = [];
/**
 * The longest time between two encoder edges at the step rate running now before the encoder counts
 * as having stopped (encGap's steps at HZ; 1e9 while no steps run). Judged per edge from the edges'
 * own times, not at the tick: a tick that runs late (the JavaScript busy with a frame) runs before
 * the edges queued meanwhile, and by tick sampling the encoder would look silent for that long.
 */
const edgeGapS: number[] = [];
/**
 * When the steps still to issue at the rate running now are all issued, getTime() seconds (Infinity while
 * no steps run): the span of steps the last tick licensed. The tick that follows normally comes
 * first; an encoder edge stamped after it means that tick is late (a CPU starved of time), and the
 * edge runs the tick itself. So a late tick makes the move end late by the edges' lag, never lets the
 * hardware step train run on past the target until the timer comes (to the hard stop if it never does).
 */
const dueAt: number[] = [];
/** For the tick, set at the start: GPIO and active level of FAULT and of the switch ahead (-1: none), the soft limits ± tolerance and counts per mm. */
const faultPin: number[] = [];
const faultLv: number[] = [];
const aheadPin: number[] = [];
const aheadLv: number[] = [];
const outMax: number[] = [];
const outMin: number[] = [];
const cpmm: number[] = [];
const IV: (TimerId | undefined)[] = [];
/** analogWrite options, one object per axis, retuned in place. */
const PO: { freq: number }[] = [];
const TICK: (() => void)[] = [];
/** Each axis's verdict, run SETTLE_MS after its steps are done (made once at init). */
const verdictFns: (() => void)[] = [];

/** Stops whose still-check (SETTLE_MS after the stop) is pending: their slots and axis (-1 = all); one shared window. */
const stopSlots: number[] = [];
const stopAxes: number[] = [];
/** Encoder counts when the window (re)started, and which axes a pending stop covers. */
const stopCounts: number[] = [];
const stopCovers: boolean[] = [];
let swT: TimerId | undefined;

function log(s: string): void { console.log('proofrig stepper: ' + s); }

function idx(axis: unknown): number {
  for (let i = 0; i < AX.length; i++) if (AX[i].axis === axis) return i;
  return -1;
}

function closed(sw: SwitchDef | undefined): boolean {
  return !!sw && pinRead(sw.pin) === (sw.active_low ? 0 : 1);
}

/** Encoder position, mm. */
function pos(i: number): number {
  return CNT[i] / AX[i].encoder.counts_per_mm;
}

function r2(x: number): number { return Math.round(x * 100) / 100; }

function f2(x: number): string {
  return r2(x).toFixed(2);
}

function enable(i: number, on: boolean): void {
  const d = AX[i].driver;
  pinWrite(d.enable_pin, on === d.enable_active_low ? 0 : 1);
}

function setHz(i: number, hz: number): void {
  HZ[i] = hz;
  edgeGapS[i] = (encGap(AX[i]) * AX[i].steps_per_mm) / hz;
  PO[i].freq = hz;
  pinPwm(AX[i].driver.step_pin, PO[i]);
}

/** Step output off at once (first, before any bookkeeping), steps integrated, tick stopped. */
function halt(i: number): void {
  pinWrite(AX[i].driver.step_pin, 0);
  const t = getTime();
  if (HZ[i]) stepsIssued[i] += HZ[i] * (t - integratedAt[i]);
  integratedAt[i] = t;
  HZ[i] = 0;
  edgeGapS[i] = 1e9;
  dueAt[i] = Infinity;
  if (IV[i] !== undefined) clearInterval(IV[i]);
  IV[i] = undefined;
}

/**
 * Report the command on axis i and free the axis. An encoder that stopped counting while the steps
 * ran on (encGap without a count) loses the position: everything the carriage travelled meanwhile
 * is missing from the count, and later moves would "complete" by it at the wrong place (chaos seeds
 * 59 and 61). Unless the move ended in a stall (steps against a stop count nothing either) and the
 * encoder never came back, a homed axis is homed no more (NOT_HOMED until stepper.home) and the
 * result says so. Missed steps still count (the encoder is right) and keep the axis homed.
 */
function end(i: number, st: 'completed' | 'failed' | 'cancelled', ev: 'encoder' | 'aux_contact', ver: boolean, code: ErrorCode | undefined, msg: string): void {
  const slot = SLOT[i];
  const m = MODE[i];
  SLOT[i] = -1;
  MODE[i] = IDLE;
  if (HOMED[i] && st !== 'completed' && m !== IDLE) {
    const s = AX[i];
    counted(i);
    const g = encGap(s);
    const gap = stepsIssued[i] - stepsAtLastCount[i] >= g * s.steps_per_mm && code !== 'MOTOR_STALL';
    if (BACK[i] || gap) {
      HOMED[i] = false;
      if (code !== 'NO_FEEDBACK') msg += '; the encoder stopped counting for ' + g + ' mm of steps or more: position unknown, home the axis before moving it again';
    }
  }
  done(slot, st, ev, ver, code, msg);
}

function doing(i: number): string {
  return MODE[i] === HOME ? 'homing' : 'moving to ' + TGT[i] + ' mm';
}

/** The end of a move: the encoder decides. */
function verdict(i: number): void {
  const s = AX[i];
  const p = pos(i);
  const err = Math.abs(p - TGT[i]);
  const n = CNT[i] - C0[i];
  if (err <= s.tolerance_mm + 1e-9)
    return end(i, 'completed', 'encoder', true, undefined, s.axis + ' at ' + f2(p) + ' mm (target ' + TGT[i] + ', tolerance ' + s.tolerance_mm + ')');
  if (n > -2 && n < 2 && stepsIssued[i] >= s.steps_per_mm) {
    return end(i, 'failed', 'encoder', false, 'NO_FEEDBACK',
      s.axis + ': encoder counted ' + n + ' while ' + Math.round(stepsIssued[i]) + ' steps (' + r2(stepsIssued[i] / s.steps_per_mm) +
      ' mm) were issued; check the encoder wiring; position unknown');
  }
  end(i, 'failed', 'encoder', false, 'POSITION_ERROR',
    s.axis + ' at ' + f2(p) + ' mm, target ' + TGT[i] + ' mm: off by ' + f2(err) + ' mm (tolerance ' + s.tolerance_mm + ')');
}

function awaitVerdict(i: number): void {
  halt(i);
  MODE[i] = VERDICT_DUE;
  setTimeout(verdictFns[i], SETTLE_MS);
}

/** Driver FAULT asserted: during motion the command fails MOTOR_STALL; the driver is disabled. */
function fault(i: number): void {
  const m = MODE[i];
  if (m === MOVE || m === HOME) halt(i);
  enable(i, false);
  if (m !== MOVE && m !== HOME) return;
  const s = AX[i];
  end(i, 'failed', 'encoder', false, 'MOTOR_STALL',
    s.axis + ': driver FAULT at ' + f2(pos(i)) + ' mm while ' + doing(i) +
    '; motion stopped and driver disabled. Look for an obstruction, then home before moving again.');
}

function homed(i: number, msg: string): void {
  const s = AX[i];
  CNT[i] = Math.round(s.travel.min_mm * s.encoder.counts_per_mm);
  cmdOrigin[i] = s.travel.min_mm;
  stepsIssued[i] = 0;
  HOMED[i] = true;
  end(i, 'completed', 'aux_contact', true, undefined, s.axis + ' homed: switch on GPIO' + s.home.pin + ' ' + msg);
}

/** A travel switch closed (max: the limit_max switch, else home). */
function limit(i: number, max: boolean): void {
  const s = AX[i];
  const m = MODE[i];
  if (m === HOME) {
    if (max) return;
    halt(i);
    return homed(i, 'closed');
  }
  if (m !== MOVE || (DIR[i] > 0) !== max) return;
  halt(i);
  // A target at the end of travel meets its switch there: within tolerance, the encoder decides.
  if (Math.abs(pos(i) - TGT[i]) <= s.tolerance_mm) return awaitVerdict(i);
  hit(i, max, 'closed', 'motion stopped');
}

function hit(i: number, max: boolean, was: string, did: string): void {
  const s = AX[i];
  end(i, 'failed', 'encoder', false, 'LIMIT_HIT',
    s.axis + ': ' + (max ? 'max limit' : 'home') + ' switch on GPIO' + (max ? (s.limit_max as SwitchDef) : s.home).pin + ' ' + was + ' at ' +
    f2(pos(i)) + ' mm, target ' + TGT[i] + ' mm; ' + did);
}

/**
 * At a tick (and at the end): the steps issued when the encoder was last seen counting, for end()'s
 * "silent at the end" check. A gap in the middle of the motion is judged per edge (edgeGapS).
 */
function counted(i: number): void {
  if (CNT[i] !== countAtTick[i]) {
    countAtTick[i] = CNT[i];
    stepsAtLastCount[i] = stepsIssued[i];
  }
}

/**
 * The profile tick, every TICK_MS while steps run: 50 a second, so its common path is short (Espruino
 * lexes a function's whole text at every call): the rare endings are functions of their own.
 */
function tick(i: number): void {
  const t = getTime();
  stepsIssued[i] += HZ[i] * (t - integratedAt[i]);
  integratedAt[i] = t;
  counted(i);
  if (tickStops(i)) return;
  const rem = stepsToIssue[i] - stepsIssued[i];
  if (rem < 0.5) return tickEnd(i);
  // The shared profile (protocol motion.ts): the host plans the deadline on the same ticks.
  const hz = stepHz(AX[i], V[i], t - T0[i], rem, MODE[i] === MOVE);
  if (hz !== HZ[i]) setHz(i, hz);
  dueAt[i] = t + rem / hz;
  if (t - TP[i] >= PROG_MS / 1000) progress(i, t);
}

/** At a tick: FAULT, the switch ahead, or the soft limits left end the command (true). */
function tickStops(i: number): boolean {
  // The watches act at the edge; this catches an edge Espruino could not watch or dropped. Pins and
  // levels as closed() reads them, looked up once at the start (see sw()).
  if ((digitalRead(faultPin[i]) ? 1 : 0) === faultLv[i]) {
    fault(i);
    return true;
  }
  if (aheadPin[i] >= 0 && (digitalRead(aheadPin[i]) ? 1 : 0) === aheadLv[i]) {
    limit(i, MODE[i] !== HOME && DIR[i] > 0);
    return true;
  }
  if (MODE[i] !== MOVE) return false;
  // outside(), from the bounds computed at the start.
  const p = CNT[i] / cpmm[i];
  if (DIR[i] > 0 ? p <= outMax[i] : p >= outMin[i]) return false;
  const s = AX[i];
  halt(i);
  const lim = softLimits(s);
  end(i, 'failed', 'encoder', false, 'LIMIT_HIT',
    s.axis + ': encoder at ' + f2(pos(i)) + ' mm left the soft limits ' + lim.min_mm + '..' + lim.max_mm + ' mm while moving to ' + TGT[i] + ' mm; motion stopped');
  return true;
}

/** Every step is issued: a move awaits its verdict; homing that never met its switch fails. */
function tickEnd(i: number): void {
  if (MODE[i] === MOVE) return awaitVerdict(i);
  const s = AX[i];
  halt(i);
  end(i, 'failed', 'aux_contact', false, 'NO_FEEDBACK',
    s.axis + ': home switch on GPIO' + s.home.pin + ' never closed within ' + r2(stepsToIssue[i] / s.steps_per_mm) + ' mm (encoder moved ' +
    f2(pos(i) - cmdOrigin[i]) + ' mm); check the switch wiring');
}

function progress(i: number, t: number): void {
  TP[i] = t;
  const span = TGT[i] - cmdOrigin[i];
  const pct = MODE[i] === MOVE && span ? Math.round((100 * (pos(i) - cmdOrigin[i])) / span) : 0;
  prog(SLOT[i], Math.max(0, Math.min(100, pct)), r2(pos(i)));
}

/** Enable, set DIR, start the step train at MIN_HZ and the profile tick. */
function start(i: number, dir: number, steps: number, v: number, mode: number): void {
  const d = AX[i].driver;
  enable(i, true);
  pinWrite(d.dir_pin, dir > 0 ? d.dir_positive_level : 1 - d.dir_positive_level);
  MODE[i] = mode;
  DIR[i] = dir;
  stepsToIssue[i] = steps;
  stepsIssued[i] = 0;
  V[i] = v;
  C0[i] = CNT[i];
  cmdOrigin[i] = pos(i);
  countAtTick[i] = CNT[i];
  stepsAtLastCount[i] = 0;
  BACK[i] = false;
  T0[i] = integratedAt[i] = TP[i] = getTime();
  const s = AX[i];
  const lim = softLimits(s);
  faultPin[i] = s.driver.fault.pin;
  faultLv[i] = s.driver.fault.active_low ? 0 : 1;
  const ahead = mode === HOME || dir < 0 ? s.home : s.limit_max;
  aheadPin[i] = ahead ? ahead.pin : -1;
  aheadLv[i] = ahead && !ahead.active_low ? 1 : 0;
  outMax[i] = lim.max_mm + s.tolerance_mm;
  outMin[i] = lim.min_mm - s.tolerance_mm;
  cpmm[i] = s.encoder.counts_per_mm;
  setHz(i, MIN_HZ);
  dueAt[i] = T0[i] + steps / MIN_HZ;
  IV[i] = setInterval(TICK[i], TICK_MS);
}

/** FAULT already asserted before a command: nothing moves. */
function faultFirst(i: number): boolean {
  const s = AX[i];
  if (!closed(s.driver.fault)) return false;
  enable(i, false);
  end(i, 'failed', 'encoder', false, 'MOTOR_STALL',
    s.axis + ': driver FAULT (GPIO' + s.driver.fault.pin + ') already asserted at ' + f2(pos(i)) + ' mm; nothing moved, driver disabled. Clear the fault, then home.');
  return true;
}

function moveRun(slot: number, p: Record<string, unknown>): void {
  const i = idx(p.axis);
  const s = AX[i];
  const tgt = p.mm as number;
  SLOT[i] = slot;
  TGT[i] = tgt;
  MODE[i] = MOVE;
  // The encoder is the truth: the move runs from where it says the carriage is.
  const dist = tgt - pos(i);
  const steps = Math.round(Math.abs(dist) * s.steps_per_mm);
  C0[i] = CNT[i];
  cmdOrigin[i] = pos(i);
  stepsIssued[i] = 0;
  countAtTick[i] = CNT[i];
  stepsAtLastCount[i] = 0;
  BACK[i] = false;
  if (!steps) return verdict(i);
  if (faultFirst(i)) return;
  const dir = dist > 0 ? 1 : -1;
  const sw = dir > 0 ? s.limit_max : s.home;
  if (closed(sw)) {
    if (Math.abs(dist) <= s.tolerance_mm) return verdict(i);
    return hit(i, dir > 0, 'already closed', 'nothing moved');
  }
  start(i, dir, steps, typeof p.speed === 'number' ? p.speed : s.max_speed_mm_s, MOVE);
}

function homeRun(slot: number, p: Record<string, unknown>): void {
  const i = idx(p.axis);
  const s = AX[i];
  SLOT[i] = slot;
  TGT[i] = s.travel.min_mm;
  MODE[i] = HOME;
  stepsIssued[i] = 0;
  countAtTick[i] = CNT[i];
  stepsAtLastCount[i] = 0;
  BACK[i] = false;
  if (closed(s.home)) return homed(i, 'already closed');
  if (faultFirst(i)) return;
  start(i, -1, Math.round((s.travel.max_mm - s.travel.min_mm + HOME_OVERRUN_MM) * s.steps_per_mm), s.home_speed_mm_s, HOME);
}

function axisBusy(p: Record<string, unknown>): string | null {
  const i = idx(p.axis);
  return SLOT[i] >= 0 || stopCovers[i] ? 'axis ' + AX[i].axis + (stopCovers[i] ? ' is being stopped' : ' is executing a command') + '; ask again when that has a result' : null;
}

function notHomed(p: Record<string, unknown>): string | null {
  const i = idx(p.axis);
  return HOMED[i] || SLOT[i] >= 0 ? null : 'home axis ' + AX[i].axis + ' first (stepper.home): not homed since boot, position unknown';
}

/** The stop window ended: every axis a stop covered must have held still since the snapshot. */
function stopCheck(): void {
  swT = undefined;
  for (let k = 0; k < stopSlots.length; k++) {
    let ok = '';
    let bad = '';
    for (let i = 0; i < AX.length; i++) {
      if (stopAxes[k] >= 0 && stopAxes[k] !== i) continue;
      const a = AX[i].axis;
      if (CNT[i] !== stopCounts[i]) bad += (bad ? '; ' : '') + a + ' still moving after the stop (' + f2(stopCounts[i] / AX[i].encoder.counts_per_mm) + ' -> ' + f2(pos(i)) + ' mm)';
      else ok += (ok ? ', ' : '') + a + ' at ' + f2(pos(i)) + ' mm';
    }
    if (bad) done(stopSlots[k], 'failed', 'encoder', false, 'NO_FEEDBACK', bad + '; steps are off: something else moves it or the encoder is noisy');
    else done(stopSlots[k], 'completed', 'encoder', true, undefined, 'motion stopped: ' + ok);
  }
  // Not `.length = 0`: Espruino throws "Assignment to a constant" on an array's length.
  stopSlots.splice(0, stopSlots.length);
  stopAxes.splice(0, stopAxes.length);
  for (let i = 0; i < AX.length; i++) stopCovers[i] = false;
}

/**
 * STOP_SNAP_MS after the step outputs went off: encoder edges from before the stop have left
 * Espruino's event queue, so the cancelled command reports where the carriage is, and the counts
 * the stop check compares against are taken now. The check follows at SETTLE_MS.
 */
function stopSnap(): void {
  swT = setTimeout(stopCheck, SETTLE_MS - STOP_SNAP_MS);
  for (let i = 0; i < AX.length; i++) {
    stopCounts[i] = CNT[i];
    if (MODE[i] >= CANCEL) {
      end(i, 'cancelled', 'encoder', false, 'CANCELLED',
        AX[i].axis + ' stopped by request at ' + f2(pos(i)) + ' mm (' + (MODE[i] > CANCEL ? 'homing' : 'target ' + TGT[i] + ' mm') + ')');
    }
  }
}

function sel(p: Record<string, unknown>): number {
  return p.axis === undefined ? -1 : idx(p.axis);
}

/** Before the ack: step outputs off on the named axis (or all) at once; what ran there ends cancelled. */
function stopNow(p: Record<string, unknown>): void {
  const a = sel(p);
  for (let i = 0; i < AX.length; i++) {
    if (a >= 0 && a !== i) continue;
    halt(i);
    stopCovers[i] = true;
    const m = MODE[i];
    if (m === MOVE || m === HOME) MODE[i] = m === HOME ? CANCEL + 1 : CANCEL;
  }
  if (swT !== undefined) clearTimeout(swT);
  swT = setTimeout(stopSnap, STOP_SNAP_MS);
}

/** After the ack: this stop's verdict comes from the shared window (see stopSnap, stopCheck). */
function stopRun(slot: number, p: Record<string, unknown>): void {
  if (!AX.length) return done(slot, 'unverified', 'none', false, undefined, 'no moving actuators on this board; relays keep their state');
  if (stopSlots.indexOf(slot) < 0) {
    stopSlots.push(slot);
    stopAxes.push(sel(p));
  }
}

export const STEPPER_MOVE: Action = { n: 'stepper.move', chk: checkStepperMoveArgs, nh: notHomed, busy: axisBusy, run: moveRun, ak: true };
export const STEPPER_HOME: Action = { n: 'stepper.home', chk: checkStepperHomeArgs, busy: axisBusy, run: homeRun, ak: true };
export const STOP: Action = { n: 'stop', chk: checkStopArgs, busy: () => null, pre: stopNow, run: stopRun, al: true, ak: true };

function inputs(sw: SwitchDef | undefined, fn: () => void, what: string): void {
  if (!sw) return;
  pinInput(sw.pin, sw.pull);
  watchOk(pinWatch(fn, sw.pin, { repeat: true, edge: sw.active_low ? 'falling' : 'rising' }), sw.pin, what, sw.pull);
}

function watchOk(id: number, pin: number, what: string, pull: string): void {
  if (!id) log('setWatch refused GPIO' + pin + ' (' + what + ')');
  // The ESP32 port forces a watched pin to input with pull-up: put the board's pull back.
  else if (pull !== 'up') pinInput(pin, pull);
}

/** An edge long after the previous one: BACK unless the wait began before this command's motion (T0). */
function gapEdge(i: number, ev: WatchEvent): void {
  const lt = ev.lastTime as number;
  if (ev.time - (lt > T0[i] ? lt : T0[i]) > edgeGapS[i]) BACK[i] = true;
}

function makers(i: number): void {
  TICK[i] = function () {
    tick(i);
  };
  verdictFns[i] = function () {
    if (MODE[i] === VERDICT_DUE) verdict(i); // end() frees the axis
  };
  const s = AX[i];
  const e = s.encoder;
  // x2 decoding from one watch on A with B sampled at the edge: towards +mm A differs from B
  // after every A edge. No allocation here: ~750 calls/s at 30 mm/s. An edge that follows the
  // previous one (lastTime), or the start of this command's motion (T0), by more than edgeGapS
  // means the encoder had stopped counting while steps ran: BACK.
  pinInput(e.a_pin, e.pull);
  pinInput(e.b_pin, e.pull);
  // Espruino finds a name by walking each scope's names in order: the callback reads this function's
  // few aliases, not the bundle's scope of hundreds.
  // Short: a gap longer than edgeGapS since the previous edge (rare: once per move at least, its
  // first edge) is judged in gapEdge; an edge after dueAt runs the late tick.
  const cnt = CNT;
  const gap = edgeGapS;
  const due = dueAt;
  watchOk(pinWatch(function (ev) {
    cnt[i] += ev.state !== ev.data ? 1 : -1;
    if (ev.time - (ev.lastTime as number) > gap[i]) gapEdge(i, ev);
    if (ev.time > due[i]) tick(i);
  }, e.a_pin, { repeat: true, edge: 'both', data: e.b_pin }), e.a_pin, s.axis + ' encoder A', e.pull);
  inputs(s.driver.fault, function () {
    fault(i);
  }, s.axis + ' driver FAULT');
  inputs(s.home, function () {
    limit(i, false);
  }, s.axis + ' home switch');
  inputs(s.limit_max, function () {
    limit(i, true);
  }, s.axis + ' max limit');
}

/** Boot: every driver disabled with STEP low, DIR set, inputs and watches made. Not homed. */
export function stepperInit(b: BoardDef, d: Done, p: (slot: number, pct: number, pos: number) => void): void {
  AX = b.steppers || [];
  done = d;
  prog = p;
  CNT = new Int32Array(AX.length);
  for (let i = 0; i < AX.length; i++) {
    const dr = AX[i].driver;
    pinOutput(dr.enable_pin, dr.enable_active_low ? 1 : 0);
    pinOutput(dr.step_pin, 0);
    pinOutput(dr.dir_pin, dr.dir_positive_level);
    if (dr.step_pin === 25 || dr.step_pin === 26) log('STEP GPIO' + dr.step_pin + ' is a DAC pin: no PWM steps there');
    SLOT[i] = -1;
    MODE[i] = IDLE;
    HOMED[i] = false;
    edgeGapS[i] = 1e9;
    dueAt[i] = Infinity;
    C0[i] = DIR[i] = stepsToIssue[i] = stepsIssued[i] = HZ[i] = T0[i] = integratedAt[i] = TP[i] = V[i] = TGT[i] = cmdOrigin[i] = stopCounts[i] = 0;
    stopCovers[i] = false;
    PO[i] = { freq: MIN_HZ };
    makers(i);
  }
}

/** E-stop: every step output off and every driver disabled; a move or homing in progress ends failed ESTOP_LATCHED. */
export function stepperAllOff(): void {
  for (let i = 0; i < AX.length; i++) {
    halt(i);
    enable(i, false);
    const m = MODE[i];
    if (m === MOVE || m === HOME || m === VERDICT_DUE) {
      end(i, 'failed', 'encoder', false, 'ESTOP_LATCHED',
        AX[i].axis + ': e-stop at ' + f2(pos(i)) + ' mm while ' + (m === HOME ? 'homing' : 'moving to ' + TGT[i] + ' mm') + '; steps off, driver disabled');
    }
  }
}

/** Axis part of the state snapshot: positions from the encoder and the step integrator, switches live. */
export function stepperState(): AxisState[] {
  const o: AxisState[] = [];
  for (let i = 0; i < AX.length; i++) {
    const s = AX[i];
    const sd = stepsIssued[i] + (HZ[i] ? HZ[i] * (getTime() - integratedAt[i]) : 0);
    o.push({
      axis: s.axis,
      pos: r2(pos(i)),
      cmd: r2(cmdOrigin[i] + (DIR[i] * sd) / s.steps_per_mm),
      moving: HZ[i] > 0,
      homed: HOMED[i],
      fault: closed(s.driver.fault),
      home: closed(s.home),
      limit: closed(s.limit_max),
    });
  }
  return o;
}
