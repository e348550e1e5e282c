// The 40 ms stall: the firmware sends `ack`, then `res` a few ms later. The simulated chip runs Nagle as
// lwIP does (Espruino sets no TCP_NODELAY), so that `res` waits until the host acknowledges the `ack`,
// which a silent host does only after its ~40 ms delayed ACK. The host answers every `ack` at once.
// Host core and rig share one VirtualClock that advances 1 ms at a time while real loopback I/O settles,
// so a loaded machine cannot stretch or shrink simulated time.
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualClock } from '@proofrig/protocol/clock';
import { serve, type Running } from '../host/src/serve.js';
import { RELAY_BOARD, RIG } from './helpers/e2e.js';

let running: Running | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const ioSettle = () => new Promise<void>((r) => setTimeout(r, 0));

/** Advance simulated time 1 ms at a time, letting real socket I/O run in between, until `done` or `ms`. */
async function runFor(clock: VirtualClock, ms: number, done: () => boolean = () => false): Promise<number> {
  const t0 = clock.now();
  for (let i = 0; i < ms && !done(); i++) {
    await ioSettle();
    await ioSettle();
    clock.advance(1);
  }
  return clock.now() - t0;
}

async function start(clock: VirtualClock): Promise<Running> {
  const db = join(mkdtempSync(join(tmpdir(), 'proofrig-nagle-')), 'journal.db');
  const r = await serve({ db, port: 0, sims: [{ boardFile: RELAY_BOARD }], logger: pino({ level: 'silent' }), clock, heartbeatMs: 60000, seed: 3 });
  await runFor(clock, 5000, () => r.core.devices.session(RIG) !== undefined);
  expect(r.core.devices.session(RIG)).toBeDefined();
  return r;
}

describe('a relay that settles in 2 ms is reported done in about that, not after a delayed ACK', () => {
  it('channel 3 completes within a few simulated ms of its settle time, and no result waited for a delayed ACK', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    running = await start(clock);
    const rig = running.rigs.get(RIG)!;
    const released: string[] = [];
    rig.on('nagle', (by: string) => released.push(by));
    await runFor(clock, 100); // the first state query and its answer
    const took: number[] = [];
    for (let i = 0; i < 8; i++) {
      const c = await running.core.submit({ device_id: RIG, action: 'relay.set', args: { ch: 3, on: i % 2 === 0 } });
      const ms = await runFor(clock, 500, () => running!.core.status(c.command_id)!.terminal);
      expect(running.core.status(c.command_id), JSON.stringify(running.core.status(c.command_id))).toMatchObject({ state: 'completed', evidence: 'pin_readback' });
      took.push(ms);
    }
    expect(released.filter((by) => by === 'delack')).toEqual([]);
    expect(Math.max(...took)).toBeLessThan(20); // settle 2 ms; a held result would take ≥ 40
  });
});
