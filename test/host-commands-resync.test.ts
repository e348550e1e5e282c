// What the host core does with a command it cannot see finish: the device reconnects with the same
// boot id (it is asked about each open command and the answer decides), or is asked past the
// deadline. The host restarting, a journal batch that failed to commit and the log lines are
// host-commands-restart.test.ts. A scripted device on an in-memory link and a virtual clock.
import { describe, expect, it } from 'vitest';
import { FakeDevice, flush } from './helpers/fake-device.js';
import { relayBoard, SECRET, T0, DEADLINE, clock, core, makeCore, online, alive, sentThenOffline, reconnect, askedAgainAfter, notes, states, setCore, useResyncCore } from './helpers/resync-fixture.js';

useResyncCore();

describe('a device back at the very end of the offline grace', () => {
  it('still in its handshake when the grace runs out: the handshake is waited for and the device asked; its stored result counts', async () => {
    const s = await sentThenOffline(true);
    clock.advance(DEADLINE);
    await flush();
    expect(notes(s.command_id).at(-1)).toBe('deadline passed while the device is offline; waiting for it to reconnect');
    clock.advance(5000 - 1);
    await flush();
    // It says hello; the grace ends before it proves itself.
    const d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
    await d.hello();
    clock.advance(1);
    expect(core.status(s.command_id)!.state).toBe('accepted');
    await d.auth();
    d.answerStateQuery(alive(d));
    await flush();
    const ask = d.of('q').filter((f) => f.rid === 'r1').at(-1)!;
    d.send({ t: 'state', q: ask.q, s: alive(d), rid: 'r1', rst: 'done' });
    d.send({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, s: alive(d), ms: 3 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', evidence: 'aux_contact' });
  });

  it('a handshake that never finishes does not hold the command: timeout when the handshake bound is over', async () => {
    const s = await sentThenOffline(true);
    clock.advance(DEADLINE + 5000 - 1);
    await flush();
    await new FakeDevice(core, 'rig1', SECRET, 'boot0001').hello();
    clock.advance(1);
    expect(core.status(s.command_id)!.state).toBe('accepted');
    clock.advance(5000);
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
  });
});

describe('a reconnect with the same boot id: each open command is asked about, and the answer decides', () => {
  it('still running before the deadline: nothing changes and the deadline stands (an uptime as long as the time since sending is no restart)', async () => {
    const s = await sentThenOffline(true);
    clock.advance(50);
    const { d, asks, answer } = await reconnect();
    expect(asks()).toHaveLength(1);
    await answer('running', alive(d, 50));
    expect(core.status(s.command_id)).toMatchObject({ state: 'accepted', deadline_ms: DEADLINE });
    expect(states(s.command_id)).toEqual(['submitted', 'sent', 'accepted']);
    expect(d.of('cmd')).toEqual([]);
    await askedAgainAfter(asks, DEADLINE - 50, 1);
  });

  it('still running once the deadline passed (the host waited for the device): a fresh window of the full deadline, noted', async () => {
    const s = await sentThenOffline(true);
    clock.advance(DEADLINE);
    await flush();
    expect(notes(s.command_id).at(-1)).toBe('deadline passed while the device is offline; waiting for it to reconnect');
    // Back in the very millisecond of the deadline: that counts as past it.
    const { asks, answer } = await reconnect();
    await answer('running');
    expect(notes(s.command_id).at(-1)).toBe(`device still runs it after reconnecting; deadline extended by ${DEADLINE} ms`);
    expect(core.status(s.command_id)).toMatchObject({ state: 'accepted', deadline_ms: 2 * DEADLINE });
    await askedAgainAfter(asks, DEADLINE, 1);
  });

  it('done before the deadline: its stored result follows and completes it; the host asks nothing more meanwhile', async () => {
    const s = await sentThenOffline(true);
    clock.advance(50);
    const { d, asks, answer } = await reconnect();
    await answer('done');
    clock.advance(DEADLINE - 50 - 1);
    await flush();
    expect(asks()).toHaveLength(1);
    d.send({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', verified: true });
  });

  it('done once the deadline passed: if its result does not follow, asked again two round trips (2 × 20 ms) later', async () => {
    await sentThenOffline(true);
    clock.advance(DEADLINE);
    await flush();
    const { asks, answer } = await reconnect();
    await answer('done');
    await askedAgainAfter(asks, 40, 1);
  });

  it('done, but then silent while it already waits for the device: the wait is not started again; its first grace ends it', async () => {
    const s = await sentThenOffline(true);
    clock.advance(DEADLINE);
    await flush();
    clock.advance(10);
    const { asks, answer } = await reconnect();
    await answer('done');
    clock.advance(40);
    await flush();
    expect(asks()).toHaveLength(2);
    clock.advance(500);
    await flush();
    expect(notes(s.command_id).filter((n) => n?.includes('waiting for it to reconnect'))).toEqual(['deadline passed while the device is offline; waiting for it to reconnect']);
    clock.advance(5000 - 550 - 1);
    await flush();
    expect(core.status(s.command_id)!.terminal).toBe(false);
    clock.advance(1);
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', terminal_at: new Date(T0 + DEADLINE + 5000).toISOString() });
  });

  it('never received and only sent so far: re-sent with the same request_id, noted with its send count, with a new deadline', async () => {
    const s = await sentThenOffline();
    clock.advance(50);
    const { d, answer } = await reconnect();
    await answer('unknown');
    expect(d.of('cmd')).toEqual([{ t: 'cmd', rid: 'r1', a: 'relay.set', p: { ch: 1, on: true } }]);
    // Both history events carry the time of the re-send.
    expect(core.commands.history(s.command_id).slice(-2)).toEqual([
      { at: T0 + 50, state: 'sent', note: 'device rig1 (same boot, up 60000 ms) never received it; re-sent after reconnect (send #2 of at most 2, same request_id)' },
      { at: T0 + 50, state: 'sent', note: `deadline ${DEADLINE} ms` },
    ]);
    expect(core.status(s.command_id)).toMatchObject({ state: 'sent', deadline_ms: 50 + DEADLINE });
  });

  it('acknowledged once, unknown now, before the deadline: not re-sent; the deadline decides', async () => {
    const s = await sentThenOffline(true);
    clock.advance(50);
    const { d, asks, answer } = await reconnect();
    await answer('unknown');
    expect(d.of('cmd')).toEqual([]);
    expect(core.status(s.command_id)!.state).toBe('accepted');
    await askedAgainAfter(asks, DEADLINE - 50, 1);
  });

  it('acknowledged once, unknown now, at the deadline: the acknowledgement outranks the answer for one more window, then unknown again ends it timeout saying both', async () => {
    const s = await sentThenOffline(true);
    clock.advance(DEADLINE);
    await flush();
    const { d, asks, answer } = await reconnect();
    await answer('unknown');
    expect(asks()).toHaveLength(2);
    await answer('unknown');
    expect(core.status(s.command_id)!.state).toBe('accepted');
    expect(core.commands.history(s.command_id).at(-1)!.note).toBe(
      `deadline passed; the device answered "unknown" but had acknowledged it, so the acknowledgement stands; waiting ${DEADLINE} ms more once`,
    );
    await askedAgainAfter(asks, DEADLINE, 2);
    await answer('unknown');
    expect(d.of('cmd')).toEqual([]);
    expect(core.status(s.command_id)).toMatchObject({
      state: 'timeout',
      detail: 'deadline passed twice; device rig1 acknowledged request r1 but later answered that it has no record of it; the outcome is unknown',
    });
  });

  it('an uptime shorter than the time since sending: DEVICE_REBOOTED, and nothing is re-sent', async () => {
    const s = await sentThenOffline();
    clock.advance(50);
    const { d, answer } = await reconnect();
    await answer('unknown', alive(d, 10));
    expect(core.status(s.command_id)).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
    expect(core.status(s.command_id)!.detail).toContain('(up 10 ms, sent 50 ms ago)');
    expect(d.of('cmd')).toEqual([]);
    expect(states(s.command_id).at(-1)).toBe('failed');
  });

  it('no answer: nothing is decided on the reconnect; the deadline asks again', async () => {
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('unhandledRejection', onError);
    try {
      const s = await sentThenOffline();
      clock.advance(50);
      const { d, asks } = await reconnect();
      clock.advance(DEADLINE - 50);
      await flush();
      expect(asks()).toHaveLength(2);
      clock.advance(500);
      await flush();
      expect(d.of('cmd')).toEqual([]);
      expect(core.status(s.command_id)!.state).toBe('sent');
      expect(errors).toEqual([]);
    } finally {
      process.off('unhandledRejection', onError);
    }
  });

  it('a result that arrives while the host asks decides; the answer that follows cannot undo it', async () => {
    const s = await sentThenOffline(true);
    clock.advance(50);
    const { d, answer } = await reconnect();
    d.send({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    // Even an answer that would mean a restart changes nothing about a command that ended.
    await answer('running', alive(d, 1));
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', error_code: null });
    expect(states(s.command_id).at(-1)).toBe('completed');
  });

  it('a slow device (300 ms round trips) gets three round trips to answer, not the 500 ms default', async () => {
    const d0 = await online('boot0001', 'rig1', 'relay-rig-4ch', 300);
    expect(core.devices.rttMax('rig1')).toBe(300);
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    d0.link.close();
    await flush();
    clock.advance(50);
    const { d, answer } = await reconnect();
    clock.advance(600);
    await answer('unknown');
    expect(d.of('cmd')).toHaveLength(1);
    expect(core.status(s.command_id)!.state).toBe('sent');
  });

  it('re-sent (after the deadline’s question) while the reconnect’s question was out: that older answer changes nothing', async () => {
    const s = await sentThenOffline();
    clock.advance(50);
    const { d, asks } = await reconnect();
    clock.advance(DEADLINE - 50);
    await flush();
    const [onReconnect, atDeadline] = asks();
    d.send({ t: 'state', q: atDeadline.q, s: alive(d), rid: 'r1', rst: 'unknown' });
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
    d.send({ t: 'state', q: onReconnect.q, s: alive(d), rid: 'r1', rst: 'unknown' });
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
    expect(core.status(s.command_id)).toMatchObject({ state: 'sent', deadline_ms: 2 * DEADLINE });
  });

  it('re-sent (after the reconnect’s question) while the deadline’s question was out: that older answer changes nothing', async () => {
    const s = await sentThenOffline();
    clock.advance(50);
    const { d, asks } = await reconnect();
    clock.advance(DEADLINE - 50);
    await flush();
    const [onReconnect, atDeadline] = asks();
    d.send({ t: 'state', q: onReconnect.q, s: alive(d), rid: 'r1', rst: 'unknown' });
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
    d.send({ t: 'state', q: atDeadline.q, s: alive(d), rid: 'r1', rst: 'unknown' });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('sent');
  });

  it('a board re-provisioned without the command’s channel: still running past the deadline, it gets the fallback deadline, one state-query wait (500 ms)', async () => {
    const s = await sentThenOffline(true);
    clock.advance(DEADLINE);
    await flush();
    core.provision('rig1', SECRET, { ...relayBoard, relays: relayBoard.relays.filter((r) => r.ch !== 1) });
    const { answer } = await reconnect();
    await answer('running');
    expect(notes(s.command_id).at(-1)).toBe('device still runs it after reconnecting; deadline extended by 500 ms');
  });

  it('only the reconnecting device’s commands are touched: another device’s open command stays as it is', async () => {
    const slide = await online('boot0001', 'slide', 'stepper-rig');
    const move = await core.submit({ device_id: 'slide', action: 'stepper.move', args: { axis: 'x', mm: 50 } });
    await flush();
    const relay = await sentThenOffline();
    await reconnect('boot0002');
    expect(core.status(relay.command_id)).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
    expect(core.status(move.command_id)!.state).toBe('sent');
    expect(slide.of('q').filter((f) => f.rid !== undefined)).toEqual([]);
  });
});

describe('past the deadline, the answer to the host’s question is about the command as it was', () => {
  it('a result that arrives while the host asks decides; the answer that follows cannot undo it', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(DEADLINE);
    await flush();
    const q = d.of('q').filter((f) => f.rid === 'r1').at(-1)!;
    d.send({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    d.send({ t: 'state', q: q.q, s: alive(d, 1), rid: 'r1', rst: 'running' });
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', error_code: null });
    expect(states(s.command_id).at(-1)).toBe('completed');
  });

  it('a slow device (300 ms round trips) is waited for three round trips before the host gives up asking', async () => {
    await online('boot0001', 'rig1', 'relay-rig-4ch', 300);
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(s.deadline_ms!);
    await flush();
    clock.advance(900);
    await flush();
    expect(notes(s.command_id).at(-1)).toBe('device did not answer a state query within 900 ms; waiting for it to reconnect');
  });

  it('done: noted when it was said, and asked again two round trips (2 × 20 ms) later, not sooner', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(DEADLINE);
    await flush();
    const asks = () => d.of('q').filter((f) => f.rid === 'r1');
    clock.advance(5);
    d.send({ t: 'state', q: asks().at(-1)!.q, s: alive(d), rid: 'r1', rst: 'done' });
    await flush();
    expect(core.commands.history(s.command_id).at(-1)).toEqual({ at: T0 + DEADLINE + 5, state: 'sent', note: 'device says done after the deadline; waiting for its result frame' });
    await askedAgainAfter(asks, 40, 1);
  });

  it('acknowledged, then unknown to the device: not re-sent (it was received once), timeout', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    d.send({ t: 'ack', rid: 'r1', st: 'accepted' });
    clock.advance(DEADLINE);
    await flush();
    const unknown = () => d.send({ t: 'state', q: d.of('q').filter((f) => f.rid === 'r1').at(-1)!.q, s: alive(d), rid: 'r1', rst: 'unknown' });
    unknown();
    await flush();
    // The acknowledgement outranks one "unknown": one more window, never a re-send.
    expect(core.status(s.command_id)!.state).toBe('accepted');
    clock.advance(DEADLINE);
    await flush();
    unknown();
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
  });

  it('a device that stays connected but never answers: timeout when the grace ends, without asking again', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(DEADLINE + 500);
    await flush();
    expect(notes(s.command_id).at(-1)).toBe('device did not answer a state query within 500 ms; waiting for it to reconnect');
    // Its heartbeats keep the connection up (the host closes a link silent for 3 heartbeats).
    for (let t = 0; t < 5000; t += 1000) {
      d.send({ t: 'hb', up: 60_000 + t });
      await flush();
      clock.advance(1000);
      await flush();
    }
    expect(core.devices.session('rig1')).toBeDefined();
    expect(core.status(s.command_id)).toMatchObject({ state: 'timeout', detail: 'deadline passed and device rig1 could not be asked for its real state for 5000 ms more; the outcome is unknown' });
    expect(d.of('q').filter((f) => f.rid === 'r1')).toHaveLength(1);
  });

  it('closing the host while it waits for an answer ends quietly', async () => {
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('unhandledRejection', onError);
    try {
      await online();
      await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
      await flush();
      clock.advance(DEADLINE);
      await flush();
      core.close();
      await flush();
      expect(errors).toEqual([]);
    } finally {
      process.off('unhandledRejection', onError);
      setCore(makeCore());
    }
  });
});
