// The device link through a real MQTT broker (Mosquitto), end to end: the real MCP client → host core →
// MQTT gateway → broker → simulated rig running the MQTT build of the firmware (firmware/dist/proofrig-mqtt.js).
import { afterEach, describe, expect, it } from 'vitest';
import { enginesUnderTest } from './helpers/engines.js';
import { RIG, startE2E, type E2E } from './helpers/e2e.js';
import { mosquittoOrNotice, startMosquitto, TEST_HOST_PASS, type Broker } from './helpers/mosquitto.js';
import { HOST_USER } from '../host/src/broker/mosquitto-auth.js';

const RUN = mosquittoOrNotice();

let e: E2E | undefined;
let broker: Broker | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
  await broker?.stop();
  broker = undefined;
});

async function start(engine: 'vm' | 'espruino'): Promise<E2E> {
  broker = await startMosquitto();
  const b = broker;
  return startE2E({
    engine,
    broker: `mqtt://${HOST_USER}:${TEST_HOST_PASS}@127.0.0.1:${b.port}`,
    brokerAuth: (devices) => b.authorize(devices),
  });
}

describe.runIf(RUN).each(enginesUnderTest())('over MQTT on the %s engine', (engine) => {
  it('relay.set on channel 1 ends completed with evidence aux_contact, as over the WebSocket', async () => {
    e = await start(engine);
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
    expect(final, e.story(final)).toMatchObject({ state: 'completed', terminal: true, accepted: true, executed: true, verified: true, evidence: 'aux_contact', error_code: null });
    expect(e.running.rigs.get(RIG)!.relay(1).contactClosed).toBe(true);
  });
});
