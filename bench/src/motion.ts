// Bench section 5: a 150 mm move against its motion profile.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { moveDurationS, type BoardDef } from '@proofrig/protocol';
import { STEPPER_BOARD, until, startHost, rigsProcess, stop } from './harness.js';

export async function move(): Promise<{ ms: number; profileMs: number }> {
  const h = await startHost();
  const board = JSON.parse(readFileSync(STEPPER_BOARD, 'utf8')) as BoardDef;
  const ax = board.steppers![0];
  const rig = rigsProcess(['--board', STEPPER_BOARD, '--count', '1', '--id-prefix', 'mv', '--host', h.ws, '--db', h.db, '--seed', '2']);
  await until(() => h.running.core.devices.session('mv-1') !== undefined, 20000, 'stepper rig online');
  const home = await h.running.core.submit({ device_id: 'mv-1', action: 'stepper.home', args: { axis: ax.axis } });
  const hs = await h.running.core.waitTerminal(home.command_id, 60000);
  if (hs?.state !== 'completed') throw new Error(`bench: homing ended ${hs?.state}`);
  const t = performance.now();
  const c = await h.running.core.submit({ device_id: 'mv-1', action: 'stepper.move', args: { axis: ax.axis, mm: 150 } });
  const s = await h.running.core.waitTerminal(c.command_id, 60000);
  const ms = performance.now() - t;
  if (s?.state !== 'completed') throw new Error(`bench: the move ended ${s?.state} ${s?.error_code}`);
  await stop(rig);
  await h.running.close();
  return { ms, profileMs: moveDurationS(ax, 150, ax.max_speed_mm_s) * 1000 };
}
