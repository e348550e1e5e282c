// Host-core behaviour against a scripted device on an in-memory Link and a virtual clock.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Writable } from 'node:stream';
import { HostCore } from '../host/src/core/host.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { FakeDevice, flush } from './helpers/fake-device.js';
import type { BoardDef } from '@proofrig/protocol';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const SECRET = 'a'.repeat(64);

let clock: VirtualClock;
let core: HostCore;
let logLines: Record<string, unknown>[];
let dbPath: string;

function makeCore() {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) logLines.push(JSON.parse(l));
      cb();
    },
  });
  return new HostCore({ db: dbPath, clock, logger: pino({ level: 'info' }, sink), heartbeatMs: 1000, offlineGraceMs: 5000 });
}

beforeEach(() => {
  clock = new VirtualClock(1_700_000_000_000);
  logLines = [];
  dbPath = join(mkdtempSync(join(tmpdir(), 'proofrig-core-')), 'journal.db');
  core = makeCore();
  core.provision('rig1', SECRET, board);
});
afterEach(() => core.close());

async function online(boot = 'boot0001') {
  const d = new FakeDevice(core, 'rig1', SECRET, boot);
  await d.connect();
  // answer the host's initial state query
  const q = d.of('q').find((f) => f.rid === undefined);
  if (q) d.send({ t: 'state', q: q.q, s: d.state() });
  await flush();
  return d;
}

/** Switch channel 1 on an online device, optionally let it acknowledge, and let the deadline pass. */
async function pastDeadline(ack = false) {
  const d = await online();
  const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
  await flush();
  const rid = d.of('cmd')[0].rid as string;
  if (ack) d.send({ t: 'ack', rid, st: 'accepted' });
  clock.advance(s.deadline_ms!);
  await flush();
  /** The host's latest state query about this command. */
  const query = () => d.of('q').filter((f) => f.rid === rid).at(-1)!;
  return { d, s, rid, query };
}

describe('a device must prove its per-device secret', () => {
  it('a wrong secret is refused with AUTH_FAILED and the device never comes online', async () => {
    const d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
    await d.connect('b'.repeat(64));
    expect(d.of('err')[0]).toMatchObject({ code: 'AUTH_FAILED' });
    expect(d.closed).toBe(true);
    expect(core.devices.view('rig1')!.online).toBe(false);
    expect(JSON.stringify(logLines)).not.toContain(SECRET);
  });

  it('an unknown device gets the same refusal as a wrong secret', async () => {
    const d = new FakeDevice(core, 'nobody', SECRET, 'boot0001');
    await d.connect();
    expect(d.of('err')[0]).toMatchObject({ code: 'AUTH_FAILED' });
    expect(d.closed).toBe(true);
  });

  it('commands before authentication are refused and close the link', async () => {
    const d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
    d.send({ t: 'hb', up: 1 });
    await flush();
    expect(d.of('err')[0]).toMatchObject({ code: 'AUTH_FAILED' });
    expect(d.closed).toBe(true);
  });

  it('the right secret brings the device online with the heartbeat period in the welcome', async () => {
    const d = await online();
    expect(d.of('ok')[0]).toEqual({ t: 'ok', hb: 1000 });
    expect(core.devices.view('rig1')).toMatchObject({ online: true, boot_id: 'boot0001' });
  });
});

describe('malformed and unknown frames are answered and change nothing', () => {
  it.each([
    ['not json', 'MALFORMED_FRAME', /not valid JSON/],
    [JSON.stringify([1, 2]), 'MALFORMED_FRAME', /JSON object/],
    [JSON.stringify({ t: 'res', rid: 'x' }), 'MALFORMED_FRAME', /res: st must be/],
    [JSON.stringify({ t: 'res', rid: 'x', st: 'completed', ev: 'none', ver: true, s: { up: 1, relays: [] }, ms: 1 }), 'MALFORMED_FRAME', /ver cannot be true without evidence/],
    [JSON.stringify({ t: 'teleport' }), 'UNKNOWN_FRAME', /unknown frame type "teleport"/],
  ])('%s → %s', async (text, code, msg) => {
    const d = await online();
    const c = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    d.send(text);
    await flush();
    const err = d.of('err').at(-1)!;
    expect(err.code).toBe(code);
    expect(err.msg).toMatch(msg);
    expect(core.status(c.command_id)!.state).toBe('sent');
    expect(core.devices.view('rig1')!.online).toBe(true);
  });
});

