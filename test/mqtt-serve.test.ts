// `serve --broker`: a broker URL that is not one, a broker that is not there and a broker that turns
// the host away each stop serve with an error that says which, and leave the journal free for the next start.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { serve } from '../host/src/serve.js';
import { HOST_USER } from '../host/src/broker/mosquitto-auth.js';
import { mosquittoOrNotice, startMosquitto, TEST_HOST_PASS, type Broker } from './helpers/mosquitto.js';

const RUN = mosquittoOrNotice();
const logger = pino({ level: 'silent' });
const newDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-mqtt-serve-')), 'journal.db');

let broker: Broker | undefined;
afterEach(async () => {
  await broker?.stop();
  broker = undefined;
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const p = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

describe('serve --broker refuses what it cannot use, before or without holding anything', () => {
  it.each(['ws://127.0.0.1:1883', 'mqtts://127.0.0.1:8883', 'mqtt://127.0.0.1:1883/topic', 'not a url'])('%s is not an mqtt:// broker URL', async (url) => {
    const db = newDb();
    await expect(serve({ db, port: 0, logger, broker: url })).rejects.toThrow(`--broker must be mqtt://[USER:PASS@]HOST[:PORT], got "${url}"`);
    // Nothing was left holding the journal.
    const r = await serve({ db, port: 0, logger });
    await r.close();
  });

  it('a broker that is not there: the error names it, and the journal is free again', async () => {
    const db = newDb();
    const port = await closedPort();
    await expect(serve({ db, port: 0, logger, broker: `mqtt://127.0.0.1:${port}` })).rejects.toThrow(new RegExp(`MQTT broker at 127.0.0.1:${port}.*ECONNREFUSED|no answer from the MQTT broker at 127.0.0.1:${port}`));
    const r = await serve({ db, port: 0, logger });
    await r.close();
  }, 20000);

  it.runIf(RUN)('a broker that turns the host away: the error says it refused the host', async () => {
    broker = await startMosquitto();
    const db = newDb();
    await expect(serve({ db, port: 0, logger, broker: `mqtt://${HOST_USER}:wrong-password@127.0.0.1:${broker.port}` })).rejects.toThrow(/refused the host: .*(Not authorized|Bad username or password)/i);
    const r = await serve({ db, port: 0, logger, broker: `mqtt://${HOST_USER}:${TEST_HOST_PASS}@127.0.0.1:${broker.port}` });
    expect(r.mqtt).toBeDefined();
    await r.close();
  }, 20000);
});
