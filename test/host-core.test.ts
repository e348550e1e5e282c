// Host-core behaviour against a scripted device on an in-memory Link and a virtual clock.
import { describe, expect, it } from 'vitest';
import { FakeDevice, flush } from './helpers/fake-device.js';
import type { ResultFrame } from '@proofrig/protocol';
import { SECRET, clock, core, logLines, online, pastDeadline, useHostCore } from './helpers/host-core-fixture.js';

useHostCore();

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
    expect(d.of('ok')[0]).toMatchObject({ t: 'ok', hb: 1000 });
    expect(d.hostProved).toBe(true); // the welcome carries the host's proof of the secret
    expect(core.devices.view('rig1')).toMatchObject({ online: true, boot_id: 'boot0001' });
  });
});

describe('malformed and unknown frames (correctly sealed) are answered and change nothing', () => {
  it.each([
    ['not json', 'MALFORMED_FRAME', /not valid JSON/],
    [JSON.stringify({ t: 5 }), 'MALFORMED_FRAME', /no string field "t"/],
    [JSON.stringify({ t: 'res', rid: 'x' }), 'MALFORMED_FRAME', /res: st must be/],
    [JSON.stringify({ t: 'res', rid: 'x', st: 'completed', ev: 'none', ver: true, s: { up: 1, relays: [] }, ms: 1 }), 'MALFORMED_FRAME', /ver cannot be true without evidence/],
    [JSON.stringify({ t: 'teleport' }), 'UNKNOWN_FRAME', /unknown frame type "teleport"/],
  ])('%s → %s', async (text, code, msg) => {
    const d = await online();
    const c = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
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
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s).toMatchObject({ state: 'rejected', terminal: true, error_code: 'DEVICE_OFFLINE', accepted: false, executed: false, verified: false });
    const d = await online();
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });

  it('an unknown device is rejected with DEVICE_OFFLINE and says so', async () => {
    const s = await core.submit({ device_id: 'ghost', action: 'relay.set', args: { ch: 1, on: true } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    expect(s.detail).toMatch(/no device "ghost"/);
  });

  it('a channel the board does not have is rejected with INVALID_ARGS naming the valid ones', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 7, on: true } });
    expect(s).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(s.detail).toMatch(/valid channels: 1, 2, 3, 4/);
    await flush();
    expect(d.of('cmd')).toHaveLength(0);
  });
});

describe('after the handshake every device frame must be the next sealed one: the rest is refused, counted, never acted on', () => {
  /** Online, one relay command sent; returns the device, the command and a completed result for it. */
  async function withCommand() {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    const rid = d.of('cmd')[0].rid as string;
    const res = { t: 'res', rid, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 25 };
    return { d, s, res };
  }
  const unchanged = async (d: FakeDevice, commandId: string, refused: number) => {
    await flush();
    expect(core.status(commandId)!.state).toBe('sent');
    expect(d.of('rack')).toEqual([]);
    expect(d.of('err')).toEqual([]); // refused frames get no answer
    expect(core.devices.view('rig1')).toMatchObject({ online: true, refused_frames: { by_host: refused, by_device: 0 } });
  };

  it('the host proves the secret in its welcome and seals everything it sends afterwards', async () => {
    const d = await online();
    expect(d.hostProved).toBe(true);
    expect(d.raw.slice(d.raw.findIndex((t) => t.includes('"t":"ok"')) + 1).length).toBeGreaterThan(0);
    expect(d.refused).toEqual([]); // every later host frame passed the device-side check (MAC + counter)
  });

  it('a forged result (a key without the secret) is refused', async () => {
    const { d, s, res } = await withCommand();
    d.sendRaw(d.sealed(res, d.txN + 1, Buffer.alloc(32, 1)));
    await unchanged(d, s.command_id, 1);
  });

  it('an unsealed result is refused', async () => {
    const { d, s, res } = await withCommand();
    d.sendRaw(JSON.stringify(res));
    await unchanged(d, s.command_id, 1);
  });

  it('a truncated result is refused', async () => {
    const { d, s, res } = await withCommand();
    d.sendRaw(d.sealed(res, d.txN + 1).slice(0, -10) + '"}');
    await unchanged(d, s.command_id, 1);
  });

  it('a result sealed by the device with a counter past the next one means a frame was lost: refused, and the link is ended so the device reconnects and re-sends it (chaos seed 3934)', async () => {
    const { d, s, res } = await withCommand();
    d.sendRaw(d.sealed(res, d.txN + 2));
    await flush();
    expect(core.status(s.command_id)!.state).toBe('sent'); // never acted on
    expect(d.closed).toBe(true); // not a deaf link that refuses every later frame until liveness gives up
    expect(core.devices.view('rig1')!.online).toBe(false);
    expect(logLines).toContainEqual(expect.objectContaining({ evt: 'frame_refused', why: expect.stringContaining('a frame was lost') }));
    const again = await online();
    again.send(res);
    await flush();
    expect(core.status(s.command_id)!.state).toBe('completed');
  });

  it('a frame past the next counter under a MAC the device did not make is refused without ending the link', async () => {
    const { d, s, res } = await withCommand();
    d.sendRaw(d.sealed(res, d.txN + 2, Buffer.alloc(32, 1)));
    await unchanged(d, s.command_id, 1);
    expect(d.closed).toBe(false);
  });

  it('a replayed frame is refused: the same sealed ack twice is counted once as refused', async () => {
    const { d, s } = await withCommand();
    const ack = d.sealed({ t: 'ack', rid: d.of('cmd')[0].rid, st: 'accepted' }, d.txN + 1);
    d.sendRaw(ack);
    await flush();
    expect(core.status(s.command_id)!.state).toBe('accepted');
    d.sendRaw(ack);
    await flush();
    expect(core.devices.view('rig1')!.refused_frames).toEqual({ by_host: 1, by_device: 0 });
  });

  it("the device's count of refused host frames (hb.bad) is shown too", async () => {
    const d = await online();
    d.send({ t: 'hb', up: 5, bad: 3 });
    await flush();
    expect(core.devices.view('rig1')!.refused_frames).toEqual({ by_host: 0, by_device: 3 });
  });
});

