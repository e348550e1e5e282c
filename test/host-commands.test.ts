// Host-core command handling, pinned to its exact answers: what an agent reads in a refusal, the
// status view of a command, and the retries a request_id allows. A scripted device on an
// in-memory link and a virtual clock. (`await` on submit: its answer is the status either way.)
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HostCore } from '../host/src/core/host.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef } from '@proofrig/protocol';
import { FakeDevice, flush } from './helpers/fake-device.js';

// Deadlines below are worked out with device_processing_max_ms at 80 ms; the board files' own figure is
// measured and held to the firmware's instruction budget (test/firmware-cost.test.ts, docs/performance.md).
const relayBoard: BoardDef = { ...(JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef), device_processing_max_ms: 80 };
const stepperBoard: BoardDef = { ...(JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8')) as BoardDef), device_processing_max_ms: 80 };
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
  d.answerStateQuery(axes ? { up: 1, relays: [], axes } : d.state());
  await flush();
  return d;
}

describe('a refusal for an unreachable device says what the agent needs to know', () => {
  it('a provisioned device that never connected', async () => {
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'a1' });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE', request_id: 'a1', detail: 'device rig1 is offline (never connected); nothing was sent' });
    // Never sent: it has no deadline.
    expect(s.deadline_ms).toBeNull();
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
  it('keeps the caller’s request_id, names the failed motion, and a repeat of that request_id before the read is refused again and sends nothing', async () => {
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
    expect(again).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED', request_id: 'move-2', detail: r.detail });
    expect(again.command_id).not.toBe(r.command_id);
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
    // A relay command on the same device is not a motion: it is not held back.
    expect((await core.submit({ device_id: 'slide', action: 'relay.set', args: { ch: 1, on: true } })).state).toBe('sent');
  });

  /** Run a motion on slide's axis x to its end: completed at `pos`, or failed MOTOR_STALL there. */
  async function motion(d: FakeDevice, action: 'stepper.move' | 'stepper.home', st: 'completed' | 'failed', pos: number) {
    const s = await core.submit({ device_id: 'slide', action, args: action === 'stepper.move' ? { axis: 'x', mm: 150 } : { axis: 'x' } });
    await flush();
    const rid = d.of('cmd').at(-1)!.rid;
    const res = st === 'completed' ? { ev: 'encoder', ver: true } : { ev: 'encoder', ver: false, code: 'MOTOR_STALL', msg: 'stalled' };
    d.send({ t: 'res', rid, st, ...res, s: { up: 2, relays: [], axes: [axisState(pos)] }, ms: 100 });
    await flush();
    clock.advance(10);
    return s;
  }
  /** get_device_status refresh=true, answered by the device. */
  async function refresh(d: FakeDevice) {
    const p = core.deviceStatus('slide', true);
    await flush();
    d.answerStateQuery({ up: 3, relays: [], axes: [axisState(70)] });
    expect((await p)!.source).toBe('device');
  }
  const move = () => core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 20 } });

  it('a home after a failed move is held back as well; a stop never is', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    await motion(d, 'stepper.move', 'failed', 70);
    expect(await core.submit({ device_id: 'slide', action: 'stepper.home', args: { axis: 'x' } })).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    expect((await core.submit({ device_id: 'slide', action: 'stop', args: { axis: 'x' } })).state).toBe('sent');
  });

  it('the newest motion of the axis decides, a move or a home', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    await motion(d, 'stepper.move', 'completed', 150);
    // After a completed motion the next one is not held back; a failed home after it is the last motion.
    const home = await motion(d, 'stepper.home', 'failed', 3);
    expect(home.state).toBe('sent');
    expect(await move()).toMatchObject({
      state: 'rejected',
      error_code: 'STATE_READ_REQUIRED',
      detail: `axis x ended its last motion ${home.command_id} failed MOTOR_STALL at 3 mm; read its real state with get_device_status refresh=true before moving it again`,
    });
    await refresh(d);
    await motion(d, 'stepper.home', 'completed', 0);
    const failed = await motion(d, 'stepper.move', 'failed', 40);
    expect(await move()).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED', detail: expect.stringContaining(failed.command_id) });
  });

  it('a fault on one axis holds back motions of that axis only', async () => {
    const x = stepperBoard.steppers![0];
    const twoAxes: BoardDef = { ...stepperBoard, steppers: [x, { ...x, axis: 'y', name: 'lift', label: 'lift' }] };
    core.provision('slide', SECRET, twoAxes);
    const d = await online('slide', 'stepper-rig', [axisState(0), { ...axisState(0), axis: 'y' }]);
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'y', mm: 50 } });
    await flush();
    d.send({ t: 'res', rid: d.of('cmd')[0].rid, st: 'failed', ev: 'encoder', ver: false, code: 'MOTOR_STALL', msg: 'stalled', s: { up: 2, relays: [], axes: [axisState(0)] }, ms: 100 });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('failed');
    expect((await move()).state).toBe('sent');
    expect((await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'y', mm: 10 } })).error_code).toBe('STATE_READ_REQUIRED');
  });

  it('only a read of the real state after the fault clears it: an earlier one does not count', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    await refresh(d);
    clock.advance(10);
    await motion(d, 'stepper.move', 'failed', 70);
    expect((await move()).error_code).toBe('STATE_READ_REQUIRED');
    await refresh(d);
    expect((await move()).state).toBe('sent');
  });

  it('a motion that timed out with no position known: held back, naming no position', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    d.link.close();
    await flush();
    clock.advance(s.deadline_ms! + 5000);
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', position_mm: null });
    await online('slide', 'stepper-rig', [axisState(0)]);
    expect(await move()).toMatchObject({
      state: 'rejected',
      error_code: 'STATE_READ_REQUIRED',
      detail: `axis x ended its last motion ${s.command_id} timeout TIMEOUT; read its real state with get_device_status refresh=true before moving it again`,
    });
  });
});

