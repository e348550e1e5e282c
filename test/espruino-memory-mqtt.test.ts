// Memory of the MQTT build on the real interpreter, as test/espruino-memory.test.ts measures the
// WebSocket build: process.memory() after boot, once the dedupe ring has filled, after 1,000 mixed
// command frames and after 50 reconnects, every frame through a real Mosquitto. The MQTT link keeps
// its own buffers and counters (firmware/src/mqtt.ts): a JsVar leaked per packet or per connection must show.
import { afterEach, describe, expect, it } from 'vitest';
import { DEDUPE_RING_SIZE } from '@proofrig/protocol';
import { RIG, startE2E, type E2E } from './helpers/e2e.js';
import { ESPRUINO_AVAILABLE, enginesUnderTest } from './helpers/engines.js';
import { mosquittoOrNotice, startMosquitto, TEST_HOST_PASS, type Broker } from './helpers/mosquitto.js';
import { HOST_USER } from '../host/src/broker/mosquitto-auth.js';
import { memoryReading, mixedCommands, reconnects } from '@proofrig/bench/memory-load';

const FRAMES = 1000;
const RECONNECTS = 50;
const RUN = mosquittoOrNotice();

let e: E2E | undefined;
let broker: Broker | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
  await broker?.stop();
  broker = undefined;
});

enginesUnderTest();
describe.skipIf(!ESPRUINO_AVAILABLE || !RUN)('memory of the MQTT build on the real interpreter (Espruino engine)', () => {
  it('JsVars in use are flat once the dedupe ring has filled: 1,000 mixed commands and 50 reconnects through the broker add only a working-set margin', async () => {
    broker = await startMosquitto();
    const b = broker;
    e = await startE2E({
      engine: 'espruino',
      db: ':memory:',
      heartbeatMs: 1000,
      broker: `mqtt://${HOST_USER}:${TEST_HOST_PASS}@127.0.0.1:${b.port}`,
      brokerAuth: (devices) => b.authorize(devices),
    });
    const r = e.running;
    const boot = await memoryReading(r, RIG);
    const load = mixedCommands(r, RIG);
    const fill = await load.run(4 * DEDUPE_RING_SIZE);
    const ringFull = await memoryReading(r, RIG);
    await load.run(FRAMES - fill.frames);
    const afterCommands = await memoryReading(r, RIG);
    await reconnects(r, RIG, RECONNECTS);
    const afterReconnects = await memoryReading(r, RIG);
    const total = load.totals();
    console.log(
      `MQTT build, process.memory().usage on the Espruino engine (blocksize ${boot.blocksize ?? '?'} B): boot ${boot.usage}, ` +
        `ring full (${fill.frames} frames) ${ringFull.usage}, after ${total.frames} frames ${afterCommands.usage}, ` +
        `after ${RECONNECTS} reconnects ${afterReconnects.usage} JsVars; frames ${JSON.stringify(total)}`,
    );
    expect(total.frames).toBe(FRAMES);
    expect(total.relaySet).toBeGreaterThan(400);
    // The same margins as the WebSocket build's spec (why 100: see there): 870+ frames or 50 reconnects leaking one JsVar each exceed them.
    expect(afterCommands.usage - ringFull.usage).toBeLessThanOrEqual(100);
    expect(afterReconnects.usage - afterCommands.usage).toBeLessThanOrEqual(25);
  }, 600000);
});
