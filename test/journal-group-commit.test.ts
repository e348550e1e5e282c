// Group commit: journal writes of one event-loop turn share one COMMIT, and nothing that tells anyone
// about a write (a frame to a device, an answer, a change event, an MCP message) leaves before that
// COMMIT returned. "On disk" is checked the only honest way: a second SQLite connection, which sees
// committed rows only. A batch that fails to commit sends nothing and tells every waiter.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { unseal, type BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { HostCore } from '../host/src/core/host.js';
import { Journal } from '../host/src/core/journal/journal.js';
import { blankCommand, type CommandRecord } from '../host/src/core/journal/records.js';
import type { Link } from '../host/src/core/link.js';
import { durable } from '../host/src/mcp/durable.js';
import { FakeDevice, flush, ridden } from './helpers/fake-device.js';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const SECRET = 'a'.repeat(64);
const immediate = (fn: () => void) => void setImmediate(fn);

/** A journal that counts its batch commits and can be told to fail the next one. */
class TestJournal extends Journal {
  commits = 0;
  failNext = false;
  /** Fail the next commit the way SQLite can on a full disk or an I/O error: the transaction already rolled back. */
  failRolledBackNext = false;
  protected override commit(): void {
    if (this.failRolledBackNext) {
      this.failRolledBackNext = false;
      (this as unknown as { db: Database.Database }).db.exec('ROLLBACK');
      throw new Error('database or disk is full (simulated)');
    }
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk I/O error (simulated)');
    }
    this.commits++;
    super.commit();
  }
}

const newDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-group-')), 'journal.db');

/** What a second connection (committed rows only) holds for a request id. */
function onDisk(db: Database.Database, rid: string): string | undefined {
  return (db.prepare('SELECT state FROM commands WHERE request_id = ?').get(rid) as { state: string } | undefined)?.state;
}

