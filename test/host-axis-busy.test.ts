// One motion at a time per axis, decided by the host: a move or homing while another one on the
// same axis is still open is refused BUSY before anything is sent, so a motion can never reach an
// axis whose previous motion ended in a fault in the same instant (chaos seed 7).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import Database from 'better-sqlite3';
import { HostCore } from '../host/src/core/host.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef } from '@proofrig/protocol';
import { FakeDevice, flush } from './helpers/fake-device.js';

const stepperBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8'));
const SECRET = 'a'.repeat(64);
const axisState = (pos: number) => ({ axis: 'x', pos, cmd: pos, moving: false, homed: true, fault: false, home: pos === 0, limit: false });

let clock: VirtualClock;
let core: HostCore;
let dbPath: string;
const makeCore = () => new HostCore({ db: dbPath, clock, logger: pino({ level: 'silent' }), heartbeatMs: 1000 });

beforeEach(() => {
  clock = new VirtualClock(1_700_000_000_000);
  dbPath = join(mkdtempSync(join(tmpdir(), 'proofrig-busy-')), 'journal.db');
  core = makeCore();
  core.provision('slide', SECRET, stepperBoard);
});
afterEach(() => core.close());

async function slide() {
  const d = new FakeDevice(core, 'slide', SECRET, 'boot0001', 'stepper-rig');
  await d.connect();
  d.answerStateQuery({ up: 1, relays: [], axes: [axisState(0)] });
  await flush();
  return d;
}
const move = (mm: number, request_id?: string) => core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm }, request_id });

describe('one motion at a time per axis', () => {
  it('a move while a move on the axis is open is refused BUSY, naming it, and nothing is sent', async () => {
    const d = await slide();
    const a = await move(150);
    await flush();
    for (const second of [await move(20), await core.submit({ device_id: 'slide', action: 'stepper.home', args: { axis: 'x' } })]) {
      expect(second).toMatchObject({ state: 'rejected', error_code: 'BUSY', accepted: false, executed: false });
      expect(second.detail).toBe(`axis x is still running stepper.move ${a.command_id} (sent); this one was refused, not queued: wait for its outcome with get_action_status (or stop it), read the state, then send again`);
    }
    await flush();
    expect(d.of('cmd').map((f) => f.rid)).toEqual([a.request_id]);
  });

  it('a move submitted in the same instant its predecessor fails is never sent, however the two are ordered (chaos seed 7)', async () => {
    const d = await slide();
    const a = await move(150);
    await flush();
    const rid = d.of('cmd')[0].rid;
    // The move arrives first, the fault result of the open one right after, in the same instant.
    const b = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 198.4 } });
    d.send({ t: 'res', rid, st: 'failed', ev: 'encoder', ver: false, code: 'LIMIT_HIT', msg: 'x: limit switch closed at 120.00 mm', s: { up: 2, relays: [], axes: [axisState(120)] }, ms: 3000 });
    await flush();
    expect(await b).toMatchObject({ state: 'rejected', error_code: 'BUSY' });
    expect(core.status(a.command_id)).toMatchObject({ state: 'failed', error_code: 'LIMIT_HIT' });
    // After the fault, a new move waits for a state read as before.
    expect(await move(198.4)).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    await flush();
    expect(d.of('cmd').map((f) => f.rid)).toEqual([rid]);
  });

  it('once the open move completed, the next one is sent; a repeat of the open one is still the same command', async () => {
    const d = await slide();
    const a = await move(150, 'agent-1');
    await flush();
    expect((await move(150, 'agent-1')).command_id).toBe(a.command_id);
    d.send({ t: 'res', rid: 'agent-1', st: 'completed', ev: 'encoder', ver: true, s: { up: 2, relays: [], axes: [axisState(150)] }, ms: 5000 });
    await flush();
    expect(await move(20)).toMatchObject({ state: 'sent' });
  });

  it('a move while the axis is homing is refused BUSY', async () => {
    const d = await slide();
    const h = await core.submit({ device_id: 'slide', action: 'stepper.home', args: { axis: 'x' } });
    await flush();
    expect(await move(20)).toMatchObject({ state: 'rejected', error_code: 'BUSY', detail: expect.stringContaining(`stepper.home ${h.command_id}`) });
    await flush();
    expect(d.of('cmd').map((f) => f.a)).toEqual(['stepper.home']);
  });

  it('an open stop of the axis does not hold back the next move', async () => {
    const d = await slide();
    await move(150, 'agent-1');
    await flush();
    d.send({ t: 'res', rid: 'agent-1', st: 'completed', ev: 'encoder', ver: true, s: { up: 2, relays: [], axes: [axisState(150)] }, ms: 5000 });
    await flush();
    expect(await core.submit({ device_id: 'slide', action: 'stop', args: { axis: 'x' } })).toMatchObject({ state: 'sent' });
    expect(await move(20)).toMatchObject({ state: 'sent' });
    await flush();
    expect(d.of('cmd').map((f) => f.a)).toEqual(['stepper.move', 'stop', 'stepper.move']);
  });

  it('a motion open on one axis or one device does not hold back another axis or another device', async () => {
    const x = stepperBoard.steppers![0]!;
    const twoAxes: BoardDef = { ...stepperBoard, steppers: [x, { ...x, axis: 'y', name: 'lift', label: 'lift' }] };
    core.provision('gantry', SECRET, twoAxes);
    const d = await slide();
    const g = new FakeDevice(core, 'gantry', SECRET, 'boot0002', 'stepper-rig');
    await g.connect();
    g.answerStateQuery({ up: 1, relays: [], axes: [axisState(0), { ...axisState(0), axis: 'y' }] });
    await flush();
    expect(await move(150)).toMatchObject({ state: 'sent' });
    const gx = await core.submit({ device_id: 'gantry', action: 'stepper.move', args: { axis: 'x', mm: 100 } });
    expect(gx).toMatchObject({ state: 'sent' });
    expect(await core.submit({ device_id: 'gantry', action: 'stepper.move', args: { axis: 'y', mm: 100 } })).toMatchObject({ state: 'sent' });
    expect(await core.submit({ device_id: 'gantry', action: 'stepper.move', args: { axis: 'x', mm: 50 } })).toMatchObject({ state: 'rejected', error_code: 'BUSY', detail: expect.stringContaining(gx.command_id) });
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
    expect(g.of('cmd').map((f) => f.p)).toEqual([{ axis: 'x', mm: 100 }, { axis: 'y', mm: 100 }]);
  });

  it('relays are not held back by a moving axis', async () => {
    await slide();
    await move(150);
    expect(await core.submit({ device_id: 'slide', action: 'relay.set', args: { ch: 1, on: true } })).toMatchObject({ state: 'sent' });
  });
});