describe('frames that arrive after a command ended change nothing', () => {
  it('an ack or progress after the result leaves it completed, with its history as it was', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 100 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'res', rid, st: 'completed', ev: 'encoder', ver: true, s: { up: 2, relays: [], axes: [axisState(100)] }, ms: 100 });
    await flush();
    d.send({ t: 'ack', rid, st: 'running' });
    d.send({ t: 'prog', rid, pct: 50, pos: 50 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', progress_pct: null, position_mm: 100 });
    expect(core.commands.history(s.command_id).map((e) => e.state)).toEqual(['submitted', 'sent', 'completed']);
  });

  it('progress without an ack before it: running, with one history event for it', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 100 } });
    await flush();
    d.send({ t: 'prog', rid: d.of('cmd')[0].rid, pct: 10 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'running', accepted: true, progress_pct: 10, position_mm: null });
    expect(core.commands.history(s.command_id).map((e) => e.state)).toEqual(['submitted', 'sent', 'running']);
  });
});

describe('what listeners and lists see', () => {
  it('every change of every command is told on "change", in order', async () => {
    const d = await online();
    const seen: string[] = [];
    core.commands.on('change', (v) => seen.push(v.state));
    await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'c1' });
    await flush();
    d.send({ t: 'ack', rid: 'c1', st: 'accepted' });
    d.send({ t: 'res', rid: 'c1', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 1 });
    await flush();
    expect(seen).toEqual(['sent', 'accepted', 'completed']);
  });

  it('recent(n): the newest n commands of every device as statuses, newest first', async () => {
    await online();
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    clock.advance(1);
    const b = await core.submit({ device_id: 'ghost', action: 'relay.set', args: { ch: 2, on: true } });
    clock.advance(1);
    const c = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true } });
    expect(core.commands.recent(2)).toStrictEqual([core.status(c.command_id), core.status(b.command_id)]);
    expect(core.commands.recent(5).map((s) => s.command_id)).toEqual([c.command_id, b.command_id, a.command_id]);
  });
});

