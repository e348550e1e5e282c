// Group commit: journal writes of one event-loop turn share one COMMIT, and nothing that tells anyone
// about a write (a frame to a device, an answer, a change event, an MCP message) leaves before that
// COMMIT returned. "On disk" is checked the only honest way: a second SQLite connection, which sees
// committed rows only. A batch that fails to commit sends nothing and tells every waiter.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { flush } from './helpers/fake-device.js';
import { immediate, TestJournal, newDb, onDisk, command } from './helpers/group-commit.js';

describe('the journal batches writes and tells only after the commit', () => {
  let path: string;
  let reader: Database.Database;
  let j: TestJournal;
  beforeEach(() => {
    path = newDb();
  });
  afterEach(() => {
    reader?.close();
    j?.close();
  });

  it('on the real clock, writes of one turn are one commit at its end, and afterCommit runs after it', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    const ran: string[] = [];
    j.insert(command(1));
    j.afterCommit(() => ran.push('after 1:' + onDisk(reader, 'req_1')));
    j.insert(command(2));
    j.afterCommit(() => ran.push('after 2:' + onDisk(reader, 'req_2')));
    expect(j.uncommitted).toBe(true);
    expect(onDisk(reader, 'req_1')).toBeUndefined();
    expect(j.get('cmd_2')?.request_id).toBe('req_2'); // the host itself sees its batch
    expect(ran).toEqual([]);
    await flush(1);
    expect(j.commits).toBe(1);
    expect(ran).toEqual(['after 1:submitted', 'after 2:submitted']);
    expect(j.uncommitted).toBe(false);
  });

  it('without a deferral (virtual clock), a group commits when the outermost group ends', () => {
    j = new TestJournal(path);
    reader = new Database(path, { readonly: true });
    const ran: string[] = [];
    j.group(() => {
      j.group(() => {
        j.insert(command(1));
        j.afterCommit(() => ran.push('inner'));
      });
      expect(onDisk(reader, 'req_1')).toBeUndefined();
      expect(ran).toEqual([]);
    });
    expect(onDisk(reader, 'req_1')).toBe('submitted');
    expect(ran).toEqual(['inner']);
    expect(j.commits).toBe(1);
    // Outside a group a write commits at once (its own transaction, not a batch).
    j.insert(command(2));
    expect(onDisk(reader, 'req_2')).toBe('submitted');
    expect(j.uncommitted).toBe(false);
  });

  it('flushed() resolves at once with nothing pending, and after the commit with something pending', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    let idle = false;
    await j.flushed().then(() => (idle = true));
    expect(idle).toBe(true);
    j.insert(command(1));
    let seen: string | undefined = 'not yet';
    const p = j.flushed().then(() => (seen = onDisk(reader, 'req_1')));
    await Promise.resolve();
    expect(seen).toBe('not yet');
    await p;
    expect(seen).toBe('submitted');
  });

  it('a batch that fails to commit is rolled back: every waiter is told, no afterCommit runs, memory is what is on disk', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    const c = command(1);
    j.insert(c);
    await j.flushed();
    const rolledBack: string[] = [];
    j.onRollback = (e) => rolledBack.push(e.message);
    j.failNext = true;
    const acked = { ...c, state: 'accepted' as const, accepted: true };
    j.update(acked, true);
    j.insert(command(2));
    const ran: string[] = [];
    const failed: string[] = [];
    j.afterCommit(
      () => ran.push('sent'),
      (e) => failed.push(e.message),
    );
    const waiters = [j.flushed(), j.flushed()].map((p) => p.then(() => 'resolved', (e: Error) => e.message));
    await flush(1);
    expect(ran).toEqual([]);
    expect(failed).toEqual(['journal commit failed (disk I/O error (simulated)); nothing of it was sent or answered']);
    expect(await Promise.all(waiters)).toEqual([failed[0], failed[0]]);
    expect(rolledBack).toEqual([failed[0]]);
    expect(onDisk(reader, 'req_1')).toBe('submitted');
    expect(onDisk(reader, 'req_2')).toBeUndefined();
    expect(j.get('cmd_1')?.state).toBe('submitted');
    expect(j.get('cmd_2')).toBeUndefined();
    expect(j.open().map((x) => x.command_id)).toEqual(['cmd_1']);
    // The journal goes on: the next batch commits.
    j.update(acked, true);
    await j.flushed();
    expect(onDisk(reader, 'req_1')).toBe('accepted');
  });

  it('a write that fails inside a batch (staged, it reaches SQLite at the flush) fails the whole batch: nothing partial is committed and every waiter is told', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    const rolledBack: string[] = [];
    j.onRollback = (e) => rolledBack.push(e.message);
    j.insert({ ...command(1), state: 'completed', terminal_at: 5 });
    await j.flushed();
    // Same command id as a command that has ended, other request: the row's primary key refuses it at the flush.
    j.insert({ ...command(1), request_id: 'req_other' });
    j.insert(command(2));
    const waiter = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    await flush(1);
    const msg = await waiter;
    expect(msg).toBe('journal commit failed (UNIQUE constraint failed: commands.command_id); nothing of it was sent or answered');
    expect(rolledBack).toEqual([msg]);
    expect(j.commits).toBe(1);
    expect(onDisk(reader, 'req_other')).toBeUndefined();
    expect(onDisk(reader, 'req_2')).toBeUndefined();
    expect(j.open()).toEqual([]);
    expect(j.get('cmd_1')?.state).toBe('completed');
    // The next batch is clean again and commits.
    j.insert(command(3));
    await j.flushed();
    expect(onDisk(reader, 'req_3')).toBe('submitted');
    expect(j.events('cmd_3')).toHaveLength(1);
  });

  it('a flush that a read forces and that fails throws to that reader and poisons the batch: commitBatch rolls all of it back', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    j.insert({ ...command(1), state: 'completed', terminal_at: 5 });
    await j.flushed();
    j.insert(command(2));
    j.insert({ ...command(1), request_id: 'req_other' });
    expect(() => j.recent()).toThrow('UNIQUE constraint failed: commands.command_id');
    const waiter = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    await flush(1);
    expect(await waiter).toBe('journal commit failed (a write of the batch failed: UNIQUE constraint failed: commands.command_id); nothing of it was sent or answered');
    expect(onDisk(reader, 'req_2')).toBeUndefined();
    expect(j.get('cmd_2')).toBeUndefined();
  });

  it('a second record under an open command id or an open request is refused at once, and the batch goes on', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    j.insert(command(1));
    expect(() => j.insert({ ...command(1), request_id: 'req_other' })).toThrow('journal: command cmd_1 is already recorded');
    expect(() => j.insert({ ...command(9), request_id: 'req_1' })).toThrow('journal: request req_1 of dev is already open as cmd_1');
    await j.flushed();
    expect(onDisk(reader, 'req_1')).toBe('submitted');
    expect(onDisk(reader, 'req_other')).toBeUndefined();
    expect(j.get('cmd_9')).toBeUndefined();
  });

  it('a device write that fails inside a batch fails the whole batch: nothing of it is committed and its waiters are told', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    j.insert(command(1));
    const waiter = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => j.deviceEvent({ device_id: 'dev', boot_id: 'b', event_id: 'e1', at: 1, kind: 'max_on', ch: 1, msg: 'm', device_state: circular as never })).toThrow();
    expect(await waiter).toMatch(/^journal commit failed \(a write of the batch failed: /);
    expect(onDisk(reader, 'req_1')).toBeUndefined();
    // The next batch is clean.
    j.insert(command(2));
    await j.flushed();
    expect(onDisk(reader, 'req_2')).toBe('submitted');
  });

  it('a command id already committed and still open is refused at once too, and the next batch goes on', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    j.insert(command(1));
    await j.flushed();
    expect(() => j.insert({ ...command(1), request_id: 'req_other' })).toThrow('journal: command cmd_1 is already recorded');
    j.insert(command(2));
    await j.flushed();
    expect(onDisk(reader, 'req_2')).toBe('submitted');
    expect(onDisk(reader, 'req_other')).toBeUndefined();
  });

  it('within one batch a command submitted, acked and answered is one row write with its whole history; the next batch adds to that history', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    const c = command(1);
    j.insert(c);
    j.update({ ...c, state: 'accepted', accepted: true, updated_at: 2 }, true);
    expect(j.events('cmd_1').map((e) => e.state)).toEqual(['submitted', 'accepted']);
    await j.flushed();
    expect(reader.prepare('SELECT state, history FROM commands WHERE command_id = ?').get('cmd_1')).toEqual({ state: 'accepted', history: '[1,"submitted",null]\n[2,"accepted",null]\n' });
    j.update({ ...c, state: 'completed', accepted: true, terminal_at: 3, updated_at: 3 }, true, 'pin_readback');
    expect(j.get('cmd_1')?.state).toBe('completed');
    expect(j.byRequest('dev', 'req_1')?.state).toBe('completed');
    expect(j.events('cmd_1')).toEqual([
      { at: 1, state: 'submitted', note: null },
      { at: 2, state: 'accepted', note: null },
      { at: 3, state: 'completed', note: 'pin_readback' },
    ]);
    await j.flushed();
    expect(onDisk(reader, 'req_1')).toBe('completed');
    expect(reader.prepare('SELECT COUNT(*) AS n FROM command_events').get()).toEqual({ n: 0 });
    expect(j.events('cmd_1').map((e) => e.state)).toEqual(['submitted', 'accepted', 'completed']);
  });

  it('a command that ended in a batch that failed to commit reads as it is on disk, not as it ended', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    const c = command(1);
    j.insert(c);
    await j.flushed();
    j.failNext = true;
    j.update({ ...c, state: 'completed', accepted: true, executed: true, terminal_at: 3, updated_at: 3 }, true);
    // Refused at once (a host refusal is recorded terminal from the start): in the failed batch only.
    j.insert({ ...command(2), state: 'rejected', error_code: 'BUSY', terminal_at: 3, updated_at: 3 });
    await j.flushed().catch(() => {});
    expect(onDisk(reader, 'req_1')).toBe('submitted');
    expect(j.get('cmd_1')).toMatchObject({ state: 'submitted', terminal_at: null });
    expect(onDisk(reader, 'req_2')).toBeUndefined();
    expect(j.get('cmd_2')).toBeUndefined();
  });

  it('a command read right after it ended is a copy: changing it changes nothing the journal holds', async () => {
    j = new TestJournal(path, immediate);
    const c = command(1);
    j.insert({ ...c, state: 'completed', terminal_at: 2, updated_at: 2 });
    await j.flushed();
    const got = j.get('cmd_1')!;
    got.state = 'failed';
    got.detail = 'changed by a caller';
    expect(j.get('cmd_1')).toMatchObject({ state: 'completed', detail: null });
    j.close();
    j = new TestJournal(path, immediate);
    expect(j.get('cmd_1')).toMatchObject({ state: 'completed', detail: null });
  });

  it('a commit that fails with its transaction already gone (SQLite rolled it back itself) is handled the same; no onRollback is needed', async () => {
    j = new TestJournal(path, immediate);
    reader = new Database(path, { readonly: true });
    j.insert(command(1));
    await j.flushed();
    j.failRolledBackNext = true;
    j.insert(command(2));
    const waiter = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    expect(() => j.commitBatch()).not.toThrow();
    expect(await waiter).toBe('journal commit failed (database or disk is full (simulated)); nothing of it was sent or answered');
    expect(onDisk(reader, 'req_2')).toBeUndefined();
    expect(j.open().map((x) => x.command_id)).toEqual(['cmd_1']);
    // The journal goes on.
    j.insert(command(3));
    await j.flushed();
    expect(onDisk(reader, 'req_3')).toBe('submitted');
  });

  it('rewriting an unchanged record opens no batch (nothing to commit)', async () => {
    j = new TestJournal(path, immediate);
    const c = command(1);
    j.insert(c);
    await j.flushed();
    expect(j.uncommitted).toBe(false);
    j.update({ ...c }, false);
    expect(j.uncommitted).toBe(false);
    j.update({ ...c, progress: 1 }, false);
    expect(j.uncommitted).toBe(true);
  });

  it('a listener that throws after a commit does not keep the others from running', async () => {
    j = new TestJournal(path, immediate);
    const errors: unknown[] = [];
    j.onCallbackError = (e) => errors.push(e);
    const ran: number[] = [];
    j.insert(command(1));
    j.afterCommit(() => ran.push(1));
    j.afterCommit(() => {
      throw new Error('listener bug');
    });
    j.afterCommit(() => ran.push(3));
    await j.flushed();
    expect(ran).toEqual([1, 3]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['listener bug']);
  });

  it('with no one to tell of a listener that throws, the others still run', async () => {
    j = new TestJournal(path, immediate);
    const ran: number[] = [];
    j.insert(command(1));
    j.afterCommit(() => {
      throw new Error('listener bug');
    });
    j.afterCommit(() => ran.push(2));
    await j.flushed();
    expect(ran).toEqual([2]);
  });

  it('without a deferral (virtual clock), a listener that throws fails the write that committed, loudly', () => {
    j = new TestJournal(path);
    const errors: unknown[] = [];
    j.onCallbackError = (e) => errors.push(e);
    expect(() =>
      j.group(() => {
        j.insert(command(1));
        j.afterCommit(() => {
          throw new Error('listener bug');
        });
      }),
    ).toThrow('listener bug');
    expect(errors).toEqual([]);
  });
});

/** A journal whose WAL fsyncs are held until the test lets each one return (or fail), and logged with the commits. */
