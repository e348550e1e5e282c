// Host-core behaviour when a command does not simply finish: a retry after DEVICE_OFFLINE, the deadline
// (the host asks the device before deciding), reboots and restarts, and a device that claims done but
// never delivers. A scripted device on an in-memory Link and a virtual clock (split from host-core.test.ts).
import { describe, expect, it } from 'vitest';
import { FakeDevice, flush } from './helpers/fake-device.js';
import { board, SECRET, clock, core, dbPath, makeCore, online, pastDeadline, setCore, useHostCore } from './helpers/host-core-fixture.js';

useHostCore();

describe('a retry after DEVICE_OFFLINE runs; a request_id that was sent still dedupes', () => {
  it('a request_id refused for another reason before sending (INVALID_ARGS) returns that refusal again, nothing new', async () => {
    const d = await online();
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 7, on: true }, request_id: 'agent-bad' });
    expect(a).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 7, on: true }, request_id: 'agent-bad' });
    expect(b.command_id).toBe(a.command_id);
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });

  it('the same request_id for another action with the same arguments is refused, not merged', async () => {
    await online();
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-act' });
    const b = await core.submit({ device_id: 'rig1', action: 'stop', args: { ch: 1, on: true }, request_id: 'agent-act' });
    expect(b).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(b.command_id).not.toBe(a.command_id);
    expect(b.detail).toMatch(/^request_id agent-act was already used on rig1 for relay.set/);
  });

  it('the same request_id after DEVICE_OFFLINE is executed once the device is online, as a new command', async () => {
    const first = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-off' });
    expect(first).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE', request_id: 'agent-off' });
    const still = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-off' });
    expect(still).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    expect(still.command_id).not.toBe(first.command_id);
    const d = await online();
    const retry = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-off' });
    expect(retry).toMatchObject({ state: 'sent', request_id: 'agent-off' });
    expect(retry.command_id).not.toBe(first.command_id);
    await flush();
    expect(d.of('cmd')).toEqual([{ t: 'cmd', rid: 'agent-off', a: 'relay.set', p: { ch: 1, on: true } }]);
    // the rejection stays what it was, under its own command id
    expect(core.status(first.command_id)!).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    // from now on the request_id names the command that was sent: a repeat returns it and sends nothing
    d.send({ t: 'res', rid: 'agent-off', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 25 });
    await flush();
    expect(core.status(retry.command_id)!.state).toBe('completed');
    const again = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-off' });
    expect(again).toMatchObject({ command_id: retry.command_id, state: 'completed' });
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
  });

  it('a request_id that reached the device is not re-run even if the device is offline when it is repeated', async () => {
    const d = await online();
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true }, request_id: 'agent-sent' });
    await flush();
    d.link.close();
    await flush();
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true }, request_id: 'agent-sent' });
    expect(b.command_id).toBe(a.command_id);
    expect(b.error_code).toBeNull();
  });

  it('after DEVICE_OFFLINE the same request_id with other arguments is still refused', async () => {
    await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-off2' });
    const d = await online();
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: false }, request_id: 'agent-off2' });
    expect(b).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });

  it('a journal from before this change (request_id unique outright) is migrated on open', async () => {
    core.close();
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(dbPath);
    db.exec('DROP INDEX IF EXISTS commands_request_rid; CREATE UNIQUE INDEX commands_request ON commands(device_id, request_id)');
    db.close();
    setCore(makeCore());
    core.provision('rig1', SECRET, board);
    await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-old' });
    await online();
    expect((await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-old' })).state).toBe('sent');
  });
});

describe('after the deadline the host asks the device before deciding', () => {
  it('a device that says the command is done re-sends its result and the command completes', async () => {
    const { d, s, rid, query } = await pastDeadline();
    const q = query();
    expect(q).toMatchObject({ t: 'q', rid, q: expect.any(String) });
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

  it('a device that says it never got the command and drops the link at once gets it on its next connection, and the host stays up (chaos seed 2619)', async () => {
    const { d, s, rid, query } = await pastDeadline();
    const answer = d.sealed({ t: 'state', q: query().q, s: d.state(), rid, rst: 'unknown' }, d.txN + 1);
    // In the same read, a frame past the next counter: the host ends the link before its answer handling resumes.
    d.inject(answer, d.sealed({ t: 'hb', up: 1 }, d.txN + 3));
    await flush();
    expect(core.status(s.command_id)!.state).toBe('sent');
    expect(core.commands.history(s.command_id).at(-1)!.note).toMatch(/went offline after saying so/);
    const again = await online();
    const ask = again.of('q').find((f) => f.rid === rid)!; // the reconnect asks before re-sending anything
    again.send({ t: 'state', q: ask.q, s: again.state(), rid, rst: 'unknown' });
    await flush();
    expect(again.of('cmd').map((c) => c.rid)).toEqual([rid]); // and sends it once, with the same request_id
    expect(core.status(s.command_id)!.state).toBe('sent');
  });

  it('a host closed while it waits for the answer to its query stops there: nothing is written or sent after close', async () => {
    const { d, rid, query } = await pastDeadline();
    const sentBefore = d.received.length;
    core.close();
    // The answer (and the query's own wait running out) come after the close.
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'unknown' });
    clock.advance(10_000);
    await flush();
    expect(d.received.length).toBe(sentBefore);
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

  it('a device that reconnects just before the grace runs out, its answer still on the way, is asked once more and its result counts (chaos seed 39)', async () => {
    const { d, s, rid } = await pastDeadline(true);
    clock.advance(700); // the query goes unanswered: the offline grace (5 s) starts
    await flush();
    d.link.close('frames lost');
    clock.advance(4990);
    await flush();
    const back = await online(); // its reconnect's query about the command is not answered before the grace ends
    const asked = back.of('q').filter((q) => q.rid === rid).length;
    clock.advance(20);
    await flush();
    expect(core.status(s.command_id)!.terminal).toBe(false);
    const again = back.of('q').filter((q) => q.rid === rid);
    expect(again.length).toBe(asked + 1);
    const st = { ...back.state(true), up: 60_000 }; // same boot: up since before the command was sent
    back.send({ t: 'state', q: again.at(-1)!.q, s: st, rid, rst: 'done' });
    back.send({ t: 'res', rid, st: 'completed', ev: 'aux_contact', ver: true, s: st, ms: 25 });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'completed', verified: true });
  });

  it('a device that comes back within the grace is asked again and its result counts', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
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
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true } });
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
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true } });
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
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true } });
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
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 4, on: true } });
    await flush();
    d.send({ t: 'res', rid: d.of('cmd')[0].rid, st: 'unverified', ev: 'none', ver: false, s: d.state(true), ms: 0 });
    await flush();
    core.close();
    setCore(makeCore());
    expect(core.status(s.command_id)).toMatchObject({ state: 'unverified', evidence: 'none', verified: false, executed: true });
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
