// Sensor readings an agent can watch (issue 28, item 3): one MCP resource per sensor with its last
// reading, subscriptions that tell of each new reading and of a reading going stale, and
// list_devices with each sensor's last reading. The real MCP client (SDK, Streamable HTTP) against
// the host and the built firmware on the climate rig, on every engine.
import { afterEach, describe, expect, it } from 'vitest';
import { ResourceUpdatedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Engine } from '@proofrig/sim';
import { enginesUnderTest } from './helpers/engines.js';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import type { Reading } from './helpers/sensor-reading.js';
import { Exposure } from '../host/src/mcp/exposure.js';

const BOARD = new URL('../boards/climate-rig.json', import.meta.url).pathname;
const DEV = 'climate-rig';
const uri = (id: string) => `proofrig://devices/${DEV}/sensors/${id}`;


let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

/** Start the climate rig with a client that records every resources/updated notification in order. */
async function start(engine: Engine): Promise<{ e: E2E; updated: string[] }> {
  e = await startE2E({ engine, sims: [{ boardFile: BOARD }], device: DEV });
  const updated: string[] = [];
  e.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  return { e, updated };
}

async function readSensor(args: Record<string, unknown>): Promise<Reading> {
  const res = (await e!.call('read_sensor', args)) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  return res.structuredContent as unknown as Reading;
}

async function resource(id: string): Promise<Reading> {
  const r = await e!.client.readResource({ uri: uri(id) });
  expect(r.contents[0]).toMatchObject({ uri: uri(id), mimeType: 'application/json' });
  return JSON.parse((r.contents[0] as { text: string }).text) as Reading;
}

/**
 * The same reading seen in two snapshots: the host works its time out of each snapshot's uptime and
 * when the host received it, so the two differ by the difference of their transit times (a few ms,
 * tens on a busy machine; seen 8 ms on the vm engine).
 */
const sameTime = (a: string | null, b: string | null) => Math.abs(Date.parse(a!) - Date.parse(b!));
const SAME_MS = 50;

