// What the host core does with open commands across a host restart (they keep their deadlines), after
// a journal batch that failed to commit, when a wait's limit passes with a batch open, and what the
// log says about each command (split from host-commands-resync.test.ts; shared setup in helpers/resync-fixture.ts).
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { Journal } from '../host/src/core/journal/journal.js';
import { blankCommand } from '../host/src/core/journal/records.js';
import { flush } from './helpers/fake-device.js';
import { T0, DEADLINE, FailingJournal, clock, db, core, logLines, makeCore, online, alive, reconnect, notes, setCore, useResyncCore } from './helpers/resync-fixture.js';

useResyncCore();

describe('a host restart', () => {
  it('an open command keeps the deadline it was sent with', async () => {
    await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(100);
    core.close();
    setCore(makeCore());
    clock.advance(DEADLINE - 100 - 1);
    await flush();
    expect(core.status(s.command_id)).toMatchObject({ state: 'sent', terminal: false });
    expect(notes(s.command_id)).toHaveLength(2);
    clock.advance(1);
    await flush();
    expect(notes(s.command_id).at(-1)).toBe('deadline passed while the device is offline; waiting for it to reconnect');
  });

  it('an open command journaled by a version that did not record when it was sent: the uptime cannot tell a restart, so the answer decides', async () => {
    await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    core.close();
    const raw = new Database(db);
    raw.prepare('UPDATE commands SET sent_at = NULL').run();
    raw.close();
    clock.advance(50);
    setCore(makeCore());
    const { d, answer } = await reconnect();
    await answer('unknown', alive(d, 10));
    expect(core.status(s.command_id)!.state).toBe('sent');
    expect(d.of('cmd')).toHaveLength(1);
  });

  it('a command journaled but never sent before the host stopped ends timeout, saying nothing reached the device', async () => {
    core.close();
    const j = new Journal(db);
    j.insert({ ...blankCommand(), command_id: 'cmd_unsent', device_id: 'rig1', request_id: 'old-1', action: 'relay.set', args: { ch: 1, on: true }, submitted_at: T0, updated_at: T0 });
    j.close();
    setCore(makeCore());
    expect(core.status('cmd_unsent')).toMatchObject({
      state: 'timeout',
      terminal: true,
      error_code: 'TIMEOUT',
      detail: 'the host stopped before this command was sent; nothing reached the device',
    });
  });
});

describe('a journal batch that failed to commit', () => {
  it('a result lost with its batch leaves the command open with its deadline; a command already waiting for its device is left waiting; it is logged', async () => {
    core.close();
    const j = new FailingJournal(db);
    setCore(makeCore(j));
    const d = await online();
    // B: its deadline passed and the device did not answer: it waits for the device (grace).
    const b = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true }, request_id: 'b' });
    await flush();
    clock.advance(DEADLINE + 500);
    await flush();
    expect(notes(b.command_id).at(-1)).toBe('device did not answer a state query within 500 ms; waiting for it to reconnect');
    const asksB = () => d.of('q').filter((f) => f.rid === 'b');
    expect(asksB()).toHaveLength(1);
    // A: its result arrives, and that batch fails to commit.
    const a = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'a' });
    await flush();
    j.failNext = true;
    d.send({ t: 'res', rid: 'a', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    expect(core.status(a.command_id)!.state).toBe('sent');
    expect(d.of('rack')).toEqual([]);
    expect(logLines.filter((l) => l.evt === 'journal_commit_failed')).toMatchObject([
      { msg: 'journal batch rolled back; its frames and answers were withheld', err: expect.stringContaining('disk I/O error (simulated)') },
    ]);
    await flush();
    expect(asksB()).toHaveLength(1);
    clock.advance(DEADLINE - 1);
    await flush();
    expect(d.of('q').filter((f) => f.rid === 'a')).toHaveLength(0);
    clock.advance(1);
    await flush();
    expect(d.of('q').filter((f) => f.rid === 'a')).toHaveLength(1);
    expect(asksB()).toHaveLength(1);
  });
});

describe('a wait whose time limit passes while a batch is open', () => {
  it('resolves once that batch is settled, with what is on disk: after a failed commit, the state from before it', async () => {
    core.close();
    const j = new FailingJournal(db);
    setCore(makeCore(j));
    await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    let got: unknown;
    void core.commands.waitTerminal(s.command_id, 50).then((v) => (got = v));
    j.group(() => {
      j.update({ ...j.get(s.command_id)!, state: 'running', accepted: true }, true);
      j.failNext = true;
      clock.advance(50);
    });
    await flush();
    expect(got).toMatchObject({ command_id: s.command_id, state: 'sent', accepted: false });
  });
});

describe('what the log says about a command', () => {
  it('one line when it is submitted and one when it ends, with its outcome and how long it took', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(20);
    d.send({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, s: d.state(true), ms: 3 });
    await flush();
    const lines = logLines.filter((l) => l.evt === 'command').map(({ time: _t, pid: _p, hostname: _h, level: _l, ...l }) => l);
    expect(lines).toStrictEqual([
      { evt: 'command', phase: 'submitted', command_id: s.command_id, request_id: 'r1', device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, msg: 'command submitted' },
      {
        evt: 'command',
        phase: 'terminal',
        command_id: s.command_id,
        device_id: 'rig1',
        state: 'completed',
        evidence: 'aux_contact',
        verified: true,
        error_code: null,
        elapsed_ms: 20,
        detail: null,
        msg: 'command completed',
      },
    ]);
  });
});
