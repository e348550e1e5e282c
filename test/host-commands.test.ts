// Host-core command handling, pinned to its exact answers: what an agent reads in a refusal, the
// status view of a command, and the retries a request_id allows. A scripted device on an
// in-memory link and a virtual clock. (`await` on submit: its answer is the status either way.)
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HostCore } from '../host/src/core/host.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef } from '@proofrig/protocol';
import { FakeDevice, flush } from './helpers/fake-device.js';

const relayBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const stepperBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8'));
const SECRET = 'a'.repeat(64);
const T0 = 1_700_000_000_000;
const axisState = (pos: number) => ({ axis: 'x', pos, cmd: pos, moving: false, homed: true, fault: false, home: pos === 0, limit: false });

let clock: VirtualClock;
let core: HostCore;

beforeEach(() => {
  clock = new VirtualClock(T0);
  const db = join(mkdtempSync(join(tmpdir(), 'proofrig-cmds-')), 'journal.db');
  core = new HostCore({ db, clock, logger: pino({ level: 'silent' }), heartbeatMs: 1000, offlineGraceMs: 5000 });
  core.provision('rig1', SECRET, relayBoard);
  core.provision('slide', SECRET, stepperBoard);
});
afterEach(() => core.close());

async function online(dev = 'rig1', board = 'relay-rig-4ch', axes?: ReturnType<typeof axisState>[]) {
  const d = new FakeDevice(core, dev, SECRET, 'boot0001', board);
  await d.connect();
  const q = d.of('q').find((f) => f.rid === undefined);
  if (q) d.send({ t: 'state', q: q.q, s: axes ? { up: 1, relays: [], axes } : d.state() });
  await flush();
  return d;
}

describe('a refusal for an unreachable device says what the agent needs to know', () => {
  it('a provisioned device that never connected', async () => {
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'a1' });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE', request_id: 'a1', detail: 'device rig1 is offline (never connected); nothing was sent' });
  });

  it('a device that was online says when it was last seen and how long ago', async () => {
    const d = await online();
    d.link.close();
    await flush();
    clock.advance(2500);
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s.error_code).toBe('DEVICE_OFFLINE');
    expect(s.detail).toMatch(/^device rig1 is offline \(last seen \d{4}-\d\d-\d\dT[\d:.]+Z, \d+ ms ago\); nothing was sent$/);
    expect(Number(/, (\d+) ms ago/.exec(s.detail!)![1])).toBeGreaterThanOrEqual(2500);
  });

  it('an unknown device', async () => {
    const s = await core.submit({ device_id: 'ghost', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE', detail: 'no device "ghost" is provisioned on this host; list_devices shows the known ones' });
  });
});

describe('STATE_READ_REQUIRED', () => {
  it('keeps the caller’s request_id, names the failed motion, and a repeat of that request_id answers the same refusal', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'res', rid, st: 'failed', ev: 'encoder', ver: false, code: 'MOTOR_STALL', msg: 'x: driver FAULT at 70.02 mm', s: { up: 2, relays: [], axes: [axisState(70.02)] }, ms: 3600 });
    await flush();
    const r = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 }, request_id: 'move-2' });
    expect(r).toMatchObject({
      state: 'rejected',
      error_code: 'STATE_READ_REQUIRED',
      request_id: 'move-2',
      detail: `axis x ended its last motion ${s.command_id} failed MOTOR_STALL at 70.02 mm; read its real state with get_device_status refresh=true before moving it again`,
    });
    const again = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 }, request_id: 'move-2' });
    expect(again.command_id).toBe(r.command_id);
    // A relay command on the same device is not a motion: it is not held back.
    expect((await core.submit({ device_id: 'slide', action: 'relay.set', args: { ch: 1, on: true } })).state).toBe('sent');
  });
});
