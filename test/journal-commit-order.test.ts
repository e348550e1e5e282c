// Group commit, who hears of a write: the host core's frames and answers and MCP messages leave only
// after the journal committed what they report; on a virtual clock each step commits when it ends
// (split from journal-group-commit.test.ts; shared setup as there).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { unseal } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { HostCore } from '../host/src/core/host.js';
import type { Link } from '../host/src/core/memory-link.js';
import { durable } from '../host/src/mcp/durable.js';
import { FakeDevice, flush, ridden } from './helpers/fake-device.js';
import { board, SECRET, immediate, TestJournal, newDb, onDisk } from './helpers/group-commit.js';

describe('the host core on the real clock: a frame or an answer never runs ahead of its journal row', () => {
  let path: string;
  let reader: Database.Database;
  let j: TestJournal;
  let core: HostCore;
  /** Every frame the host put on the device's link, with what the disk held for its rid at that moment. */
  let sent: { t: string; rid?: string; disk?: string }[];

  beforeEach(() => {
    path = newDb();
    j = new TestJournal(path, immediate);
    core = new HostCore({ db: path, journal: j, heartbeatMs: 60_000 });
    core.provision('rig1', SECRET, board);
    reader = new Database(path, { readonly: true });
    sent = [];
    const attach = core.attach.bind(core);
    core.attach = (link: Link) => {
      const send = link.send.bind(link);
      link.send = (text: string) => {
        const f = JSON.parse(unseal(text)?.body ?? text) as { t: string; rid?: string };
        sent.push({ t: f.t, rid: f.rid, disk: typeof f.rid === 'string' ? onDisk(reader, f.rid) : undefined });
        send(text);
      };
      return attach(link);
    };
  });
  afterEach(() => {
    core.close();
    reader.close();
  });

  async function online(): Promise<FakeDevice> {
    return new FakeDevice(core, 'rig1', SECRET, 'boot0001').online();
  }

  it('four submits in one turn share one commit; each cmd frame leaves with its row already on disk as sent', async () => {
    const d = await online();
    const before = j.commits;
    const pending = [1, 2, 3, 4].map((ch) => core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch, on: true }, request_id: 'r' + ch }));
    expect(sent.filter((s) => s.t === 'cmd')).toEqual([]);
    const answers = await Promise.all(pending);
    expect(j.commits - before).toBe(1);
    // Each answer is already on disk when the caller gets it.
    expect(answers.map((a) => [a.state, onDisk(reader, a.request_id)])).toEqual([1, 2, 3, 4].map(() => ['sent', 'sent']));
    await flush();
    expect(sent.filter((s) => s.t === 'cmd')).toEqual([1, 2, 3, 4].map((ch) => ({ t: 'cmd', rid: 'r' + ch, disk: 'sent' })));
    expect(d.of('cmd').map((f) => f.rid)).toEqual(['r1', 'r2', 'r3', 'r4']);
  });

  it('the result is on disk before the waiter hears of it, before change events, and before the rack', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'res-1' });
    await flush();
    const heard: (string | undefined)[] = [];
    core.commands.on('change:' + s.command_id, (v: { state: string }) => heard.push(v.state + '/' + onDisk(reader, 'res-1')));
    const waiter = core.waitTerminal(s.command_id, 5000).then((v) => [v?.state, onDisk(reader, 'res-1')]);
    d.send({ t: 'ack', rid: 'res-1', st: 'accepted' });
    d.send({ t: 'res', rid: 'res-1', st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 2 });
    expect(await waiter).toEqual(['completed', 'completed']);
    await ridden();
    // Both frames arrived in one turn, so one commit holds both and both events follow it.
    expect(heard).toEqual(['accepted/completed', 'completed/completed']);
    expect(sent.filter((f) => f.t === 'rack')).toEqual([{ t: 'rack', rid: 'res-1', disk: 'completed' }]);
  });

  it('a submit whose batch fails to commit is rejected, nothing is sent, and the journal holds nothing of it', async () => {
    const d = await online();
    j.failNext = true;
    const doomed = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'doomed' });
    const other = core.journal.flushed().then(() => 'resolved', (e: Error) => e.message);
    await expect(doomed).rejects.toThrow(/^journal commit failed \(disk I\/O error \(simulated\)\); nothing of it was sent or answered$/);
    expect(await other).toMatch(/^journal commit failed/);
    await flush();
    expect(sent.filter((f) => f.t === 'cmd')).toEqual([]);
    expect(d.of('cmd')).toEqual([]);
    expect(core.journal.byRequest('rig1', 'doomed')).toBeUndefined();
    expect(onDisk(reader, 'doomed')).toBeUndefined();
    // The same request id runs once the journal works again.
    const again = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'doomed' });
    expect(again.state).toBe('sent');
    await flush();
    expect(d.of('cmd').map((f) => f.rid)).toEqual(['doomed']);
  });

  it('a result whose batch fails to commit is not racked nor told; the re-sent result completes the command', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'lost-1' });
    await flush();
    const heard: string[] = [];
    core.commands.on('change:' + s.command_id, (v: { state: string }) => heard.push(v.state));
    j.failNext = true;
    const res = { t: 'res', rid: 'lost-1', st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 2 };
    d.send(res);
    await ridden();
    expect(heard).toEqual([]);
    expect(sent.filter((f) => f.t === 'rack')).toEqual([]);
    expect(core.status(s.command_id)?.state).toBe('sent');
    expect(onDisk(reader, 'lost-1')).toBe('sent');
    // As the firmware does when asked after the deadline: the stored result again.
    d.send(res);
    await ridden();
    expect(heard).toEqual(['completed']);
    expect(core.status(s.command_id)?.state).toBe('completed');
    expect(sent.filter((f) => f.t === 'rack')).toEqual([{ t: 'rack', rid: 'lost-1', disk: 'completed' }]);
  });

  it('a terminal write lost with its batch gets its deadline back: the host asks the device again', async () => {
    const d = await online();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'lost-2' });
    expect(s.deadline_ms).toBeLessThan(3000);
    await flush();
    j.failNext = true;
    d.send({ t: 'res', rid: 'lost-2', st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 2 });
    await flush();
    expect(core.status(s.command_id)?.state).toBe('sent');
    await new Promise((r) => setTimeout(r, s.deadline_ms! + 100));
    expect(d.of('q').filter((f) => f.rid === 'lost-2')).toHaveLength(1);
  });
});

