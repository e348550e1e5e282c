// A relay proven by its load current, end to end on every engine (issue 28): the real MCP client →
// relay_set → host core → the built firmware switching the climate rig's heater relay and reading
// the INA219 in series with the heater over I2C. Completed with evidence load_current only when the
// current crossed its threshold; a coil that switched with no current flowing (the heater's fuse
// out) fails NO_FEEDBACK with the amps measured; a current sensor that gave no value fails the
// command with its code, never completed. The ACS712 on the ADC can be the witness as well. And the
// INA219 read on its own: ok, BUS_NAK, overflow, no conversion ready.
import { afterEach, describe, expect } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { enginesUnderTest, picked, type Tier } from './helpers/engines.js';
import { startE2E, type E2E } from './helpers/e2e.js';

const BOARD = new URL('../boards/climate-rig.json', import.meta.url).pathname;
const DEV = 'climate-rig';
/** K1, the heater: active low on GPIO23, load_current feedback from heater_amps (on above 0.5 A, off below 0.1 A). */
const HEATER_PIN = 23;

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

const start = (engine: Tier) => startE2E({ engine, sims: [{ boardFile: BOARD }], device: DEV });

async function heater(on: boolean, request_id?: string) {
  const r = await e!.call('relay_set', { device_id: DEV, channel: 'heater', on, ...(request_id ? { request_id } : {}) });
  if (r.isError) throw new Error(JSON.stringify(r.content));
  const id = (r.structuredContent as { command_id: string }).command_id;
  const final = await e!.waitTerminal(id);
  const st = await e!.call('get_action_status', { command_id: id });
  return { final, first: ((st as CallToolResult).content[0] as { text: string }).text.split('\n')[0]! };
}

async function read(sensor: string) {
  const res = (await e!.call('read_sensor', { device_id: DEV, sensor })) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  return res.structuredContent as { status: string; value: number | null; detail: string | null };
}