describe('the status of a command, field by field, from sent to completed', () => {
  it('relay.set on channel 1: deadline ceil(3·20 + 80 + 1.5·25) = 178 ms, estimate 20 + 25 ms, then the verified result', async () => {
    const d = await online();
    clock.advance(1000);
    const iso = (t: number) => new Date(T0 + t).toISOString();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'lamp-on' });
    const base = {
      command_id: s.command_id,
      request_id: 'lamp-on',
      device_id: 'rig1',
      action: 'relay.set',
      args: { ch: 1, on: true },
      error_code: null,
      detail: null,
      submitted_at: iso(1000),
      deadline_ms: 178,
      estimated_seconds: 0.045,
      progress_pct: null,
      position_mm: null,
    };
    const open = { ...base, terminal: false, accepted: false, executed: false, verified: false, evidence: null, terminal_at: null, device_state: null, device_state_observed_at: null, device_state_age_ms: null };
    expect(s.command_id).toMatch(/^cmd_[A-Za-z0-9]{16}$/);
    expect(s).toStrictEqual({ ...open, state: 'sent', elapsed_ms: 0, estimated_remaining_seconds: 0.045 });
    await flush();
    expect(d.of('cmd')).toEqual([{ t: 'cmd', rid: 'lamp-on', a: 'relay.set', p: { ch: 1, on: true } }]);

    clock.advance(20);
    d.send({ t: 'ack', rid: 'lamp-on', st: 'accepted' });
    await flush();
    expect(core.status(s.command_id)).toStrictEqual({ ...open, state: 'accepted', accepted: true, elapsed_ms: 20, estimated_remaining_seconds: 0.025 });
    clock.advance(100);
    expect(core.status(s.command_id)).toMatchObject({ elapsed_ms: 120, estimated_remaining_seconds: 0 });

    const st = d.state(true);
    d.send({ t: 'res', rid: 'lamp-on', st: 'completed', ev: 'aux_contact', ver: true, s: st, ms: 30 });
    await flush();
    clock.advance(500);
    expect(core.status(s.command_id)).toStrictEqual({
      ...base,
      state: 'completed',
      terminal: true,
      accepted: true,
      executed: true,
      verified: true,
      evidence: 'aux_contact',
      terminal_at: iso(1120),
      elapsed_ms: 120,
      estimated_remaining_seconds: null,
      device_state: st,
      device_state_observed_at: iso(1120),
      device_state_age_ms: 500,
    });
    expect(d.of('rack')).toEqual([{ t: 'rack', rid: 'lamp-on' }]);
    expect(core.commands.history(s.command_id).map((e) => [e.at - T0, e.state])).toEqual([
      [1000, 'submitted'],
      [1000, 'sent'],
      [1020, 'accepted'],
      [1120, 'completed'],
    ]);
    // The history says which deadline the command was sent with.
    expect(core.commands.history(s.command_id)[1].note).toBe(`deadline ${s.deadline_ms} ms`);
    expect(s.deadline_ms).toBeGreaterThan(0);
  });

  it('an unverified result is executed but not verified; a refused one was neither accepted nor executed', async () => {
    const d = await online();
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 4, on: true } });
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    const [ra, rb] = d.of('cmd').map((f) => f.rid);
    d.send({ t: 'res', rid: ra, st: 'unverified', ev: 'none', ver: false, s: d.state(true), ms: 1 });
    d.send({ t: 'res', rid: rb, st: 'rejected', ev: 'none', ver: false, code: 'BUSY', msg: 'ch 1 busy', s: d.state(), ms: 1 });
    await flush();
    expect(core.status(a.command_id)).toMatchObject({ state: 'unverified', accepted: true, executed: true, verified: false, evidence: 'none', error_code: null, detail: null });
    expect(core.status(b.command_id)).toMatchObject({ state: 'rejected', accepted: false, executed: false, verified: false, error_code: 'BUSY', detail: 'ch 1 busy' });
  });

  it('progress and running: one history event per state change, not per progress frame', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    const s = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 100 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'ack', rid, st: 'running' });
    d.send({ t: 'prog', rid, pct: 10, pos: 10 });
    d.send({ t: 'prog', rid, pct: 20 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'running', accepted: true, progress_pct: 20, position_mm: 10 });
    d.send({ t: 'ack', rid, st: 'accepted' });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('running');
    expect(core.commands.history(s.command_id).map((e) => e.state)).toEqual(['submitted', 'sent', 'running']);
  });

  it('a late result after a timeout is noted in the history and changes nothing; it is still acknowledged', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.link.close();
    await flush();
    clock.advance(s.deadline_ms! + 5000 + 10);
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    const d2 = await online();
    d2.send({ t: 'res', rid, st: 'failed', ev: 'aux_contact', ver: false, code: 'NO_FEEDBACK', msg: 'contact open', s: d2.state(), ms: 5 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    expect(core.commands.history(s.command_id).at(-1)!.note).toBe('late result from device ignored: failed NO_FEEDBACK: contact open');
    expect(d2.of('rack')).toEqual([{ t: 'rack', rid }]);
  });
});