describe('commands are checked before anything is sent', () => {
  it('an offline device is rejected with DEVICE_OFFLINE at once and nothing is queued', async () => {
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s).toMatchObject({ state: 'rejected', terminal: true, error_code: 'DEVICE_OFFLINE', accepted: false, executed: false, verified: false });
    const d = await online();
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });

  it('an unknown device is rejected with DEVICE_OFFLINE and says so', () => {
    const s = core.submit({ device_id: 'ghost', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    expect(s.detail).toMatch(/no device "ghost"/);
  });

  it('a channel the board does not have is rejected with INVALID_ARGS naming the valid ones', async () => {
    const d = await online();
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 7, on: true } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(s.detail).toMatch(/valid channels: 1, 2, 3, 4/);
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });
});

describe('the lifecycle follows the device', () => {
  it('sent → accepted → completed with the evidence and state the device reported, confirmed once', async () => {
    const d = await online();
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s.state).toBe('sent');
    expect(s.deadline_ms).toBeGreaterThan(0);
    await flush();
    const cmd = d.of('cmd')[0];
    expect(cmd).toMatchObject({ rid: s.request_id, a: 'relay.set', p: { ch: 1, on: true } });
    d.send({ t: 'ack', rid: cmd.rid, st: 'accepted' });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'accepted', accepted: true, executed: false });
    d.send({ t: 'res', rid: cmd.rid, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 25 });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'completed', terminal: true, executed: true, verified: true, evidence: 'aux_contact' });
    expect(d.of('rack')).toEqual([{ t: 'rack', rid: cmd.rid }]);
    const lines = logLines.filter((l) => l.command_id === s.command_id);
    expect(lines.map((l) => l.phase)).toEqual(['submitted', 'terminal']);
  });

  it('a result repeated after the command is terminal is confirmed again but changes nothing', async () => {
    const d = await online();
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    const res = { t: 'res', rid, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 2 };
    d.send(res);
    await flush();
    d.send({ ...res, st: 'failed', ev: 'pin_readback', ver: false, code: 'READBACK_MISMATCH' });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('completed');
    expect(d.of('rack')).toHaveLength(2);
    expect(logLines.filter((l) => l.command_id === s.command_id && l.phase === 'terminal')).toHaveLength(1);
  });

  it('the same request_id returns the same command and is not sent again', async () => {
    const d = await online();
    const a = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-42' });
    const b = core.submit({ device_id: 'rig1', action: 'relay.set', args: { on: true, ch: 1 }, request_id: 'agent-42' });
    expect(b.command_id).toBe(a.command_id);
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
  });

  it('a request_id reused for different arguments is rejected, not merged', async () => {
    await online();
    core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-43' });
    const b = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: false }, request_id: 'agent-43' });
    expect(b).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(b.detail).toMatch(/already used/);
  });
});

describe('after the deadline the host asks the device before deciding', () => {
  it('a device that says the command is done re-sends its result and the command completes', async () => {
    const { d, s, rid, query } = await pastDeadline();
    const q = query();
    expect(q).toBeDefined();
    d.send({ t: 'state', q: q.q, s: d.state(true), rid, rst: 'done' });
    d.send({ t: 'res', rid, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 25 });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('completed');
  });

  it('a device that still runs it at the deadline gets one more execution window; a result on its way is not replaced by a timeout', async () => {
    const { d, s, rid, query } = await pastDeadline(true);
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'running' });
    await flush();
    expect(core.status(s.command_id)!.terminal).toBe(false);
    d.send({ t: 'res', rid, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 25 });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('completed');
  });

  it('a device that still runs it after the extra window ends timeout (outcome unknown), not failed', async () => {
    const { d, s, rid, query } = await pastDeadline(true);
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'running' });
    await flush();
    const first = query().q;
    clock.advance(s.deadline_ms!);
    await flush();
    expect(query().q).not.toBe(first);
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'running' });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT', executed: false, verified: false });
    expect(core.status(s.command_id)!.detail).toMatch(/still running/);
  });

  it('a device that never got the command gets it once more with the same request_id', async () => {
    const { d, s, rid, query } = await pastDeadline();
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'unknown' });
    await flush();
    expect(d.of('cmd').map((c) => c.rid)).toEqual([rid, rid]);
    expect(core.status(s.command_id)!.state).toBe('sent');
  });

  it('a device that does not answer the query is given the offline grace, then the command ends timeout', async () => {
    const { d, s } = await pastDeadline();
    clock.advance(700);
    await flush();
    expect(core.status(s.command_id)!.state).toBe('sent');
    clock.advance(5000);
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    expect(core.status(s.command_id)!.detail).toMatch(/outcome is unknown/);
    expect(d.of('cmd')).toHaveLength(1);
  });

  it('a device that comes back within the grace is asked again and its result counts', async () => {
    const d = await online();
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'ack', rid, st: 'accepted' });
    await flush();
    d.link.close('wifi lost');
    await flush();
    clock.advance(s.deadline_ms! + 1000);
    await flush();
    expect(core.status(s.command_id)!.state).toBe('accepted');
    const back = await online();
    back.send({ t: 'res', rid, st: 'completed', ev: 'aux_contact', ver: true, s: back.state(true), ms: 25 });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'completed', verified: true });
    expect(back.of('q').some((q) => q.rid === rid)).toBe(true);
  });
});

