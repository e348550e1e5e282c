// A PWM fan proven by its tachometer, and a hobby servo that says it is unverified (issue 28),
// end to end: the real MCP client → fan_set / servo_set → host core → the built firmware writing
// LEDC PWM with analogWrite and counting the tach's pulses with setWatch on the climate rig, on
// every engine. A fan is `completed` only when its measured speed is within tolerance of its curve;
// a stalled fan, an unplugged tach wire or a noisy tach line fail NO_FEEDBACK with the rpm measured;
// a servo move is never better than unverified.
import { afterEach, describe, expect } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CommandStatus } from '@proofrig/host/core';
import { picked, tiersUnderTest, type Tier } from './helpers/engines.js';
import { startE2E, until, type E2E } from './helpers/e2e.js';

const BOARD = new URL('../boards/climate-rig.json', import.meta.url).pathname;
const DEV = 'climate-rig';
/** The exhaust fan's PWM pin and the vent servo's, as boards/climate-rig.json wires them. */
const FAN_PIN = 27;
const SERVO_PIN = 13;

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

async function start(engine: Tier, faults?: string[]): Promise<E2E> {
  const x = await startE2E({ engine, sims: [{ boardFile: BOARD }], device: DEV, faults });
  await x.waitOnline();
  return x;
}

/** analogWrite calls the rig saw on a pin from now on. */
function pwmWrites(x: E2E, pin: number): { n: number; duties: number[] } {
  const seen = { n: 0, duties: [] as number[] };
  x.running.rigs.get(DEV)!.on('pwm', (p: number, duty: number) => {
    if (p !== pin) return;
    seen.n++;
    seen.duties.push(duty);
  });
  return seen;
}

async function tool(name: string, args: Record<string, unknown>): Promise<{ c: CommandStatus; first: string }> {
  const res = (await e!.call(name, args)) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  const c = res.structuredContent as unknown as CommandStatus;
  return { c, first: (res.content[0] as { text: string }).text.split('\n')[0]! };
}

const fanOf = (c: CommandStatus) => c.device_state!.fans!.find((f) => f.id === 'fan')!;