describe('MCP messages leave only after the journal committed what they report', () => {
  let j: TestJournal;
  let core: HostCore;
  beforeEach(() => {
    const path = newDb();
    j = new TestJournal(path, immediate);
    core = new HostCore({ db: path, journal: j });
    core.provision('rig1', SECRET, board);
  });
  afterEach(() => core.close());

  async function gated(): Promise<{ t: Transport; out: JSONRPCMessage[] }> {
    const out: JSONRPCMessage[] = [];
    const t: Transport = {
      start: async () => {},
      close: async () => {},
      send: async (m) => void out.push(m),
    };
    await durable(core, new McpServer({ name: 't', version: '1' })).connect(t);
    return { t, out };
  }

  it('an answer sent while a batch is open waits for its commit, in order with later messages', async () => {
    const { t, out } = await gated();
    core.journal.seen('rig1', 'b1', 1);
    void t.send({ jsonrpc: '2.0', id: 1, result: {} });
    void t.send({ jsonrpc: '2.0', method: 'notifications/message', params: {} });
    await Promise.resolve();
    await Promise.resolve();
    expect(out).toEqual([]);
    const commits = j.commits;
    await flush(1);
    await flush(1);
    expect(j.commits).toBe(commits + 1);
    expect(out.map((m) => ('id' in m ? m.id : (m as { method: string }).method))).toEqual([1, 'notifications/message']);
  });

  it('an answer whose batch failed is replaced by a JSON-RPC error for the same id; a notification is dropped', async () => {
    const { t, out } = await gated();
    j.failNext = true;
    core.journal.seen('rig1', 'b1', 1);
    void t.send({ jsonrpc: '2.0', id: 7, result: { state: 'completed' } });
    void t.send({ jsonrpc: '2.0', method: 'notifications/progress', params: {} });
    await flush(3);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32603 } });
    expect((out[0] as { error: { message: string } }).error.message).toMatch(/^journal commit failed \(disk I\/O error \(simulated\)\)/);
    expect('result' in out[0]).toBe(false);
  });
});

describe('on a virtual clock (simulation, chaos) each step commits when it ends', () => {
  it('submit sends its frame within the call, after its own commit, and resolves with what is on disk', async () => {
    const path = newDb();
    const clock = new VirtualClock(1_700_000_000_000);
    const jj = new TestJournal(path);
    const core = new HostCore({ db: path, journal: jj, clock, heartbeatMs: 1000 });
    core.provision('rig1', SECRET, board);
    const reader = new Database(path, { readonly: true });
    try {
      const d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
      await d.connect();
      const before = jj.commits;
      const p = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'v1' });
      expect(jj.commits).toBe(before + 1);
      expect(onDisk(reader, 'v1')).toBe('sent');
      expect((await p).state).toBe('sent');
      await flush();
      expect(d.of('cmd').map((f) => f.rid)).toEqual(['v1']);
    } finally {
      core.close();
      reader.close();
    }
  });
});