describe('reboots and restarts', () => {
  it('a new boot id fails the in-flight command with DEVICE_REBOOTED', async () => {
    const d = await online('boot0001');
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true } });
    await flush();
    d.send({ t: 'ack', rid: d.of('cmd')[0].rid, st: 'accepted' });
    await flush();
    d.link.close('power loss');
    await flush();
    await online('boot0002');
    expect(core.status(s.command_id)!).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED', executed: false, verified: false });
  });

  /** Reconnect with the same boot id; answer the host's query about rid with this uptime and status. */
  async function sameBootAgain(rid: string, up: number, rst: 'unknown' | 'running' | 'done') {
    const d2 = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
    await d2.connect();
    const q = d2.of('q').find((f) => f.rid === rid)!;
    expect(q).toBeDefined();
    expect(d2.of('cmd')).toEqual([]); // nothing is re-sent before the device was asked
    d2.send({ t: 'state', q: q.q, s: { ...d2.state(), up }, rid, rst });
    await flush();
    return d2;
  }

  it('a reboot that keeps its boot id (uptime shorter than the time since sending) fails DEVICE_REBOOTED and is never re-sent', async () => {
    const d = await online('boot0001');
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true } });
    await flush();
    const rid = d.of('cmd')[0].rid as string;
    clock.advance(5000);
    d.link.close('power loss');
    await flush();
    const d2 = await sameBootAgain(rid, 300, 'unknown');
    expect(core.status(s.command_id)!).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
    expect(core.status(s.command_id)!.detail).toMatch(/same boot id.*cannot tell whether the hardware acted/);
    expect(d2.of('cmd')).toEqual([]);
  });

  it('a network blip (same boot, uptime covers the send) re-sends a command the device never received, with the same request_id', async () => {
    const d = await online('boot0001');
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true } });
    await flush();
    const rid = d.of('cmd')[0].rid as string;
    clock.advance(100);
    d.link.close('blip');
    await flush();
    const d2 = await sameBootAgain(rid, 60_000, 'unknown');
    expect(d2.of('cmd').map((f) => f.rid)).toEqual([rid]);
    expect(core.status(s.command_id)!.terminal).toBe(false);
  });

  it('after a host restart the journal still answers for earlier commands', async () => {
    const d = await online();
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 4, on: true } });
    await flush();
    d.send({ t: 'res', rid: d.of('cmd')[0].rid, st: 'unverified', ev: 'none', ver: false, s: d.state(true), ms: 0 });
    await flush();
    core.close();
    core = makeCore();
    expect(core.status(s.command_id)).toMatchObject({ state: 'unverified', evidence: 'none', verified: false, executed: true });
  });
});

