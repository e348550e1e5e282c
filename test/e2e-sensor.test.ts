// Sensors end to end (issue 28): the real MCP client → read_sensor → host core → the built firmware
// reading the climate rig's SHT3x over I2C and its ACS712 on the ADC, on every engine. A reading
// is a number only when the sensor answered, its CRC matched and it is plausible; an unplugged,
// unpowered or corrupted sensor answers an error code and no value, and `fresh_after` never lets
// a reading from before its command through.
import { afterEach, describe, expect } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { enginesUnderTest, picked, type Tier } from './helpers/engines.js';
import { startE2E, until, type E2E } from './helpers/e2e.js';
import type { Reading } from './helpers/sensor-reading.js';

const BOARD = new URL('../boards/climate-rig.json', import.meta.url).pathname;
const DEV = 'climate-rig';


let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

const start = (engine: Tier) =>
  startE2E({ engine, sims: [{ boardFile: BOARD }], device: DEV });

async function read(args: Record<string, unknown>): Promise<{ r: Reading; first: string }> {
  const res = (await e!.call('read_sensor', args)) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  const text = (res.content[0] as { text: string }).text;
  return { r: res.structuredContent as unknown as Reading, first: text.split('\n')[0]! };
}

/** Switch the sensor supply (relay 3, "sensor power") and return its command id. */
async function supplyOn(): Promise<string> {
  const { final } = await e!.act('relay_set', { device_id: DEV, channel: 'sensor power', on: true });
  expect(final.state).toBe('completed');
  return final.command_id;
}

