// Interlocks that hold whatever the host says: the e-stop latch (every relay off, every axis stopped
// and disabled until estop.clear while the input is released) and the watchdog that reboots a
// stalled main loop. Relay max on-time lives in relay.ts, soft limits in stepper.ts.
import type { BoardDef, SwitchDef } from '@proofrig/protocol';
import { checkEstopClearArgs, DEFAULT_WATCHDOG_S } from '@proofrig/protocol';
import type { Action, Done } from './action';
import { pinInput, pinRead, pinWatch } from './hal';
import { relayAllOff } from './relay';
import { stepperAllOff } from './stepper';
import { FANS } from './fan';
import { SERVOS } from './servo';

let ES: SwitchDef | undefined;
let LATCH = false;
let ev: (k: 'estop', ch: number, msg: string) => void;

function active(): boolean {
  return !!ES && pinRead(ES.pin) === (ES.active_low ? 0 : 1);
}

/** Latched: commands other than stop, estop.clear and reads (sensor.read) are refused ESTOP_LATCHED. */
export function latched(): boolean {
  return LATCH;
}

/** Outputs off first, then the bookkeeping and the report. A repeat while latched only re-asserts the outputs. */
function trip(why: string): void {
  relayAllOff();
  stepperAllOff();
  FANS.off();
  SERVOS.off();
  if (LATCH) return;
  LATCH = true;
  ev('estop', 0, 'e-stop ' + why + ' (GPIO' + (ES as SwitchDef).pin + '): every relay switched off, every axis stopped and disabled; latched until an operator clears it (estop_clear) with the input released');
}

/** The level at the edge, not a read now: a press shorter than the event queue's delay still latches. */
function onEdge(e: WatchEvent): void {
  if (!e.state === (ES as SwitchDef).active_low) trip('pressed');
}

/** A latch stays until cleared; the input must read released at that moment. */
function clearRun(slot: number, _p: Record<string, unknown>, done: Done): void {
  const sw = ES as SwitchDef;
  if (active()) return done(slot, 'rejected', 'none', false, 'ESTOP_ACTIVE', 'e-stop input on GPIO' + sw.pin + ' is still active; release it at the rig, then clear again');
  const was = LATCH;
  LATCH = false;
  done(slot, 'completed', 'aux_contact', true, undefined,
    'e-stop input on GPIO' + sw.pin + ' reads released; ' + (was ? 'latch cleared: outputs stay off until commanded' : 'was not latched'));
}

export const ESTOP_CLEAR: Action = { n: 'estop.clear', chk: checkEstopClearArgs, busy: () => null, run: clearRun };

/** Boot: the watchdog (kicked by Espruino's idle loop), and the e-stop watch; an input already active latches at once. */
export function interlockInit(b: BoardDef, e: (k: 'estop', ch: number, msg: string) => void): void {
  ev = e;
  ES = b.estop;
  LATCH = false;
  if (E.enableWatchdog) E.enableWatchdog(b.watchdog_s || DEFAULT_WATCHDOG_S);
  if (!ES) return;
  pinInput(ES.pin, ES.pull);
  if (!pinWatch(onEdge, ES.pin, { repeat: true, edge: 'both' })) console.log('proofrig: setWatch refused the e-stop GPIO' + ES.pin + '; it is polled only when a command arrives');
  else if (ES.pull !== 'up') pinInput(ES.pin, ES.pull);
  if (active()) trip('active at boot');
}

/** Also checked before every command, in case an edge was missed. */
export function estopPoll(): void {
  if (ES && active()) trip('pressed');
}