describe('the lifecycle follows the device', () => {
  it('sent → accepted → completed with the evidence and state the device reported, confirmed once', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
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
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true } });
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
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-42' });
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { on: true, ch: 1 }, request_id: 'agent-42' });
    expect(b.command_id).toBe(a.command_id);
    await flush();
    expect(d.of('cmd')).toHaveLength(1);
  });

  it('a request_id reused for different arguments is rejected, not merged', async () => {
    await online();
    await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'agent-43' });
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: false }, request_id: 'agent-43' });
    expect(b).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(b.detail).toMatch(/already used/);
  });
});

describe('completed is recorded only with verified evidence, whatever the validator let through', () => {
  // These call the core directly with frames the validator would refuse: the guard in the core
  // must hold on its own.
  const lie = (d: FakeDevice, rid: string, ev: string, ver: boolean) =>
    core.commands.result(core.devices.session('rig1')!, { t: 'res', rid, st: 'completed', ev, ver, msg: 'all good', s: d.state(true), ms: 3 } as ResultFrame);

  for (const [ev, ver, why] of [
    ['aux_contact', false, 'verified=false'],
    ['none', true, 'evidence=none'],
    ['none', false, 'evidence=none and verified=false'],
  ] as const) {
    it(`a "completed" with ${why} ends failed UNPROVEN_COMPLETION with the device's claim in the detail`, async () => {
      const d = await online();
      const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
      await flush();
      lie(d, s.request_id, ev, ver);
      await flush();
      expect(core.status(s.command_id)!).toMatchObject({
        state: 'failed',
        terminal: true,
        error_code: 'UNPROVEN_COMPLETION',
        verified: false,
        executed: true,
        evidence: ev,
      });
      expect(core.status(s.command_id)!.detail).toBe(
        `device rig1 claimed completed, evidence=${ev}, verified=${ver}: all good; completed needs verified evidence, so the host records failed. The actuator state is unknown: read the device state before retrying.`,
      );
      expect(core.status(s.command_id)!.accepted).toBe(true);
      expect(logLines.find((l) => l.evt === 'unproven_completion')).toMatchObject({
        msg: 'device claimed completed without verified evidence',
        device_id: 'rig1',
        rid: s.request_id,
        claim: `completed, evidence=${ev}, verified=${ver}: all good`,
      });
      // confirmed, so the device does not re-send the lie forever
      expect(d.of('rack')).toEqual([{ t: 'rack', rid: s.request_id }]);
      expect(logLines.filter((l) => l.command_id === s.command_id && l.phase === 'terminal').map((l) => l.state)).toEqual(['failed']);
    });
  }

  it('a claim without a message is quoted as it came, with nothing added', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    core.commands.result(core.devices.session('rig1')!, { t: 'res', rid: s.request_id, st: 'completed', ev: 'none', ver: true, s: d.state(true), ms: 3 } as ResultFrame);
    await flush();
    expect(core.status(s.command_id)!.detail).toMatch(/^device rig1 claimed completed, evidence=none, verified=true; completed needs verified evidence/);
  });

  it('a proper completed that follows the refused claim changes nothing: the command stays failed, the late result is noted and confirmed', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    lie(d, s.request_id, 'none', true);
    await flush();
    d.send({ t: 'res', rid: s.request_id, st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'failed', error_code: 'UNPROVEN_COMPLETION', verified: false });
    expect(core.commands.history(s.command_id).at(-1)).toMatchObject({ state: 'failed', note: 'late result from device ignored: completed' });
    expect(d.of('rack')).toEqual([{ t: 'rack', rid: s.request_id }, { t: 'rack', rid: s.request_id }]);
  });

  it('a verified completed with evidence still completes (the guard refuses only the contradiction)', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true } });
    await flush();
    core.commands.result(core.devices.session('rig1')!, { t: 'res', rid: s.request_id, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 3 });
    await flush();
    expect(core.status(s.command_id)!).toMatchObject({ state: 'completed', verified: true, evidence: 'pin_readback', error_code: null, detail: null });
  });

  it('through the link, the validator answers such a frame MALFORMED_FRAME and the command is not completed', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
    await flush();
    d.send({ t: 'res', rid: s.request_id, st: 'completed', ev: 'aux_contact', ver: false, s: d.state(true), ms: 3 });
    await flush();
    expect(d.of('err').at(-1)).toMatchObject({ code: 'MALFORMED_FRAME', ref: s.request_id });
    expect(core.status(s.command_id)!.state).toBe('sent');
  });
});