describe("a refusal of the moment does not use up the request_id; the device's own answer does", () => {
  it('BUSY keeps the request_id the agent sent; the same request_id is refused again while the axis moves and runs once it is free', async () => {
    const d = await slide();
    await move(150, 'agent-1');
    await flush();
    const busy = await move(20, 'agent-2');
    expect(busy).toMatchObject({ state: 'rejected', error_code: 'BUSY', request_id: 'agent-2' });
    const still = await move(20, 'agent-2');
    expect(still).toMatchObject({ state: 'rejected', error_code: 'BUSY', request_id: 'agent-2' });
    expect(still.command_id).not.toBe(busy.command_id);
    d.send({ t: 'res', rid: 'agent-1', st: 'completed', ev: 'encoder', ver: true, s: { up: 2, relays: [], axes: [axisState(150)] }, ms: 5000 });
    await flush();
    const run = await move(20, 'agent-2');
    expect(run).toMatchObject({ state: 'sent', request_id: 'agent-2' });
    // the refusals stay what they were, under their own ids; from now on agent-2 names the move that was sent
    expect(core.status(busy.command_id)).toMatchObject({ state: 'rejected', error_code: 'BUSY' });
    expect((await move(20, 'agent-2')).command_id).toBe(run.command_id);
    await flush();
    expect(d.of('cmd').map((f) => f.rid)).toEqual(['agent-1', 'agent-2']);
  });

  it('STATE_READ_REQUIRED: the same request_id runs once the state has been read, and only once', async () => {
    const d = await slide();
    await move(150, 'agent-1');
    await flush();
    d.send({ t: 'res', rid: 'agent-1', st: 'failed', ev: 'encoder', ver: false, code: 'MOTOR_STALL', msg: 'x: driver FAULT at 70.02 mm', s: { up: 2, relays: [], axes: [axisState(70.02)] }, ms: 3600 });
    await flush();
    expect(await move(10, 'agent-2')).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED', request_id: 'agent-2' });
    const status = core.deviceStatus('slide', true);
    await flush();
    d.answerStateQuery({ up: 3, relays: [], axes: [axisState(70.02)] });
    await status;
    const run = await move(10, 'agent-2');
    expect(run).toMatchObject({ state: 'sent', request_id: 'agent-2' });
    expect((await move(10, 'agent-2')).command_id).toBe(run.command_id);
    await flush();
    expect(d.of('cmd').map((f) => f.rid)).toEqual(['agent-1', 'agent-2']);
  });

  it('a BUSY or NOT_HOMED the device answered is that request\'s result: the same request_id returns it and sends nothing', async () => {
    const d = await slide();
    for (const [rid, code] of [['agent-b', 'BUSY'], ['agent-n', 'NOT_HOMED']] as const) {
      const a = await move(30, rid);
      await flush();
      d.send({ t: 'res', rid, st: 'rejected', ev: 'none', ver: false, code, msg: 'x: refused by the device', s: { up: 2, relays: [], axes: [axisState(0)] }, ms: 1 });
      await flush();
      expect(core.status(a.command_id)).toMatchObject({ state: 'rejected', error_code: code });
      expect((await move(30, rid)).command_id).toBe(a.command_id);
    }
    await flush();
    expect(d.of('cmd').map((f) => f.rid)).toEqual(['agent-b', 'agent-n']);
  });

  it('a journal from when only DEVICE_OFFLINE freed its request_id is migrated on open: a retry after BUSY runs', async () => {
    core.close();
    const db = new Database(dbPath);
    db.exec("DROP INDEX IF EXISTS commands_request_rid; CREATE UNIQUE INDEX commands_request_sent ON commands(device_id, request_id) WHERE NOT (state = 'rejected' AND error_code = 'DEVICE_OFFLINE')");
    db.close();
    core = makeCore();
    const d = await slide();
    await move(150, 'agent-1');
    await flush();
    expect(await move(20, 'agent-2')).toMatchObject({ state: 'rejected', error_code: 'BUSY' });
    d.send({ t: 'res', rid: 'agent-1', st: 'completed', ev: 'encoder', ver: true, s: { up: 2, relays: [], axes: [axisState(150)] }, ms: 5000 });
    await flush();
    expect(await move(20, 'agent-2')).toMatchObject({ state: 'sent', request_id: 'agent-2' });
  });
});
