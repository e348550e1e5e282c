// Memory on the real interpreter: process.memory() (JsVars, after Espruino's own garbage collection)
// after boot, after 1,000 mixed commands and after 50 reconnects. Once the 32-slot dedupe ring has
// filled, usage must stay flat: a leak of one JsVar per command or per reconnect must show.
import { afterEach, describe, expect, it } from 'vitest';
import { RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import { ESPRUINO_AVAILABLE, enginesUnderTest } from './helpers/engines.js';

interface Mem {
  free: number;
  usage: number;
  total: number;
  blocksize?: number;
}

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

/** The lowest of three readings, 150 ms apart, with the rig idle: in-flight frames are not a leak. */
async function usage(h: E2E): Promise<Mem> {
  const esp = h.running.rigs.get(RIG)!.espruino!;
  let best: Mem | undefined;
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 150));
    const m = (await esp.evaluate('process.memory()')) as Mem | undefined;
    if (m && (!best || m.usage < best.usage)) best = m;
  }
  if (!best) throw new Error('no process.memory() answer from the interpreter');
  return best;
}

enginesUnderTest();
describe.skipIf(!ESPRUINO_AVAILABLE)('memory on the real interpreter (Espruino engine)', () => {
  it('usage is flat after the dedupe ring fills: 1,000 mixed commands and 50 reconnects add no JsVars beyond a small working-set margin', async () => {
    e = await startE2E({ engine: 'espruino' });
    const h = e;
    const boot = await usage(h);
    let done = 0;
    // Relay commands on all four channels at once (each channel one at a time), a stop every 20 rounds.
    const round = async (i: number): Promise<void> => {
      await Promise.all(
        [1, 2, 3, 4].map(async (ch) => {
          const { final } = await h.act('relay_set', { device_id: RIG, channel: ch, on: i % 2 === 0 });
          expect(final.terminal).toBe(true);
          done++;
        }),
      );
      if (i % 20 === 19) {
        const r = await h.call('stop_device', { device_id: RIG });
        expect(r.isError).toBeFalsy();
        done++;
      }
    };
    let i = 0;
    for (; done < 100; i++) await round(i); // the ring (32 slots) is full by now
    const ringFull = await usage(h);
    for (; done < 1000; i++) await round(i);
    const afterCommands = await usage(h);
    const rig = h.running.rigs.get(RIG)!;
    const online = () => h.logs.filter((l) => l.evt === 'device_online').length;
    for (let k = 0; k < 50; k++) {
      const before = online();
      rig.linkDrop({ direction: 'both', ms: 50 });
      await until(() => online() > before, 15000, `reconnect ${k + 1}`);
    }
    await h.waitOnline();
    const afterReconnects = await usage(h);
    console.log(
      `process.memory() on the Espruino engine (blocksize ${boot.blocksize ?? '?'} B, total ${boot.total}): ` +
        `boot ${boot.usage}, ring full (${100} commands) ${ringFull.usage}, after ${done} commands ${afterCommands.usage}, after 50 reconnects ${afterReconnects.usage}`,
    );
    // Margin: 60 JsVars (~840 B at 14 B/JsVar) covers strings a frame or a socket buffer holds at the
    // moment of the reading; 900 commands or 50 reconnects leaking even one JsVar each exceed it.
    expect(afterCommands.usage - ringFull.usage).toBeLessThanOrEqual(60);
    expect(afterReconnects.usage - afterCommands.usage).toBeLessThanOrEqual(40);
  }, 600000);
});