function command(i: number): CommandRecord {
  return { ...blankCommand(), command_id: `cmd_${i}`, device_id: 'dev', request_id: `req_${i}`, action: 'relay.set', args: { ch: 1, on: true }, submitted_at: i, updated_at: i };
}

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

  it('a flush that a read forces and that fails throws to that reader and poisons the batch: settle rolls all of it back', async () => {
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
    expect(() => j.settle()).not.toThrow();
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
class HeldSyncJournal extends Journal {
  log: string[] = [];
  held: ((err: Error | null) => void)[] = [];
  protected override commit(): void {
    this.log.push('commit');
    super.commit();
  }
  protected override syncAsync(fd: number, done: (err: Error | null) => void): void {
    this.log.push('fsync');
    this.held.push(done);
  }
  protected override syncWal(): void {
    // The constructor's own sync (of the schema) runs before this class's fields exist.
    this.log?.push('fsync (waited)');
    super.syncWal();
  }
  /** Let the oldest held fsync return, really syncing the file first. */
  release(err: Error | null = null): void {
    const done = this.held.shift()!;
    if (!err) super.syncWal();
    done(err);
  }
}

describe('a commit is on disk only once the WAL is fsynced after it, and the fsync runs off the event loop', () => {
  let j: HeldSyncJournal;
  afterEach(() => j?.close());

  it('SQLite itself does not fsync per commit (synchronous=NORMAL); the journal fsyncs the WAL after each COMMIT, which together is synchronous=FULL', () => {
    j = new HeldSyncJournal(newDb(), immediate);
    expect((j as unknown as { db: Database.Database }).db.pragma('synchronous', { simple: true })).toBe(1);
    expect((j as unknown as { db: Database.Database }).db.pragma('journal_mode', { simple: true })).toBe('wal');
  });

  it('nothing waiting for a batch runs between its COMMIT and the fsync that follows it', async () => {
    j = new HeldSyncJournal(newDb(), immediate);
    const ran: string[] = [];
    j.insert(command(1));
    j.afterCommit(() => ran.push('told 1'));
    const waiter = j.flushed().then(() => ran.push('flushed 1'));
    for (let k = 0; k < 3; k++) await new Promise((r) => setImmediate(r));
    expect(j.log).toEqual(['commit', 'fsync']);
    expect(ran).toEqual([]);
    expect(j.uncommitted).toBe(true);
    j.release();
    await waiter;
    expect(ran).toEqual(['told 1', 'flushed 1']);
    expect(j.uncommitted).toBe(false);
  });

  it('while an fsync runs the event loop goes on and the batch stays open and grows; it commits when the fsync returns, and one more fsync covers it', async () => {
    const path = newDb();
    j = new HeldSyncJournal(path, immediate);
    const ran: string[] = [];
    const reader = new Database(path, { readonly: true });
    const errors: unknown[] = [];
    j.onCallbackError = (e) => errors.push(e);
    j.insert(command(1));
    j.afterCommit(() => ran.push('1'));
    await new Promise((r) => setImmediate(r));
    // Two more turns write while the first fsync runs: they join one batch, not yet committed.
    j.insert(command(2));
    j.afterCommit(() => ran.push('2'));
    await new Promise((r) => setImmediate(r));
    j.insert(command(3));
    j.afterCommit(() => ran.push('3'));
    await new Promise((r) => setImmediate(r));
    expect(j.log).toEqual(['commit', 'fsync']);
    expect(onDisk(reader, 'req_2')).toBeUndefined();
    expect(j.get('cmd_3')?.state).toBe('submitted');
    j.release();
    expect(ran).toEqual(['1']);
    expect(j.log).toEqual(['commit', 'fsync', 'commit', 'fsync']);
    expect(onDisk(reader, 'req_3')).toBe('submitted');
    // Asked for after that COMMIT: it waits for the fsync now running.
    j.afterCommit(() => ran.push('after 3'));
    expect(ran).toEqual(['1']);
    j.release();
    expect(ran).toEqual(['1', '2', '3', 'after 3']);
    expect(j.held).toEqual([]);
    expect(j.uncommitted).toBe(false);
    expect(errors).toEqual([]);
    reader.close();
  });

  it('a failed fsync fails everything waiting, tells onBroken, and the journal refuses every later write with the reason', async () => {
    j = new HeldSyncJournal(newDb(), immediate);
    const broken: string[] = [];
    j.onBroken = (e) => broken.push(e.message);
    j.insert(command(1));
    const first = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    await new Promise((r) => setImmediate(r));
    j.insert(command(2));
    const second = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    await new Promise((r) => setImmediate(r));
    // A batch open when the fsync fails is rolled back: its waiter is told, its row never commits
    // (a read has put it into SQLite, inside the batch's transaction).
    j.insert(command(7));
    j.recent();
    const open = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    // A waiter with nothing to call on failure is passed over, not an error.
    const ran: string[] = [];
    j.afterCommit(() => ran.push('never'));
    const errors: unknown[] = [];
    j.onCallbackError = (e) => errors.push(e);
    const rolledBack: string[] = [];
    j.onRollback = (e) => rolledBack.push(e.message);
    j.release(new Error('EIO: i/o error, fsync'));
    const msg =
      'journal fsync failed (EIO: i/o error, fsync); what was committed since the last good sync may not be on disk; nothing of it was sent or answered, and the journal takes no more writes (restart the host)';
    expect(await first).toBe(msg);
    expect(await second).toBe(msg);
    expect(await open).toBe(msg);
    expect(j.get('cmd_7')).toBeUndefined();
    expect(broken).toEqual([msg]);
    expect(() => j.insert(command(3))).toThrow(msg);
    expect(() => j.seen('dev', 'b', 1)).toThrow(msg);
    expect(() => j.provision('dev2', SECRET, board)).toThrow(msg);
    expect(j.get('cmd_3')).toBeUndefined();
    expect(ran).toEqual([]);
    expect(errors).toEqual([]);
    // The open batch ended with the failure: its deferred commit finds nothing to commit (no rollback is reported).
    await new Promise((r) => setImmediate(r));
    expect(rolledBack).toEqual([]);
    // Nothing is left waiting: the journal holds no write that is not on disk, or failed.
    expect(j.uncommitted).toBe(false);
    await j.flushed();
  });

  it('with no onBroken set, a failed fsync still fails its waiters and refuses later writes', async () => {
    j = new HeldSyncJournal(newDb(), immediate);
    j.insert(command(1));
    const first = j.flushed().then(() => 'resolved', (e: Error) => e.message);
    await new Promise((r) => setImmediate(r));
    j.release(new Error('EIO'));
    expect(await first).toMatch(/^journal fsync failed \(EIO\)/);
    expect(() => j.insert(command(2))).toThrow(/journal fsync failed/);
  });

  it('a COMMIT made while an earlier fsync runs (settle() called directly, as provision() and close() do) is told only after an fsync that began after it', async () => {
    j = new HeldSyncJournal(newDb(), immediate);
    const ran: string[] = [];
    j.insert(command(1));
    j.afterCommit(() => ran.push('1'));
    await new Promise((r) => setImmediate(r));
    expect(j.log).toEqual(['commit', 'fsync']);
    j.insert(command(2));
    j.settle();
    expect(j.log).toEqual(['commit', 'fsync', 'commit']);
    j.afterCommit(() => ran.push('2'));
    const second = j.flushed().then(() => ran.push('flushed 2'));
    j.release();
    expect(ran).toEqual(['1']);
    expect(j.log).toEqual(['commit', 'fsync', 'commit', 'fsync']);
    j.release();
    await second;
    expect(ran).toEqual(['1', '2', 'flushed 2']);
  });

  it('each fsync after a COMMIT is of the WAL file itself', async () => {
    const path = newDb();
    const files: string[] = [];
    class WhichFile extends HeldSyncJournal {
      protected override syncAsync(fd: number, done: (err: Error | null) => void): void {
        files.push(readlinkSync(`/proc/self/fd/${fd}`));
        super.syncAsync(fd, done);
      }
    }
    j = new WhichFile(path, immediate);
    j.insert(command(1));
    await new Promise((r) => setImmediate(r));
    j.release();
    expect(files).toEqual([realpathSync(path) + '-wal']);
  });

  it('a new journal fsyncs its schema before the constructor returns', () => {
    let syncs = 0;
    class Counting extends Journal {
      protected override syncWal(): void {
        syncs++;
        super.syncWal();
      }
    }
    const c = new Counting(newDb(), immediate);
    expect(syncs).toBe(1);
    c.close();
  });

  it('on a virtual clock a failed fsync fails what waited for the step, tells onBroken, and refuses every later write', () => {
    class FailingSync extends Journal {
      failing = false;
      protected override syncWal(): void {
        if (this.failing) throw new Error('EIO');
        super.syncWal();
      }
    }
    const v = new FailingSync(newDb());
    const broken: string[] = [];
    v.onBroken = (e) => broken.push(e.message);
    v.failing = true;
    const told: string[] = [];
    v.group(() => {
      v.insert(command(1));
      v.afterCommit(() => told.push('ok'), (e) => told.push(e.message));
    });
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/^journal fsync failed \(EIO\)/);
    expect(broken).toEqual(told);
    expect(() => v.insert(command(2))).toThrow(/journal fsync failed/);
    v.failing = false;
    v.close();
  });

  it('close() whose own fsync fails tells the waiters it failed, and onBroken', async () => {
    class FailAtClose extends HeldSyncJournal {
      failAtClose = false;
      protected override syncWal(): void {
        if (this.failAtClose) throw new Error('EIO at close');
        super.syncWal();
      }
    }
    const f = new FailAtClose(newDb(), immediate);
    const broken: string[] = [];
    f.onBroken = (e) => broken.push(e.message);
    f.insert(command(1));
    const first = f.flushed().then(() => 'resolved', (e: Error) => e.message);
    await new Promise((r) => setImmediate(r));
    f.failAtClose = true;
    f.close();
    expect(await first).toMatch(/^journal fsync failed \(EIO at close\)/);
    expect(broken).toHaveLength(1);
  });

  it('close() syncs what still waits for an fsync and runs its waiters before the file is closed', async () => {
    const path = newDb();
    j = new HeldSyncJournal(path, immediate);
    const ran: string[] = [];
    j.insert(command(1));
    j.afterCommit(() => ran.push('told'));
    await new Promise((r) => setImmediate(r));
    expect(ran).toEqual([]);
    j.close();
    expect(ran).toEqual(['told']);
    expect(j.log).toEqual(['commit', 'fsync', 'fsync (waited)']);
    const reader = new Database(path, { readonly: true });
    expect(onDisk(reader, 'req_1')).toBe('submitted');
    reader.close();
    // The held fsync returning late changes nothing.
    j.held.shift()!(null);
    expect(ran).toEqual(['told']);
    j = undefined as unknown as HeldSyncJournal;
  });

  it('on a virtual clock (no deferral) a step waits for its fsync before it returns', () => {
    j = new HeldSyncJournal(newDb());
    j.insert(command(1));
    expect(j.log).toEqual(['fsync (waited)']);
    j.group(() => j.insert(command(2)));
    expect(j.log).toEqual(['fsync (waited)', 'commit', 'fsync (waited)']);
    expect(j.uncommitted).toBe(false);
  });
});

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