describe.each(enginesUnderTest())('on the %s engine', (engine) => {
  picked(engine, true)('heater on: completed by its load current with the amps; off: completed once the current is below off_below', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.sensors!.setLoad(1, 2.1);

    const on = await heater(true);
    expect(on.final, e.story(on.final)).toMatchObject({ state: 'completed', evidence: 'load_current', verified: true, error_code: null });
    expect(on.final.detail).toBe('K1: load current 2.10 A on heater_amps 25 ms after switching on, above 0.5 A');
    expect(on.first).toBe(`Command ${on.final.command_id} (switch relay channel 1 of ${DEV} on): DONE and verified by its load current (2.1 A). K1: load current 2.10 A on heater_amps 25 ms after switching on, above 0.5 A`);
    // The reading the verdict used is the sensor's last reading in the state snapshot.
    expect(on.final.device_state!.sensors!.find((s) => s.id === 'heater_amps')).toMatchObject({ st: 'ok', v: 2.1 });

    // 40 mA of standby draw stays below off_below (0.1 A): off is verified.
    rig.sensors!.setValue('heater_amps', 0.04);
    const off = await heater(false);
    expect(off.final, e.story(off.final)).toMatchObject({ state: 'completed', evidence: 'load_current', verified: true });
    expect(off.final.detail).toBe('K1: load current 0.04 A on heater_amps 25 ms after switching off, below 0.1 A');
  });

  picked(engine, true)('the heater fuse out (open_load): the coil switches, no current flows: failed NO_FEEDBACK with the amps, never completed', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.setFault('relay1', 'open_load');
    const on = await heater(true);
    expect(on.final, e.story(on.final)).toMatchObject({ state: 'failed', evidence: 'load_current', verified: false, error_code: 'NO_FEEDBACK' });
    expect(on.final.detail).toBe(
      'K1: load current 0.00 A on heater_amps 25 ms after switching on, not above 0.5 A: the output switched but the load draws no current (a blown lamp, a fuse out, an open wire)',
    );
    // The relay did switch: the contact is closed, only the load is missing.
    expect(rig.relay(1).contactClosed).toBe(true);
  });

  picked(engine, false)('off while the load still draws current (a welded contact): failed NO_FEEDBACK', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.sensors!.setLoad(1, 1.8);
    expect((await heater(true)).final.state).toBe('completed');
    rig.setFault('relay1', 'welded');
    const off = await heater(false);
    expect(off.final, e.story(off.final)).toMatchObject({ state: 'failed', evidence: 'load_current', error_code: 'NO_FEEDBACK' });
    expect(off.final.detail).toBe('K1: load current 1.80 A on heater_amps 25 ms after switching off, not below 0.1 A: the load still draws current (a welded contact or another path)');
  });

  picked(engine, false)('the current sensor unplugged or overflowing: the heater command fails with its code, never completed', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.setSensorFault('heater_amps', 'unplugged');
    const nak = await heater(true);
    expect(nak.final, e.story(nak.final)).toMatchObject({ state: 'failed', evidence: 'load_current', verified: false, error_code: 'BUS_NAK' });
    expect(nak.final.detail).toBe(
      'K1: switched on, but its load current could not be measured, so it is not verified: heater_amps: no acknowledge from the INA219 at I2C address 64 (unplugged, unpowered or wrong address); no value',
    );

    rig.setSensorFault('heater_amps', null);
    rig.sensors!.setLoad(1, 3.5); // 350 mV across 0.1 ohm: beyond the ±320 mV shunt input
    const ovf = await heater(true);
    expect(ovf.final, e.story(ovf.final)).toMatchObject({ state: 'failed', error_code: 'OUT_OF_RANGE' });
    expect(ovf.final.detail).toMatch(/heater_amps: the INA219 at I2C address 64 set its overflow flag \(OVF\)/);
  });

  picked(engine, false)('a frozen INA219 (stuck: no new conversion since its last reading) cannot prove the heater off: BUS_NAK, never completed', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.sensors!.setLoad(1, 2.1);
    expect((await heater(true)).final.state).toBe('completed');
    rig.setSensorFault('heater_amps', 'stuck'); // its registers keep saying 2.1 A
    const off = await heater(false);
    expect(off.final, e.story(off.final)).toMatchObject({ state: 'failed', evidence: 'load_current', verified: false, error_code: 'BUS_NAK' });
    expect(off.final.detail).toBe(
      'K1: switched off, but its load current could not be measured, so it is not verified: heater_amps: the INA219 at I2C address 64 answered with no conversion ready (CNVR 0: no new conversion since its last reading or power-up); no value',
    );
  });

  picked(engine, false)('a repeated request_id replays the verdict without touching the heater pin', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.sensors!.setLoad(1, 2.1);
    const a = await heater(true, 'heat-1');
    expect(a.final.state).toBe('completed');
    const writes = rig.writes(HEATER_PIN);
    rig.setFault('relay1', 'open_load'); // a second execution would now fail: a replay does not execute
    const b = await heater(true, 'heat-1');
    expect(b.final.command_id).toBe(a.final.command_id);
    expect(b.final).toMatchObject({ state: 'completed', evidence: 'load_current', detail: a.final.detail });
    expect(rig.writes(HEATER_PIN)).toBe(writes);
  });

  picked(engine, false)('the ACS712 on the ADC as the witness instead: heater on completed by its load current, fuse out failed NO_FEEDBACK', async () => {
    // The same rig with K1's feedback naming the ACS712 (an ADC input in A) instead of the INA219.
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-acs-'));
    try {
      const b = JSON.parse(readFileSync(BOARD, 'utf8'));
      b.relays[0].feedback.sensor = 'heater_current';
      const file = join(dir, 'climate-acs.json');
      writeFileSync(file, JSON.stringify(b));
      e = await startE2E({ engine, sims: [{ boardFile: file }], device: DEV });
      const rig = e.running.rigs.get(DEV)!;
      rig.sensors!.setLoad(1, 2.0);
      const on = await heater(true);
      expect(on.final, e.story(on.final)).toMatchObject({ state: 'completed', evidence: 'load_current', verified: true });
      expect(on.final.detail).toMatch(/^K1: load current [12]\.\d\d A on heater_current 25 ms after switching on, above 0\.5 A$/);
      rig.setFault('relay1', 'open_load');
      const blown = await heater(true);
      expect(blown.final, e.story(blown.final)).toMatchObject({ state: 'failed', evidence: 'load_current', error_code: 'NO_FEEDBACK' });
      expect(blown.final.detail).toMatch(/^K1: load current -?0\.\d\d A on heater_current 25 ms after switching on, not above 0\.5 A/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  picked(engine, false)('read_sensor on the INA219: the amps with the heater on, BUS_NAK unplugged, OUT_OF_RANGE on overflow, BUS_NAK with no conversion ready', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    expect(await read('heater_amps')).toMatchObject({ status: 'ok', value: 0 });
    rig.sensors!.setLoad(1, 2.1);
    expect((await heater(true)).final.state).toBe('completed');
    expect(await read('heater load current')).toMatchObject({ status: 'ok', value: 2.1 });

    rig.setSensorFault('heater_amps', 'unplugged');
    expect(await read('heater_amps')).toMatchObject({ status: 'BUS_NAK', value: null });
    rig.setSensorFault('heater_amps', 'slow');
    const slow = await read('heater_amps');
    expect(slow).toMatchObject({ status: 'BUS_NAK', value: null });
    expect(slow.detail).toMatch(/answered with no conversion ready \(CNVR 0/);
    rig.setSensorFault('heater_amps', null);
    rig.sensors!.setValue('heater_amps', 1.5); // 1.5 A more on the same shunt: 360 mV
    expect(await read('heater_amps')).toMatchObject({ status: 'OUT_OF_RANGE', value: null });
  });

  // Noise is not a fault the device can name: a noisy reading is still what the sensor gave. What holds
  // is the range check: every reading is a number inside the plausible range, or OUT_OF_RANGE with none.
  picked(engine, false)('noisy current sensors read numbers scattered around the current, each one in range or OUT_OF_RANGE with no value', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    rig.sensors!.setLoad(1, 2.1);
    expect((await heater(true)).final.state).toBe('completed');
    const spread = async (sensor: string, min: number, max: number) => {
      const ok: number[] = [];
      for (let k = 0; k < 12; k++) {
        const r = await read(sensor);
        if (r.status === 'ok') {
          expect(r.value, JSON.stringify(r)).toBeGreaterThanOrEqual(min);
          expect(r.value, JSON.stringify(r)).toBeLessThanOrEqual(max);
          ok.push(r.value!);
        } else expect(r, JSON.stringify(r)).toMatchObject({ status: 'OUT_OF_RANGE', value: null });
      }
      return ok.length ? Math.max(...ok) - Math.min(...ok) : 0;
    };
    // Clean: the ACS712's 8-sample average and the INA219 both read the heater's 2.1 A closely.
    expect(await spread('heater_current', -0.5, 5.5)).toBeLessThan(0.2);
    expect(await spread('heater_amps', -0.2, 3.0)).toBe(0);
    // Noisy (the ADC with 40x its noise, the INA219 with 2 % of its shunt range): scattered readings.
    rig.setSensorFault('heater_current', 'noisy');
    rig.setSensorFault('heater_amps', 'noisy');
    expect(await spread('heater_current', -0.5, 5.5)).toBeGreaterThan(0.5);
    expect(await spread('heater_amps', -0.2, 3.0)).toBeGreaterThan(0.02);
  });
});
