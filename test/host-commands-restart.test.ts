// What the host core does with open commands across a host restart (they keep their deadlines), after
// a journal batch that failed to commit, when a wait's limit passes with a batch open, and what the
// log says about each command (split from host-commands-resync.test.ts; shared setup as there).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { HostCore } from '../host/src/core/host.js';
import { Journal } from '../host/src/core/journal/journal.js';
import { blankCommand } from '../host/src/core/journal/records.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef, DeviceState } from '@proofrig/protocol';
import { FakeDevice, flush } from './helpers/fake-device.js';

const relayBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const stepperBoard: BoardDef = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8'));
const SECRET = 'a'.repeat(64);
const T0 = 1_700_000_000_000;
/** relay.set on channel 1 with the minimum round trip (20 ms): ceil(3·20 + 80 + 1.5·25). */
const DEADLINE = 178;

/** A journal whose next batch commit can be made to fail (a full disk, an I/O error). */
class FailingJournal extends Journal {
  failNext = false;
  protected override commit(): void {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk I/O error (simulated)');
    }
    super.commit();
  }
}

let clock: VirtualClock;
let db: string;
let core: HostCore;
let logLines: Record<string, unknown>[];

function makeCore(journal?: Journal) {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) logLines.push(JSON.parse(l));
      cb();
    },
  });
  return new HostCore({ db, journal, clock, logger: pino({ level: 'info' }, sink), heartbeatMs: 1000, offlineGraceMs: 5000 });
}

beforeEach(() => {
  clock = new VirtualClock(T0);
  logLines = [];
  db = join(mkdtempSync(join(tmpdir(), 'proofrig-resync-')), 'journal.db');
  core = makeCore();
  core.provision('rig1', SECRET, relayBoard);
  core.provision('slide', SECRET, stepperBoard);
});
afterEach(() => core.close());

/** Connect a device and answer the host's first state query after `rttMs` (the round trip it measures). */
async function online(boot = 'boot0001', dev = 'rig1', board = 'relay-rig-4ch', rttMs = 0) {
  const d = new FakeDevice(core, dev, SECRET, boot, board);
  await d.connect();
  clock.advance(rttMs);
  d.answerStateQuery();
  await flush();
  return d;
}

/** Up long enough not to have restarted since anything in these tests was sent. */
const alive = (d: FakeDevice, up = 60_000): DeviceState => ({ ...d.state(), up });

/** The device back with the same boot id: `ask()` is the host's latest question about r1, `answer` replies to it. */
async function reconnect(boot = 'boot0001') {
  const d = await online(boot);
  const asks = () => d.of('q').filter((f) => f.rid === 'r1');
  const answer = async (rst: 'running' | 'done' | 'unknown', s: DeviceState = alive(d)) => {
    d.send({ t: 'state', q: asks().at(-1)!.q, s, rid: 'r1', rst });
    await flush();
  };
  return { d, asks, answer };
}

const notes = (id: string) => core.commands.history(id).map((e) => e.note);

describe('a host restart', () => {
  it('an open command keeps the deadline it was sent with', async () => {
    await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    clock.advance(100);
    core.close();
    core = makeCore();
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
    core = makeCore();
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
    core = makeCore();
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
    core = makeCore(j);
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
    core = makeCore(j);
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