describe('past the deadline: the device is asked, and what it says decides (exact details and history notes)', () => {
  /** An online relay device, a command on channel 1 sent to it (acknowledged if asked), the deadline passed. */
  async function pastDeadline(ack = false) {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    if (ack) d.send({ t: 'ack', rid: 'r1', st: 'accepted' });
    await flush();
    clock.advance(s.deadline_ms!);
    await flush();
    const query = () => d.of('q').filter((f) => f.rid === 'r1').at(-1)!;
    const notes = () => core.commands.history(s.command_id).map((e) => e.note);
    return { d, s, query, notes };
  }

  it('still running twice: one more window of the full deadline, then timeout', async () => {
    const { d, s, query, notes } = await pastDeadline(true);
    expect(query()).toMatchObject({ t: 'q', rid: 'r1' });
    d.send({ t: 'state', q: query().q, s: d.state(), rid: 'r1', rst: 'running' });
    await flush();
    expect(notes().at(-1)).toBe('deadline passed with the device still running it; waiting 178 ms more once');
    expect(core.status(s.command_id)!.deadline_ms).toBe(178 + 178);
    clock.advance(178);
    await flush();
    d.send({ t: 'state', q: query().q, s: d.state(), rid: 'r1', rst: 'running' });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT', detail: 'deadline passed and device rig1 reports the command still running; the outcome is unknown' });
  });

  it('never received: re-sent once with the same request_id; unknown again ends timeout', async () => {
    const { d, s, query, notes } = await pastDeadline();
    d.send({ t: 'state', q: query().q, s: d.state(), rid: 'r1', rst: 'unknown' });
    await flush();
    expect(notes().slice(-2)).toEqual(['device never received it; re-sent with the same request_id (send #2 of at most 2)', 'deadline 178 ms']);
    expect(d.of('cmd').map((f) => f.rid)).toEqual(['r1', 'r1']);
    clock.advance(178);
    await flush();
    d.send({ t: 'state', q: query().q, s: d.state(), rid: 'r1', rst: 'unknown' });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({
      state: 'timeout',
      detail: 'deadline passed and device rig1 has no record of request r1 in its current boot (up 1000 ms): it was asked after the cmd on the connection that carried it, so it did not take the command (2 sends)',
    });
    expect(d.of('cmd')).toHaveLength(2);
  });

  it('done but no result: asked three more times a round trip apart, then timeout', async () => {
    const { d, s, query, notes } = await pastDeadline(true);
    for (let i = 0; i < 4; i++) {
      d.send({ t: 'state', q: query().q, s: d.state(), rid: 'r1', rst: 'done' });
      await flush();
      clock.advance(40);
      await flush();
    }
    expect(notes().filter((n) => n === 'device says done after the deadline; waiting for its result frame')).toHaveLength(3);
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', detail: 'device rig1 says the command is done but its result never arrived; the outcome is unknown' });
  });

  it('no answer to the query: the offline grace, then timeout saying so', async () => {
    const { s, notes } = await pastDeadline();
    clock.advance(500);
    await flush();
    expect(notes().at(-1)).toBe('device did not answer a state query within 500 ms; waiting for it to reconnect');
    clock.advance(4999);
    await flush();
    expect(core.status(s.command_id)!.state).toBe('sent');
    clock.advance(1);
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', detail: 'deadline passed and device rig1 could not be asked for its real state for 5000 ms more; the outcome is unknown' });
  });

  it('offline at the deadline: waits for the device, noted', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    d.link.close();
    await flush();
    clock.advance(s.deadline_ms!);
    await flush();
    expect(core.commands.history(s.command_id).at(-1)!.note).toBe('deadline passed while the device is offline; waiting for it to reconnect');
  });

  it('an uptime shorter than the time since sending: DEVICE_REBOOTED, whatever the boot id says', async () => {
    const { d, s, query } = await pastDeadline(true);
    d.send({ t: 'state', q: query().q, s: { ...d.state(), up: 100 }, rid: 'r1', rst: 'running' });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({
      state: 'failed',
      error_code: 'DEVICE_REBOOTED',
      detail:
        'device rig1 restarted after this command was sent although it reports the same boot id boot0001 (up 100 ms, sent 178 ms ago); whatever it did for this command was lost with that boot and the host cannot tell whether the hardware acted. Read the device state before retrying.',
    });
    // That ends it: no later note about the running it reported.
    expect(core.commands.history(s.command_id).at(-1)).toMatchObject({ state: 'failed', note: expect.stringContaining('restarted after this command was sent') });
  });

  it('a new boot id: DEVICE_REBOOTED naming both boots', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    d.link.close();
    await flush();
    const d2 = new FakeDevice(core, 'rig1', SECRET, 'boot0002');
    await d2.connect();
    await flush();
    expect(core.status(s.command_id)).toMatchObject({
      state: 'failed',
      error_code: 'DEVICE_REBOOTED',
      detail: 'device rig1 restarted (boot boot0001 → boot0002) while this command was in flight; its outcome was lost with the old boot and outputs are back in their power-on state. Read the device state before retrying.',
    });
  });
});

