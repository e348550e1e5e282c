// A relay proven by its load current (feedback kind load_current): settle_ms after switching, and
// after its output pin read back right, the current sensor in series with the load is read once.
// Switched on is completed only above on_above, switched off only below off_below; a reading on the
// wrong side is NO_FEEDBACK with the amps measured; a sensor that gave no value (BUS_NAK,
// SENSOR_CRC, OUT_OF_RANGE) fails the command with its code, never completed. The result message
// starts "<name>: load current <amps> A on <sensor>", which the host reads the amps from
// (shared-protocol/src/load-current.ts).
import type { ErrorCode, LoadCurrentFeedback, RelayDef } from '@proofrig/protocol';
import type { Done } from './action';
import { sensorIndex, sensorNow, sensorValue, sensorWhy } from './sensor';

export function loadVerdict(slot: number, r: RelayDef, fb: LoadCurrentFeedback, on: boolean, done: Done): void {
  const sw = on ? 'on' : 'off';
  const st = sensorNow(sensorIndex(fb.sensor));
  if (st !== 'ok')
    return done(slot, 'failed', 'load_current', false, st as ErrorCode,
      r.name + ': switched ' + sw + ', but its load current could not be measured, so it is not verified: ' + sensorWhy());
  const a = sensorValue(sensorIndex(fb.sensor)) as number;
  const head = r.name + ': load current ' + a.toFixed(2) + ' A on ' + fb.sensor + ' ' + r.settle_ms + ' ms after switching ' + sw;
  if (on && !(a > fb.on_above))
    return done(slot, 'failed', 'load_current', false, 'NO_FEEDBACK',
      head + ', not above ' + fb.on_above + ' A: the output switched but the load draws no current (a blown lamp, a fuse out, an open wire)');
  if (!on && !(a < fb.off_below))
    return done(slot, 'failed', 'load_current', false, 'NO_FEEDBACK',
      head + ', not below ' + fb.off_below + ' A: the load still draws current (a welded contact or another path)');
  done(slot, 'completed', 'load_current', true, undefined, head + (on ? ', above ' + fb.on_above : ', below ' + fb.off_below) + ' A');
}