describe.each(enginesUnderTest())('on the %s engine', (engine) => {
  picked(engine, true)('the SHT3x on a relay-switched supply: BUS_NAK before power; after the relay command plus power-up a valid reading; a repeated request_id replays it', async () => {
    e = await start(engine);
    e.running.rigs.get(DEV)!.sensors!.setValue('air_temp', 24.3);

    const before = await read({ device_id: DEV, sensor: 'air_temp' });
    expect(before.r).toMatchObject({ sensor: 'air_temp', status: 'BUS_NAK', value: null, source: 'device' });
    expect(before.first).toMatch(/^air temperature \(air_temp on climate-rig\) was NOT read: the sensor did not answer/);

    const on = await supplyOn();
    const fresh = await read({ device_id: DEV, sensor: 'air temperature', fresh_after: on, delay_ms: 600, request_id: 'temp-after-power' });
    expect(fresh.r, JSON.stringify(fresh.r)).toMatchObject({ status: 'ok', unit: '°C', source: 'device' });
    expect(fresh.r.value).toBeCloseTo(24.3, 1);
    // Taken no earlier than the relay command's end (as the host journaled it) plus the delay (less
    // a millisecond: the times are whole milliseconds on both sides of the device-to-host mapping).
    const onEnded = Date.parse(e!.running.core.status(on)!.terminal_at!);
    expect(Date.parse(fresh.r.measured_at!)).toBeGreaterThanOrEqual(onEnded + 600 - 1);
    expect(fresh.first).toMatch(/^air temperature \(air_temp on climate-rig\) reads 24\.3\d* °C measured/);

    const again = await read({ device_id: DEV, sensor: 'air_temp', request_id: 'temp-after-power' });
    expect(again.r.command_id).toBe(fresh.r.command_id);
    expect(again.r.measured_at).toBe(fresh.r.measured_at);
    expect(again.r.value).toBe(fresh.r.value);

    // The same request_id with fresh_after after a later command would replay a reading from before it: refused.
    const on2 = await supplyOn();
    const stale = await read({ device_id: DEV, sensor: 'air_temp', fresh_after: on2, request_id: 'temp-after-power' });
    expect(stale.r).toMatchObject({ status: 'not_read', value: null });
    expect(stale.first).toMatch(/was NOT read: request_id temp-after-power replays command/);

    const cached = await read({ name: 'air temperature', source: 'cache' });
    expect(cached.r).toMatchObject({ status: 'ok', source: 'cache', value: fresh.r.value });
  });

  picked(engine, true)('an unplugged SHT3x reads BUS_NAK and a corrupted CRC reads SENSOR_CRC, never a number', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    const on = await supplyOn();
    rig.setSensorFault('air_rh', 'unplugged');
    const nak = await read({ device_id: DEV, sensor: 'air_rh', fresh_after: on, delay_ms: 600 });
    expect(nak.r, JSON.stringify(nak.r)).toMatchObject({ status: 'BUS_NAK', value: null });
    expect(nak.r.detail).toMatch(/no acknowledge from the SHT3x at I2C address 68/);

    rig.setSensorFault('air_rh', 'crc');
    const crc = await read({ device_id: DEV, sensor: 'air_rh' });
    expect(crc.r).toMatchObject({ status: 'SENSOR_CRC', value: null });
    expect(crc.first).toMatch(/was NOT read: its data failed the checksum/);

    rig.setSensorFault('air_rh', 'slow');
    const slow = await read({ device_id: DEV, sensor: 'air_rh' });
    expect(slow.r).toMatchObject({ status: 'BUS_NAK', value: null });

    rig.setSensorFault('air_rh', null);
    rig.sensors!.setValue('air_rh', 61.5);
    const ok = await read({ name: 'air humidity' });
    expect(ok.r).toMatchObject({ status: 'ok', unit: '%RH' });
    expect(ok.r.value).toBeCloseTo(61.5, 1);
  });

  picked(engine, false)('a drifting SHT3x reads plausible numbers nothing on the device can doubt, until its drift leaves the range: OUT_OF_RANGE, no value', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    const on = await supplyOn();
    // 0.4 °C/s upwards (0.5 % of -20..60 per second) from 58.8 °C: about 3 s of plausible readings.
    rig.sensors!.setValue('air_temp', 58.8);
    rig.setSensorFault('air_temp', 'drift');
    const early = await read({ device_id: DEV, sensor: 'air_temp', fresh_after: on, delay_ms: 600 });
    expect(early.r, JSON.stringify(early.r)).toMatchObject({ status: 'ok' });
    expect(early.r.value!).toBeGreaterThan(58.8);
    expect(early.r.value!).toBeLessThanOrEqual(60);
    await until(() => rig.sensors!.value('air_temp', 0) > 60.2, 20000, 'the drift past 60 °C');
    const gone = await read({ device_id: DEV, sensor: 'air_temp' });
    expect(gone.r, JSON.stringify(gone.r)).toMatchObject({ status: 'OUT_OF_RANGE', value: null });
  });

  picked(engine, false)('fresh_after a supply command that failed reads nothing, and says why', async () => {
    e = await start(engine);
    e.running.rigs.get(DEV)!.setFault('relay3', 'pin_stuck_high');
    const { final } = await e.act('relay_set', { device_id: DEV, channel: 3, on: true });
    expect(final).toMatchObject({ state: 'failed', error_code: 'READBACK_MISMATCH' });
    const r = await read({ device_id: DEV, sensor: 'air_temp', fresh_after: final.command_id, delay_ms: 600 });
    expect(r.r).toMatchObject({ status: 'not_read', value: null, command_id: null });
    expect(r.first).toBe(`air temperature (air_temp on climate-rig) was NOT read: command ${final.command_id} (relay.set) ended failed READBACK_MISMATCH, so what it should have changed did not happen.`);
  });

  picked(engine, false)('the ACS712 on the ADC: the current it carries, and OUT_OF_RANGE (no value) when unplugged', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.sensors!.setValue('heater_current', 2.0);
    const amps = await read({ name: 'heater current' });
    expect(amps.r).toMatchObject({ status: 'ok', unit: 'A', sensor: 'heater_current' });
    expect(Math.abs(amps.r.value! - 2.0)).toBeLessThan(0.15);
    const cached = await read({ name: 'heater current', source: 'cache' });
    expect(cached.r).toMatchObject({ status: 'ok', source: 'cache', value: amps.r.value });
    // The same reading: its time comes from the same snapshot, observed by the device cache and the command a moment apart.
    const near = (x: string | null) => Math.abs(Date.parse(x!) - Date.parse(amps.r.measured_at!));
    expect(near(cached.r.measured_at)).toBeLessThanOrEqual(5);
    // max_age_ms of heater_current is 2000: after it the cache answers SENSOR_STALE and no value.
    await new Promise((r) => setTimeout(r, 2100));
    const stale = await read({ name: 'heater current', source: 'cache' });
    expect(stale.r).toMatchObject({ status: 'SENSOR_STALE', value: null, source: 'cache' });
    expect(near(stale.r.measured_at)).toBeLessThanOrEqual(5);
    expect(stale.first).toMatch(/^heater current \(heater_current on climate-rig\): the last reading is too old to count \(measured \d+\.\d s ago, more than 2 s\)/);

    rig.setSensorFault('heater_current', 'unplugged');
    const gone = await read({ device_id: DEV, sensor: 'heater_current' });
    expect(gone.r).toMatchObject({ status: 'OUT_OF_RANGE', value: null });
    expect(gone.first).toMatch(/outside its plausible range/);
  });

  picked(engine, false)('list_devices shows the sensors and their last readings', async () => {
    e = await start(engine);
    await read({ name: 'heater current' });
    const r = await e.call('list_devices');
    const d = (r.structuredContent as { devices: { device_id: string; sensors: { id: string }[]; state: { sensors?: { id: string; st: string }[] } | null }[] }).devices.find((x) => x.device_id === DEV)!;
    expect(d.sensors.map((s) => s.id)).toEqual(['air_temp', 'air_rh', 'heater_current', 'heater_amps']);
    expect(d.state!.sensors!.find((s) => s.id === 'heater_current')!.st).toBe('ok');
    expect((r.content[0] as { text: string }).text.split('\n')[0]).toMatch(/heater_current/);
  });
});