describe('the status says exactly what the device reported', () => {
  // A result without an ack first: accepted, executed and verified come from the result alone.
  for (const [res, want] of [
    [{ st: 'unverified', ev: 'none', ver: false }, { state: 'unverified', accepted: true, executed: true, verified: false, evidence: 'none', error_code: null }],
    [{ st: 'failed', ev: 'aux_contact', ver: false, code: 'NO_FEEDBACK' }, { state: 'failed', accepted: true, executed: true, verified: false, evidence: 'aux_contact', error_code: 'NO_FEEDBACK' }],
    [{ st: 'rejected', ev: 'none', ver: false, code: 'BUSY' }, { state: 'rejected', accepted: false, executed: false, verified: false, evidence: 'none', error_code: 'BUSY' }],
    [{ st: 'cancelled', ev: 'aux_contact', ver: false, code: 'CANCELLED' }, { state: 'cancelled', accepted: true, executed: false, verified: false, evidence: 'aux_contact', error_code: 'CANCELLED' }],
    [{ st: 'completed', ev: 'aux_contact', ver: true }, { state: 'completed', accepted: true, executed: true, verified: true, evidence: 'aux_contact', error_code: null }],
  ] as const) {
    // plain test names: Stryker's vitest runner selects tests by name
    it(`a ${res.st} result sets accepted, executed, verified, evidence and error code as reported, the message as detail, no position for a relay`, async () => {
      const d = await online();
      const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
      await flush();
      d.send({ t: 'res', rid: s.request_id, ...res, msg: 'device says', s: d.state(true), ms: 3 });
      await flush();
      expect(core.status(s.command_id)!).toMatchObject({ ...want, detail: 'device says', position_mm: null, terminal: true });
    });
  }

  it('a result without a message has detail null', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true } });
    await flush();
    d.send({ t: 'res', rid: s.request_id, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 3 });
    await flush();
    expect(core.status(s.command_id)!.detail).toBeNull();
  });

  it('a result for a request this host never sent is confirmed, logged and changes nothing', async () => {
    const d = await online();
    d.send({ t: 'res', rid: 'never-sent', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    expect(d.of('rack')).toEqual([{ t: 'rack', rid: 'never-sent' }]);
    expect(logLines.find((l) => l.evt === 'unknown_result')).toMatchObject({ device_id: 'rig1', rid: 'never-sent', msg: 'result for a request this host never sent' });
    expect(core.journal.byRequest('rig1', 'never-sent')).toBeUndefined();
  });

  it('a late result after timeout is noted in the history, confirmed, and the command stays timeout; a repeat of a completed result leaves no note', async () => {
    const { d, s, rid, query } = await pastDeadline();
    // Still running at the deadline, and again after the one extra window: timeout.
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'running' });
    await flush();
    clock.advance(s.deadline_ms!);
    await flush();
    d.send({ t: 'state', q: query().q, s: d.state(), rid, rst: 'running' });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('timeout');
    d.send({ t: 'res', rid, st: 'failed', ev: 'aux_contact', ver: false, code: 'NO_FEEDBACK', msg: 'stayed open', s: d.state(true), ms: 3 });
    await flush();
    expect(core.status(s.command_id)!.state).toBe('timeout');
    expect(core.commands.history(s.command_id).at(-1)).toMatchObject({ state: 'timeout', note: 'late result from device ignored: failed NO_FEEDBACK: stayed open' });
    expect(d.of('rack').at(-1)).toEqual({ t: 'rack', rid });

    const c = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true } });
    await flush();
    const res = { t: 'res', rid: c.request_id, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 3 };
    d.send(res);
    await flush();
    const n = core.commands.history(c.command_id).length;
    d.send(res);
    await flush();
    expect(core.commands.history(c.command_id)).toHaveLength(n);
  });
});