describe('cancel, wait, and a host restart', () => {
  it('cancel: unknown, terminal, not a motion, and a motion on an offline device, each say so', async () => {
    expect(await core.commands.cancel('cmd_nope')).toBeUndefined();
    const d = await online();
    const relay = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    expect(await core.commands.cancel(relay.command_id)).toMatchObject({ stop: null, reason: 'relay.set finishes in milliseconds on the device and cannot be recalled; wait for its result' });
    await flush();
    d.send({ t: 'res', rid: d.of('cmd')[0].rid, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 1 });
    await flush();
    expect(await core.commands.cancel(relay.command_id)).toMatchObject({ target: { state: 'completed' }, stop: null, reason: 'already completed; nothing to cancel' });

    const slide = await online('slide', 'stepper-rig', [axisState(0)]);
    const move = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 100 } });
    slide.link.close();
    await flush();
    const r = (await core.commands.cancel(move.command_id))!;
    expect(r.stop).toMatchObject({ action: 'stop', state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    expect(r.reason).toBe(r.stop!.detail);
    expect(r.target.state).toBe('sent');
  });

  it('cancel of a home on an online device: a stop for its axis is sent, and there is no refusal to report', async () => {
    const d = await online('slide', 'stepper-rig', [axisState(0)]);
    const home = await core.submit({ device_id: 'slide', action: 'stepper.home', args: { axis: 'x' } });
    const r = (await core.commands.cancel(home.command_id))!;
    expect(r).toMatchObject({ target: { command_id: home.command_id, state: 'sent' }, stop: { action: 'stop', state: 'sent' }, reason: null });
    await flush();
    expect(d.of('cmd').at(-1)).toMatchObject({ a: 'stop', p: { axis: 'x' } });
  });

  it('a wait that ended, on the change, the time limit or an abort, leaves no listener behind', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'w1' });
    const ac = new AbortController();
    const listeners = () => [core.commands.listenerCount('change:' + s.command_id), getEventListeners(ac.signal, 'abort').length];
    const aborted = core.commands.waitTerminal(s.command_id, 60_000, ac.signal);
    expect(listeners()).toEqual([1, 1]);
    ac.abort();
    await aborted;
    expect(listeners()).toEqual([0, 0]);
    const timed = core.commands.waitTerminal(s.command_id, 50);
    clock.advance(50);
    await timed;
    expect(listeners()).toEqual([0, 0]);
    const ac2 = new AbortController();
    const done = core.commands.waitTerminal(s.command_id, 60_000, ac2.signal);
    await flush();
    d.send({ t: 'res', rid: 'w1', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 1 });
    expect((await done)!.state).toBe('completed');
    expect([core.commands.listenerCount('change:' + s.command_id), getEventListeners(ac2.signal, 'abort').length]).toEqual([0, 0]);
  });

  it('waitTerminal: at once for a terminal or unknown command or no wait; else on the change, at the time limit, or on abort', async () => {
    const d = await online();
    expect(await core.commands.waitTerminal('cmd_nope', 1000)).toBeUndefined();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    expect((await core.commands.waitTerminal(s.command_id, 0))!.state).toBe('sent');
    const timed = core.commands.waitTerminal(s.command_id, 50);
    clock.advance(50);
    expect((await timed)!.state).toBe('sent');
    const ac = new AbortController();
    const aborted = core.commands.waitTerminal(s.command_id, 60_000, ac.signal);
    ac.abort();
    expect((await aborted)!.state).toBe('sent');
    const done = core.commands.waitTerminal(s.command_id, 60_000);
    await flush();
    d.send({ t: 'ack', rid: d.of('cmd')[0].rid, st: 'accepted' });
    await flush();
    d.send({ t: 'res', rid: d.of('cmd')[0].rid, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 1 });
    expect((await done)!.state).toBe('completed');
    expect((await core.commands.waitTerminal(s.command_id, 60_000))!.state).toBe('completed');
  });
});
