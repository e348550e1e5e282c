// Host-core behaviour for motion commands: arguments checked before sending, the deadline from the
// motion profile, progress and result positions. A scripted device on an in-memory Link and a virtual
// clock (split from host-core.test.ts).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { FakeDevice, flush } from './helpers/fake-device.js';
import type { BoardDef } from '@proofrig/protocol';
import { SECRET, core, useHostCore } from './helpers/host-core-fixture.js';

useHostCore();

describe('motion commands', () => {
  const stepperBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8'));
  const axisState = (pos: number, moving = false) => ({ axis: 'x', pos, cmd: pos, moving, homed: true, fault: false, home: pos === 0, limit: false });

  async function stepperOnline() {
    core.provision('slide', SECRET, stepperBoard);
    const d = new FakeDevice(core, 'slide', SECRET, 'boot0001', 'stepper-rig');
    await d.connect();
    d.answerStateQuery({ up: 1, relays: [], axes: [axisState(0)] });
    await flush();
    return d;
  }

  it('a speed below the slowest step rate the firmware drives is refused INVALID_ARGS (no Infinity estimate, no clamped deadline)', async () => {
    await stepperOnline();
    for (const speed of [5e-324, 1e-5, 0.2]) {
      const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 10, speed } });
      expect(s).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
      expect(s.detail).toMatch(/speed must be a number in \[0.25, 30\] mm\/s.*50 Hz/);
      expect(Number.isFinite(s.estimated_seconds)).toBe(true);
    }
  });

  it('a target outside travel is rejected before anything is sent', async () => {
    const d = await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 250 } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(s.detail).toMatch(/outside the travel of axis x: 0..200 mm/);
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });

  it('the deadline covers the move duration from the motion profile', async () => {
    await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    // 150 mm at 30 mm/s with 200 mm/s² takes 5.15 s; ×1.5 plus link and processing terms
    expect(s.estimated_seconds).toBeGreaterThan(5.15);
    expect(s.deadline_ms!).toBeGreaterThan(5150 * 1.5);
  });

  it('progress frames carry the measured position into the status', async () => {
    const d = await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'ack', rid, st: 'accepted' });
    d.send({ t: 'prog', rid, pct: 40, pos: 60.04 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'running', progress_pct: 40, position_mm: 60.04 });
  });

  it("a result's position is the commanded axis's own, whatever other axes the state lists first", async () => {
    const d = await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'res', rid, st: 'completed', ev: 'encoder', ver: true, s: { up: 2, relays: [], axes: [{ ...axisState(5), axis: 'y' }, axisState(150)] }, ms: 3600 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', position_mm: 150 });
  });

  it('a failed move whose position the encoder verified is still not verified: verified means proven completed', async () => {
    const d = await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'res', rid, st: 'failed', ev: 'encoder', ver: true, code: 'POSITION_ERROR', msg: 'x: stopped at 149.2 mm', s: { up: 2, relays: [], axes: [axisState(149.2)] }, ms: 3600 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'failed', error_code: 'POSITION_ERROR', evidence: 'encoder', executed: true, verified: false, position_mm: 149.2 });
  });

  it('after a stall the axis is refused STATE_READ_REQUIRED until its state is read from the device', async () => {
    const d = await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'res', rid, st: 'failed', ev: 'encoder', ver: false, code: 'MOTOR_STALL', msg: 'x: driver FAULT at 70.02 mm', s: { up: 2, relays: [], axes: [axisState(70.02)] }, ms: 3600 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'failed', error_code: 'MOTOR_STALL', position_mm: 70.02 });
    const retry = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    expect(retry).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    expect(retry.detail).toMatch(/MOTOR_STALL at 70.02 mm.*refresh=true/);
    // Asking again does not get round it: the refusal never reached the axis and is not its last motion.
    expect(await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } })).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    // Read the real state, then the axis may move again.
    const status = core.deviceStatus('slide', true);
    await flush();
    d.answerStateQuery({ up: 3, relays: [], axes: [axisState(70.02)] });
    await flush();
    expect((await status)!.source).toBe('device');
    expect((await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 10 } })).state).toBe('sent');
  });

  it('cancel of a running move sends stop for its axis; relay commands cannot be recalled', async () => {
    const d = await stepperOnline();
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const r = (await core.commands.cancel(s.command_id))!;
    expect(r.stop).toMatchObject({ action: 'stop', args: { axis: 'x' }, state: 'sent' });
    await flush();
    expect(d.of('cmd').map((c) => c.a)).toEqual(['stepper.move', 'stop']);
    const relay = await core.submit({ device_id: 'slide', action: 'relay.set', args: { ch: 1, on: true } });
    const rr = (await core.commands.cancel(relay.command_id))!;
    expect(rr.stop).toBeNull();
    expect(rr.reason).toMatch(/cannot be recalled/);
  });
});