describe('motion commands', () => {
  const stepperBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8'));
  const axisState = (pos: number, moving = false) => ({ axis: 'x', pos, cmd: pos, moving, homed: true, fault: false, home: pos === 0, limit: false });

  async function stepperOnline() {
    core.provision('slide', SECRET, stepperBoard);
    const d = new FakeDevice(core, 'slide', SECRET, 'boot0001', 'stepper-rig');
    await d.connect();
    const q = d.of('q').find((f) => f.rid === undefined)!;
    d.send({ t: 'state', q: q.q, s: { up: 1, relays: [], axes: [axisState(0)] } });
    await flush();
    return d;
  }

  it('a speed below the slowest step rate the firmware drives is refused INVALID_ARGS (no Infinity estimate, no clamped deadline)', async () => {
    await stepperOnline();
    for (const speed of [5e-324, 1e-5, 0.2]) {
      const s = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 10, speed } });
      expect(s).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
      expect(s.detail).toMatch(/speed must be a number in \[0.25, 30\] mm\/s.*50 Hz/);
      expect(Number.isFinite(s.estimated_seconds)).toBe(true);
    }
  });

  it('a target outside travel is rejected before anything is sent', async () => {
    const d = await stepperOnline();
    const s = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 250 } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(s.detail).toMatch(/outside the travel of axis x: 0..200 mm/);
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });

  it('the deadline covers the move duration from the motion profile', async () => {
    await stepperOnline();
    const s = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    // 150 mm at 30 mm/s with 200 mm/s² takes 5.15 s; ×1.5 plus link and processing terms
    expect(s.estimated_seconds).toBeGreaterThan(5.15);
    expect(s.deadline_ms!).toBeGreaterThan(5150 * 1.5);
  });

  it('progress frames carry the measured position into the status', async () => {
    const d = await stepperOnline();
    const s = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'ack', rid, st: 'accepted' });
    d.send({ t: 'prog', rid, pct: 40, pos: 60.04 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'running', progress_pct: 40, position_mm: 60.04 });
  });

  it('after a stall the axis is refused STATE_READ_REQUIRED until its state is read from the device', async () => {
    const d = await stepperOnline();
    const s = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const rid = d.of('cmd')[0].rid;
    d.send({ t: 'res', rid, st: 'failed', ev: 'encoder', ver: false, code: 'MOTOR_STALL', msg: 'x: driver FAULT at 70.02 mm', s: { up: 2, relays: [], axes: [axisState(70.02)] }, ms: 3600 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'failed', error_code: 'MOTOR_STALL', position_mm: 70.02 });
    const retry = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    expect(retry).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    expect(retry.detail).toMatch(/MOTOR_STALL at 70.02 mm.*refresh=true/);
    // Asking again does not get round it: the refusal never reached the axis and is not its last motion.
    expect(core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } })).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    // Read the real state, then the axis may move again.
    const status = core.deviceStatus('slide', true);
    await flush();
    const q = d.of('q').filter((f) => f.rid === undefined).at(-1)!;
    d.send({ t: 'state', q: q.q, s: { up: 3, relays: [], axes: [axisState(70.02)] } });
    await flush();
    expect((await status)!.source).toBe('device');
    expect(core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 10 } }).state).toBe('sent');
  });

  it('cancel of a running move sends stop for its axis; relay commands cannot be recalled', async () => {
    const d = await stepperOnline();
    const s = core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 150 } });
    await flush();
    const r = core.commands.cancel(s.command_id)!;
    expect(r.stop).toMatchObject({ action: 'stop', args: { axis: 'x' }, state: 'sent' });
    await flush();
    expect(d.of('cmd').map((c) => c.a)).toEqual(['stepper.move', 'stop']);
    const relay = core.submit({ device_id: 'slide', action: 'relay.set', args: { ch: 1, on: true } });
    const rr = core.commands.cancel(relay.command_id)!;
    expect(rr.stop).toBeNull();
    expect(rr.reason).toMatch(/cannot be recalled/);
  });
});

describe('a device that claims done but never delivers', () => {
  it('is asked a bounded number of times, then the command ends timeout', async () => {
    const { d, s, rid, query } = await pastDeadline();
    for (let i = 0; i < 10 && !core.status(s.command_id)!.terminal; i++) {
      await flush();
      d.send({ t: 'state', q: query().q, s: d.state(true), rid, rst: 'done' });
      await flush();
      clock.advance(100);
    }
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    expect(core.status(s.command_id)!.detail).toMatch(/result never arrived/);
    expect(d.of('q').filter((f) => f.rid === rid).length).toBe(4);
  });
});
