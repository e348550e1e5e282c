// Sensors while the e-stop is latched (issue 28), end to end on every engine: reading a sensor
// actuates nothing, so read_sensor still reads the device (you want to see the temperature during an
// emergency), and what it reads is honest: a sensor whose supply relay the e-stop switched off reads
// BUS_NAK, not its last value. Every output stays refused ESTOP_LATCHED and untouched.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BoardDef } from '@proofrig/protocol';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CommandStatus } from '@proofrig/host/core';
import { enginesUnderTest } from './helpers/engines.js';
import { startE2E, until, type E2E } from './helpers/e2e.js';
import type { Reading } from './helpers/sensor-reading.js';

const DEV = 'climate-rig';
/** The climate rig with an e-stop input on GPIO14 (the shipped board has none). */
function estopBoard(): string {
  const b: BoardDef = JSON.parse(readFileSync(new URL('../boards/climate-rig.json', import.meta.url), 'utf8'));
  b.estop = { pin: 14, active_low: false, pull: 'up' };
  const f = join(mkdtempSync(join(tmpdir(), 'proofrig-board-')), b.id + '.json');
  writeFileSync(f, JSON.stringify(b));
  return f;
}
/** Relay K3 ("sensor power", the SHT3x's supply), the fan's and the servo's PWM pins, as the board wires them. */
const SUPPLY_PIN = 18;
const FAN_PIN = 27;
const SERVO_PIN = 13;

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

async function read(args: Record<string, unknown>): Promise<{ r: Reading; first: string }> {
  const res = (await e!.call('read_sensor', args)) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  return { r: res.structuredContent as unknown as Reading, first: (res.content[0] as { text: string }).text.split('\n')[0]! };
}

async function tool(name: string, args: Record<string, unknown>): Promise<CommandStatus> {
  const res = (await e!.call(name, args)) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  return res.structuredContent as unknown as CommandStatus;
}

describe.each(enginesUnderTest())('on the %s engine', (engine) => {
  it('while the e-stop is latched sensors are read from the device, an unpowered one BUS_NAK; relay, fan and servo commands are refused ESTOP_LATCHED and nothing is driven', async () => {
    e = await startE2E({ engine, sims: [{ boardFile: estopBoard() }], device: DEV });
    await e.waitOnline(DEV);
    const rig = e.running.rigs.get(DEV)!;
    const core = e.running.core;
    rig.sensors!.setValue('air_temp', 24.3);
    rig.sensors!.setValue('heater_current', 1.5);
    const on = (await e.act('relay_set', { device_id: DEV, channel: 'sensor power', on: true })).final;
    expect(on.state).toBe('completed');
    const powered = await read({ device_id: DEV, sensor: 'air_temp', fresh_after: on.command_id, delay_ms: 600 });
    expect(powered.r, JSON.stringify(powered.r)).toMatchObject({ status: 'ok', source: 'device' });

    rig.estop(true);
    await until(() => core.devices.view(DEV)!.interlock_events.some((x) => x.kind === 'estop'), 5000, 'estop event');
    expect(core.devices.view(DEV)!.state?.estop).toBe(true);
    // The e-stop switched the sensor supply off (active low: HIGH is off).
    expect(rig.pinLevel(SUPPLY_PIN)).toBe(1);
    // The device's status tells an agent what it may still do.
    const status = ((await e.call('get_device_status', { device_id: DEV })) as CallToolResult).content[0] as { text: string };
    expect(status.text).toContain('E-STOP LATCHED: every output is off until an operator clears it (estop_clear); sensors can still be read (read_sensor).');
    // The latch re-asserts every output off before each command (duty 0); nothing may write more.
    const driven: number[] = [];
    rig.on('pwm', (p: number, duty: number) => {
      if ((p === FAN_PIN || p === SERVO_PIN) && duty !== 0) driven.push(duty);
    });

    // Read on the device while latched: the ACS712 (not on the switched supply) gives its current.
    const amps = await read({ device_id: DEV, sensor: 'heater_current' });
    expect(amps.r, JSON.stringify(amps.r)).toMatchObject({ status: 'ok', source: 'device', unit: 'A' });
    expect(Math.abs(amps.r.value! - 1.5)).toBeLessThan(0.15);
    expect(Date.parse(amps.r.measured_at!)).toBeGreaterThan(Date.parse(powered.r.measured_at!));
    expect(amps.r.command_id).not.toBeNull();
    expect(core.status(amps.r.command_id!)).toMatchObject({ state: 'completed', action: 'sensor.read' });
    // The SHT3x lost its supply with the e-stop: it reads BUS_NAK, never its value from before.
    const unpowered = await read({ device_id: DEV, sensor: 'air_temp' });
    expect(unpowered.r, JSON.stringify(unpowered.r)).toMatchObject({ status: 'BUS_NAK', value: null, source: 'device' });

    // Every output stays refused, and nothing reaches its pin.
    const relay = (await e.act('relay_set', { device_id: DEV, channel: 'sensor power', on: true })).final;
    expect(relay).toMatchObject({ state: 'rejected', error_code: 'ESTOP_LATCHED', executed: false });
    expect(rig.pinLevel(SUPPLY_PIN)).toBe(1);
    expect(await tool('fan_set', { device_id: DEV, fan: 'fan', duty: 60 })).toMatchObject({ state: 'rejected', error_code: 'ESTOP_LATCHED' });
    expect(await tool('servo_set', { device_id: DEV, servo: 'vent', angle: 90 })).toMatchObject({ state: 'rejected', error_code: 'ESTOP_LATCHED' });
    expect(driven).toEqual([]);
    expect(rig.fan('fan').rpm).toBe(0);
    expect(core.devices.view(DEV)!.state?.estop).toBe(true);
  });
});
