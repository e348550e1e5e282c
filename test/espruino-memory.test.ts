// Memory on the real interpreter: process.memory() (JsVars in use, after Espruino's own garbage
// collection) after boot, after 1,000 mixed command frames and after 50 reconnects. Once the
// 32-slot dedupe ring has filled, usage must stay flat: a leak of one JsVar per command or per
// reconnect must show. Commands go through the host core (no MCP in the loop) and raw frames
// through the authenticated session, pipelined over the four relay channels.
import { afterEach, describe, expect, it } from 'vitest';
import { DEDUPE_RING_SIZE } from '@proofrig/protocol';
import { RIG, startE2E, type E2E } from './helpers/e2e.js';
import { ESPRUINO_AVAILABLE, enginesUnderTest } from './helpers/engines.js';
import { memoryReading, mixedCommands, reconnects } from '@proofrig/bench/memory-load';

/** Command and query frames, and reconnects, after the ring has filled (issue 8, point 6). */
const FRAMES = 1000;
const RECONNECTS = 50;

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

enginesUnderTest();
describe.skipIf(!ESPRUINO_AVAILABLE)('memory on the real interpreter (Espruino engine)', () => {
  it('JsVars in use are flat once the dedupe ring has filled: 1,000 mixed commands and 50 reconnects add only a working-set margin', async () => {
    // A slower heartbeat and a journal in memory: less work beside the load, the same firmware paths.
    e = await startE2E({ engine: 'espruino', db: ':memory:', heartbeatMs: 1000, firmwareFile: process.env.PROOFRIG_MEMORY_FIRMWARE });
    const r = e.running;
    const t0 = Date.now();
    const boot = await memoryReading(r, RIG);
    const load = mixedCommands(r, RIG);
    // Every ring slot has held a result before the reference reading.
    const fill = await load.run(4 * DEDUPE_RING_SIZE);
    const ringFull = await memoryReading(r, RIG);
    const t1 = Date.now();
    await load.run(FRAMES - fill.frames);
    const afterCommands = await memoryReading(r, RIG);
    const t2 = Date.now();
    await reconnects(r, RIG, RECONNECTS);
    const afterReconnects = await memoryReading(r, RIG);
    const total = load.totals();
    console.log(
      `process.memory().usage on the Espruino engine (blocksize ${boot.blocksize ?? '?'} B): boot ${boot.usage}, ` +
        `ring full (${fill.frames} frames) ${ringFull.usage}, after ${total.frames} frames ${afterCommands.usage}, ` +
        `after ${RECONNECTS} reconnects ${afterReconnects.usage} JsVars; frames ${JSON.stringify(total)}; ` +
        `${t1 - t0} ms to fill, ${t2 - t1} ms for the rest, ${Date.now() - t2} ms for the reconnects`,
    );
    // Every kind of frame reached the device, and each was answered the way the device must answer it (checked as they came).
    expect(total.frames).toBe(FRAMES);
    expect(total.relaySet).toBeGreaterThan(400);
    expect(total.repeat).toBeGreaterThan(50);
    expect(total.badArgs).toBeGreaterThan(50);
    expect(total.stateRead).toBeGreaterThan(25);
    // Margins in JsVars: a reading can catch a frame in a socket buffer, and the 32 stored results
    // differ in size by what each slot last held (a refusal's detail is longer than a relay's
    // result): readings at the same point spread by up to ~45 JsVars (CI: 44). 870+ command frames
    // leaking one JsVar each, or 50 reconnects leaking one each, exceed the margins by far.
    expect(afterCommands.usage - ringFull.usage).toBeLessThanOrEqual(100);
    expect(afterReconnects.usage - afterCommands.usage).toBeLessThanOrEqual(25);
  }, 600000);
});
