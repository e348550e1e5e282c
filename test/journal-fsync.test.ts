// Group commit, the fsync half: a commit counts as on disk only once the WAL is fsynced after it, and
// the fsync runs off the event loop (split from journal-group-commit.test.ts; shared setup as there).
import { afterEach, describe, expect, it } from 'vitest';
import { readlinkSync, realpathSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Journal } from '../host/src/core/journal/journal.js';
import { board, SECRET, immediate, newDb, onDisk, command } from './helpers/group-commit.js';

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

  it('a COMMIT made while an earlier fsync runs (commitBatch() called directly, as provision() and close() do) is told only after an fsync that began after it', async () => {
    j = new HeldSyncJournal(newDb(), immediate);
    const ran: string[] = [];
    j.insert(command(1));
    j.afterCommit(() => ran.push('1'));
    await new Promise((r) => setImmediate(r));
    expect(j.log).toEqual(['commit', 'fsync']);
    j.insert(command(2));
    j.commitBatch();
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