describe.each(tiersUnderTest())('on the %s engine', (engine) => {
  picked(engine, true)('fan_set 60 %: completed by its tachometer with the measured rpm; the same request_id replays without touching the pin', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    const writes = pwmWrites(e, FAN_PIN);
    const { c, first } = await tool('fan_set', { name: 'exhaust fan', duty: 60, request_id: 'fan-60' });
    expect(c, e.story(c)).toMatchObject({ state: 'completed', evidence: 'tachometer', verified: true, error_code: null });
    // The curve: 800 rpm at 20 % to 4000 rpm at 100 %, so 2400 rpm at 60 %, within 15 %.
    const rpm = fanOf(c).rpm!;
    expect(Math.abs(rpm - 2400), e.story(c)).toBeLessThanOrEqual(2400 * 0.05);
    expect(fanOf(c).duty).toBe(60);
    expect(first).toBe(`fan exhaust fan (fan on climate-rig) runs at ${rpm.toLocaleString('en-US')} rpm (expected 2,400 ±15 %) at 60 %: DONE and verified by its tachometer.`);
    expect(writes.duties).toEqual([0.6]);
    expect(Math.abs(rig.fan('fan').rpm - 2400)).toBeLessThanOrEqual(2400 * 0.02);

    const again = await tool('fan_set', { name: 'exhaust fan', duty: 60, request_id: 'fan-60' });
    expect(again.c.command_id).toBe(c.command_id);
    expect(again.c).toMatchObject({ state: 'completed', evidence: 'tachometer' });
    expect(fanOf(again.c).rpm).toBe(rpm);
    expect(writes.n).toBe(1);
  });

  picked(engine, true)('a stalled fan and an unplugged tach wire fail NO_FEEDBACK at 0 rpm; a noisy tach line fails NO_FEEDBACK too fast; never completed', async () => {
    // Stalled from the start, as `proofrig serve --fault climate-rig:fan:stalled` starts it.
    e = await start(engine, ['climate-rig:fan:stalled']);
    const rig = e.running.rigs.get(DEV)!;
    const stalled = await tool('fan_set', { device_id: DEV, fan: 'fan', duty: 60 });
    expect(stalled.c, e.story(stalled.c)).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK', verified: false });
    expect(fanOf(stalled.c)).toMatchObject({ duty: 60, rpm: 0 });
    expect(stalled.first).toBe('fan exhaust fan (fan on climate-rig) was set to 60 % but its tachometer measured 0 rpm (expected 2,400 ±15 %): FAILED (NO_FEEDBACK), no tach pulses: stalled, unplugged or without power. Read the device state before trying again.');
    expect(stalled.c.detail).toMatch(/^fan: 0 rpm over 500 ms \(0 tach pulses on GPIO39\) 1500 ms after setting 60 %, expected 2400 rpm \+-15 %: no tach pulses/);

    // Unplugged: the rotor turns, but its tach wire is off, so nothing proves it.
    rig.setFault('fan', 'unplugged');
    const unplugged = await tool('fan_set', { device_id: DEV, fan: 'exhaust fan', duty: 80 });
    expect(unplugged.c, e.story(unplugged.c)).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK' });
    expect(fanOf(unplugged.c)).toMatchObject({ duty: 80, rpm: 0 });
    expect(rig.fan('fan').rpm).toBeGreaterThan(3000);

    // A noisy tach line counts glitches as pulses: the speed measured is too high to be the fan's.
    rig.setFault('fan', 'tach_noise');
    const noisy = await tool('fan_set', { device_id: DEV, fan: 'fan', duty: 60 });
    expect(noisy.c, e.story(noisy.c)).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK' });
    expect(fanOf(noisy.c).rpm!).toBeGreaterThan(2400 * 1.15);
    expect(noisy.c.detail).toMatch(/too fast/);
    expect(noisy.first).toMatch(/^fan exhaust fan \(fan on climate-rig\) was set to 60 % but its tachometer measured [\d,]+ rpm \(expected 2,400 ±15 %\): FAILED \(NO_FEEDBACK\), outside the tolerance of its curve\./);
  });

  picked(engine, false)('duty 0 stops the fan: completed by its tachometer once it has spun down', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    const on = await tool('fan_set', { name: 'exhaust fan', duty: 100 });
    expect(on.c, e.story(on.c)).toMatchObject({ state: 'completed', evidence: 'tachometer' });
    const off = await tool('fan_set', { name: 'exhaust fan', duty: 0 });
    expect(off.c, e.story(off.c)).toMatchObject({ state: 'completed', evidence: 'tachometer', verified: true });
    expect(fanOf(off.c)).toMatchObject({ duty: 0, rpm: 0 });
    expect(off.first).toBe('fan exhaust fan (fan on climate-rig) stopped (its tachometer measured 0 rpm at 0 %): DONE and verified by its tachometer.');
    expect(rig.fan('fan').rpm).toBe(0);
  });

  picked(engine, true)('servo_set ends unverified with the time the move needs, never completed; the horn gets there', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(DEV)!;
    const writes = pwmWrites(e, SERVO_PIN);
    // From an unknown angle the move may cross the whole 0..180° range: 180° at 300 °/s.
    const first = await tool('servo_set', { name: 'vent flap', angle: 90 });
    expect(first.c, e.story(first.c)).toMatchObject({ state: 'unverified', evidence: 'none', verified: false, error_code: null });
    expect(first.c.device_state!.servos).toEqual([{ id: 'vent', deg: 90, move_ms: 600, at: expect.any(Number) }]);
    expect(first.first).toBe('servo vent flap (vent on climate-rig) was sent to 90°: executed, but NOT verified: a hobby servo reports nothing, so nobody knows where it is. The move needs about 600 ms at 300 °/s. Tell the person it is unconfirmed.');
    // 1500 µs at 50 Hz is 7.5 % duty.
    expect(writes.duties).toEqual([0.075]);
    const second = await tool('servo_set', { device_id: DEV, servo: 'vent', angle: 30 });
    expect(second.c).toMatchObject({ state: 'unverified', evidence: 'none' });
    expect(second.c.device_state!.servos![0]).toMatchObject({ deg: 30, move_ms: 200 });
    expect(second.c.detail).toMatch(/^vent \(GPIO13\): 833 us pulses at 50 Hz for 30 deg; the move needs 200 ms at 300 deg\/s from 90 deg; nothing reports where the servo is/);
    await until(() => Math.abs(rig.servo('vent').deg - 30) < 0.01, 5000, 'the simulated horn at 30°');
  });

  picked(engine, false)('bad input (duty 120, an unknown fan, a duty under the curve, an angle outside the range) is refused and nothing is written', async () => {
    e = await start(engine);
    const fan = pwmWrites(e, FAN_PIN);
    const servo = pwmWrites(e, SERVO_PIN);
    const over = (await e.call('fan_set', { name: 'exhaust fan', duty: 120 })) as CallToolResult;
    expect(over.isError).toBe(true);
    expect(JSON.stringify(over.content)).toMatch(/duty must be 0\.\.100 \(percent\)/);

    const unknown = (await e.call('fan_set', { device_id: DEV, fan: 'heater', duty: 50 })) as CallToolResult;
    expect(unknown.isError).toBe(true);
    expect((unknown.content[0] as { text: string }).text).toBe('INVALID_ARGS: device climate-rig has no fan "heater"; fans: fan ("exhaust fan")');

    const low = await tool('fan_set', { name: 'exhaust fan', duty: 10 });
    expect(low.c).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(low.c.detail).toBe('duty 10 % is below 20 %, the lowest duty fan is known to run at (its curve); use 0 to stop it or at least 20');

    const wide = await tool('servo_set', { name: 'vent flap', angle: 200 });
    expect(wide.c).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(wide.c.detail).toBe('deg must be a number 0..180 (the angle range of vent), got 200');
    expect(fan.n + servo.n).toBe(0);
  });

  picked(engine, false)('list_devices shows the fan with its tachometer and the servo without feedback, and their state', async () => {
    e = await start(engine);
    await tool('servo_set', { name: 'vent flap', angle: 45 });
    const r = (await e.call('list_devices')) as CallToolResult;
    type View = { device_id: string; pwm: unknown[]; state: { fans?: unknown[]; servos?: unknown[] } | null };
    const d = (r.structuredContent as { devices: View[] }).devices.find((x) => x.device_id === DEV)!;
    expect(d.pwm).toEqual([
      { id: 'fan', label: 'exhaust fan', kind: 'fan', feedback: 'tachometer' },
      { id: 'vent', label: 'vent flap', kind: 'servo', feedback: 'none' },
    ]);
    expect(d.state!.fans).toEqual([{ id: 'fan', duty: 0, rpm: null, at: 0 }]);
    expect(d.state!.servos).toEqual([{ id: 'vent', deg: 45, move_ms: 600, at: expect.any(Number) }]);
    expect((r.content[0] as { text: string }).text.split('\n')[0]).toMatch(/fan fan at 0 %; servo vent sent to 45° \(unverified\)/);
  });
});