describe.each(enginesUnderTest())('on the %s engine', (engine) => {
  it('a sensor resource is the last reading; a subscriber hears of a new one after read_sensor; after unsubscribe it hears nothing', async () => {
    const { e, updated } = await start(engine);
    const { resources } = await e.client.listResources();
    expect(resources.filter((r) => r.uri.includes('/sensors/')).map((r) => [r.uri, r.name])).toEqual([
      [uri('air_temp'), 'air temperature on climate-rig'],
      [uri('air_rh'), 'air humidity on climate-rig'],
      [uri('heater_current'), 'heater current on climate-rig'],
      [uri('heater_amps'), 'heater load current on climate-rig'],
    ]);
    expect(await resource('heater_current')).toEqual({
      device_id: DEV, sensor: 'heater_current', label: 'heater current', unit: 'A', value: null, status: 'none',
      measured_at: null, age_ms: null, source: 'cache', command_id: null, detail: null,
    });

    await e.client.subscribeResource({ uri: uri('heater_current') });
    e.running.rigs.get(DEV)!.sensors!.setValue('heater_current', 2.0);
    const read = await readSensor({ name: 'heater current' });
    expect(read).toMatchObject({ status: 'ok', unit: 'A' });
    await until(() => updated.includes(uri('heater_current')), 5000, 'heater_current resource updated');
    const cached = await resource('heater_current');
    expect(cached).toMatchObject({ sensor: 'heater_current', status: 'ok', value: read.value, unit: 'A', source: 'cache', command_id: null });
    expect(sameTime(cached.measured_at, read.measured_at)).toBeLessThanOrEqual(SAME_MS);
    expect(cached.age_ms).toBeGreaterThanOrEqual(0);

    // Unsubscribed, a new reading of heater_current is not told. air_temp, still subscribed, is the
    // marker: its notification is sent after the heater reading was observed, on the same stream.
    await e.client.unsubscribeResource({ uri: uri('heater_current') });
    await e.client.subscribeResource({ uri: uri('air_temp') });
    updated.length = 0;
    e.running.rigs.get(DEV)!.sensors!.setValue('heater_current', 3.0);
    const again = await readSensor({ name: 'heater current' });
    expect(again.status).toBe('ok');
    const nak = await readSensor({ name: 'air temperature' }); // its supply relay is off: BUS_NAK, a reading all the same
    expect(nak).toMatchObject({ status: 'BUS_NAK', value: null });
    await until(() => updated.includes(uri('air_temp')), 5000, 'air_temp resource updated');
    expect(updated).toEqual([uri('air_temp')]);
    expect(await resource('heater_current')).toMatchObject({ status: 'ok', value: again.value });
    expect(await resource('air_temp')).toMatchObject({ status: 'BUS_NAK', value: null, unit: '°C', label: 'air temperature' });
  });

  it('a reading older than max_age_ms: the subscriber is told once, the resource and list_devices say SENSOR_STALE with no value', async () => {
    const { e, updated } = await start(engine);
    await e.client.subscribeResource({ uri: uri('heater_current') });
    e.running.rigs.get(DEV)!.sensors!.setValue('heater_current', 1.5);
    const read = await readSensor({ name: 'heater current' });
    expect(read.status).toBe('ok');

    // list_devices while it is fresh: each sensor with its last reading.
    const listed = await e.call('list_devices');
    const rows = (listed.structuredContent as { devices: { device_id: string; sensors: Record<string, unknown>[] }[] }).devices.find((d) => d.device_id === DEV)!.sensors;
    expect(rows.map((r) => [r.id, r.label, r.unit, r.status, r.value])).toEqual([
      ['air_temp', 'air temperature', '°C', 'none', null],
      ['air_rh', 'air humidity', '%RH', 'none', null],
      ['heater_current', 'heater current', 'A', 'ok', read.value],
      ['heater_amps', 'heater load current', 'A', 'none', null],
    ]);
    expect(sameTime(rows[2]!.measured_at as string, read.measured_at)).toBeLessThanOrEqual(SAME_MS);
    expect((listed.content[0] as { text: string }).text.split('\n')[0]).toMatch(
      new RegExp(`air_temp not read yet, air_rh not read yet, heater_current ${read.value} A \\(\\d+ s ago\\), heater_amps not read yet`),
    );

    // heater_current's max_age_ms is 2000: the second notification is the reading going stale.
    await until(() => updated.filter((u) => u === uri('heater_current')).length >= 2, 8000, 'the stale notification').catch((err: Error) => {
      const host = e.logs.filter((l) => l.evt === 'sensor_stale' || l.evt === 'resource_update_unsent');
      const v = e.running.core.devices.view(DEV);
      throw new Error(`${err.message}; told: ${JSON.stringify(updated)}; the host: ${JSON.stringify(host)}; the cache: ${JSON.stringify(v?.state?.sensors)} observed ${v?.state_observed_at}; read: ${JSON.stringify(read)}`);
    });
    const stale = await resource('heater_current');
    expect(stale).toMatchObject({ status: 'SENSOR_STALE', value: null, source: 'cache' });
    expect(sameTime(stale.measured_at, read.measured_at)).toBeLessThanOrEqual(SAME_MS);
    expect(stale.age_ms).toBeGreaterThan(2000);
    const later = await e.call('list_devices');
    const row = (later.structuredContent as { devices: { device_id: string; sensors: Record<string, unknown>[] }[] }).devices.find((d) => d.device_id === DEV)!.sensors[2]!;
    expect(row).toMatchObject({ id: 'heater_current', status: 'SENSOR_STALE', value: null });
    expect(await readSensor({ name: 'heater current', source: 'cache' })).toMatchObject({ status: 'SENSOR_STALE', value: null });
    expect(updated.filter((u) => u === uri('heater_current'))).toHaveLength(2);
  });
});

describe('bad sensor URIs', () => {
  it('reading or subscribing to an unknown sensor or device is refused by name, and subscribes to nothing', async () => {
    const { e, updated } = await start('vm');
    await expect(e.client.readResource({ uri: uri('nope') })).rejects.toThrow(/device climate-rig has no sensor "nope"; sensors: air_temp, air_rh, heater_current/);
    await expect(e.client.subscribeResource({ uri: uri('nope') })).rejects.toThrow(/device climate-rig has no sensor "nope"; sensors: air_temp, air_rh, heater_current/);
    await expect(e.client.subscribeResource({ uri: 'proofrig://devices/ghost/sensors/air_temp' })).rejects.toThrow(/no device "ghost" is provisioned; known devices: climate-rig/);
    // A refused subscription left nothing behind: only the one made afterwards is told.
    await e.client.subscribeResource({ uri: uri('heater_current') });
    await readSensor({ name: 'heater current' });
    await until(() => updated.length > 0, 5000, 'a notification');
    expect(updated).toEqual([uri('heater_current')]);
  });

  it('a device hidden by --expose has no sensor resources: not listed, not readable, not subscribable', async () => {
    e = await startE2E({ sims: [{ boardFile: BOARD }, { boardFile: RELAY_BOARD }], device: RIG, exposure: Exposure.parse([`${RIG}:bench lamp`]) });
    await e.waitOnline(DEV);
    const { resources } = await e.client.listResources();
    expect(resources.filter((r) => r.uri.includes('/sensors/'))).toEqual([]);
    await expect(e.client.readResource({ uri: uri('air_temp') })).rejects.toThrow(/no device "climate-rig" is provisioned; known devices: relay-rig-4ch/);
    await expect(e.client.subscribeResource({ uri: uri('air_temp') })).rejects.toThrow(/no device "climate-rig" is provisioned; known devices: relay-rig-4ch/);
  });
});
