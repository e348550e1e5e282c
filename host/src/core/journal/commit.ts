// Group commit and durability: the journal's connection, its batches and the fsync of the WAL.
// The rule this file keeps: nobody (device frames, MCP answers, events) hears of a write before the
// batch holding it is committed and the WAL fsynced after that COMMIT. Writes join one open
// transaction (the batch); reads go through the same connection, so the host's own logic sees its
// batch; whatever tells anyone outside about a write waits for afterCommit() or flushed(), which run
// (or resolve) only once the COMMIT returned and an fsync begun after it returned, and fail if either
// did not. After a failed fsync the journal takes no more writes. A journal whose files become
// unwritable (immutable, a read-only file system) is lost: it is noticed before SQLite touches them
// (see guard) and the journal touches SQLite no more, since a write to the -shm mapping SQLite holds
// would end the process with SIGBUS, a signal nothing can catch or log.
// A journal in PostgreSQL (postgres.ts) keeps the same rule with PostgreSQL as the durability point:
// SQLite is its working copy, and in place of the fsync of the WAL the rows a COMMIT changed are
// committed to PostgreSQL in one transaction; waiters run once that COMMIT returned, and a failed one
// is a failed fsync (nothing waiting is told, and the journal takes no more writes).
import { accessSync, chmodSync, closeSync, constants, existsSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Checkpointer } from '../checkpointer.js';
import { prepareStateDir, privateFile, stateDir } from '../../state-dir.js';
import { openSchema } from './schema.js';
import { checkPostgresUrl, isPostgresUrl } from './db-url.js';
import { PgMirror } from './postgres.js';

type Waiter = { ok: () => void; fail?: (e: Error) => void };

export interface JournalOptions {
  checkpoint?: 'inline' | 'background';
  /** A PostgreSQL journal: how long a request the host waits for on its thread (start, a durable write, close) may take. */
  pgWaitMs?: number;
}

const DONE = Promise.resolve();
/** How often an idle journal on the real clock checks that its files can still be written. */
export const GUARD_MS = 1000;

/** Journals of this process with writes not on disk yet (a batch open, or an fsync to come or running). */
const busy = new Set<GroupCommit>();

/** Resolves once no journal of this process holds a write that is not on disk (tests, a graceful stop). */
export async function allDurable(): Promise<void> {
  for (;;) {
    for (const j of busy) if (!j.uncommitted) busy.delete(j);
    if (busy.size === 0) return;
    await Promise.allSettled([...busy].map((j) => j.flushed()));
  }
}

/**
 * The connection and its group commit. What a batch writes is staged by the subclass (staging.ts),
 * which flushStaged() writes to SQLite inside the batch's transaction and reload() forgets after a
 * rollback.
 */
export abstract class GroupCommit {
  protected db: Database.Database;
  /** One transaction wrapper, made once (better-sqlite3 builds a new one per db.transaction() call). */
  protected readonly tx: (f: () => void) => void;
  // Group commit. With `defer` (the real clock) every write joins one open transaction (the batch)
  // that commits once, when the deferred callback runs at the end of the event-loop turn; without
  // it (a virtual clock) writes inside group() commit when the outermost group ends and any other
  // write commits at once. Reads go through the same connection, so the host's own logic sees its
  // batch; whoever outside must not hear of a write before it is on disk waits for afterCommit()
  // or flushed(), which run (or resolve) only after the COMMIT returned, and fail if it did not.
  protected grouping = 0;
  /** A batch transaction is open (BEGIN issued, COMMIT not yet). */
  private pending = false;
  /** A write of the open batch failed: the batch is rolled back, never committed. */
  protected poisoned: Error | undefined;
  private scheduled = false;
  private after: Waiter[] = [];
  // Durability. SQLite runs with synchronous=NORMAL (a COMMIT appends to the WAL without fsync) and the
  // journal fsyncs the WAL itself after each COMMIT, which is what synchronous=FULL adds in WAL mode. With
  // `defer` the fsync runs on libuv's thread pool, so the event loop goes on with the next batch meanwhile;
  // what waits for a batch runs once an fsync that began after its COMMIT has returned.
  private walFd: number | undefined;
  protected walPath: string | undefined;
  /** A COMMIT returned since the running fsync began (or with none running): the next fsync must cover it. */
  private unsynced = false;
  private syncing = false;
  /** The end of the event-loop turn came while an fsync ran: the open batch commits when it returns. */
  private commitAfterSync = false;
  /** Waiters of what the running fsync covers, and of what committed after it began. */
  private covered: Waiter[] = [];
  private next: Waiter[] = [];
  /** An fsync failed: what the WAL holds since the last good one may not be on disk; the journal writes no more. */
  protected broken: Error | undefined;
  private closed = false;
  /** The database, -wal and -shm files (on disk), checked once a second (see guard). */
  private files: string[] = [];
  /** The -shm file, which SQLite maps into memory: checked before each batch and each write of its own. */
  private mapped: string[] = [];
  private guardTimer: ReturnType<typeof setInterval> | undefined;
  /** A file of the journal became unwritable: the journal touches SQLite no more (not even to close it). */
  private lost: Error | undefined;
  /** The journal's files became unwritable: it takes no more writes, and the process should end (see guard). */
  onUnwritable: ((e: Error) => void) | undefined;
  /** Called after a batch failed to commit and was rolled back (the host re-arms what it lost). */
  onRollback: ((e: Error) => void) | undefined;
  /** An afterCommit callback threw while the deferred commit ran it (the others still run). */
  onCallbackError: ((e: unknown) => void) | undefined;
  /** An fsync of the WAL failed: the journal takes no more writes. */
  onBroken: ((e: Error) => void) | undefined;
  /** The background checkpointer failed; checkpoints run inside COMMITs again (SQLite's autocheckpoint). */
  onCheckpointFail: ((reason: string) => void) | undefined;
  /** Checkpoints the WAL off this thread (on-disk journals with `checkpoint: 'background'`). */
  readonly checkpointer: Checkpointer | undefined;
  /** Row writes that reached SQLite since the last COMMIT (the checkpointer's measure of WAL growth). */
  protected rowWrites = 0;
  /**
   * A journal in PostgreSQL (a postgres:// path): SQLite is its working copy, and what a COMMIT wrote is
   * durable once PostgreSQL committed it, which here takes the place of the fsync of the WAL (postgres.ts).
   */
  protected readonly mirror: PgMirror | undefined;

  /**
   * `path` is a file, or ':memory:' for tests that do not restart. `defer` schedules the batch commit
   * (the host passes setImmediate on the real clock); without it a group commits when it ends.
   * `checkpoint`: where WAL checkpoints run, 'background' (a worker thread, see checkpointer.ts; the
   * default for an on-disk journal with `defer`) or 'inline' (inside a COMMIT, SQLite's default).
   * A postgres://USER:PASS@HOST:PORT/DB path keeps the journal in PostgreSQL (`pgWaitMs`: how long a
   * request waited for on this thread may take).
   */
  constructor(path: string, protected readonly defer?: (fn: () => void) => void, opts: JournalOptions = {}) {
    const pg = isPostgresUrl(path);
    if (pg) checkPostgresUrl(path);
    const onDisk = !pg && path !== ':memory:' && path !== '';
    if (onDisk) {
      // Device secrets live here: the folder is 0700 and the files 0600 before anything is written.
      prepareStateDir(stateDir(path));
      privateFile(path);
    }
    // A PostgreSQL journal's working copy is a private temporary database (in memory until it outgrows SQLite's cache).
    this.db = new Database(pg ? '' : path);
    this.db.pragma('journal_mode = WAL');
    // SQLite gives -wal/-shm the mode of the database file; make sure of it for files from before.
    if (onDisk) for (const f of [path + '-wal', path + '-shm']) if (existsSync(f)) chmodSync(f, 0o600);
    // Every commit is fsynced before the host acts on it, so a power loss or OS crash cannot roll back a
    // command the host already sent. NORMAL here, because the journal fsyncs the WAL after each COMMIT
    // itself (see syncWal): together that is synchronous=FULL, with the wait off the event loop.
    this.db.pragma('synchronous = NORMAL');
    if (onDisk) this.walPath = path + '-wal';
    const background = opts.checkpoint ? opts.checkpoint === 'background' : defer !== undefined;
    if (onDisk && background) {
      this.db.pragma('wal_autocheckpoint = 0');
      // close() closes the checkpointer before this connection, and a closed one reports nothing.
      this.checkpointer = new Checkpointer(path, (reason) => {
        this.db.pragma('wal_autocheckpoint = 1000');
        this.onCheckpointFail?.(reason);
      });
    }
    if (onDisk) {
      this.files = [path, path + '-wal', path + '-shm'];
      this.mapped = [path + '-shm'];
    }
    openSchema(this.db);
    if (pg) {
      this.mirror = new PgMirror(path, opts.pgWaitMs);
      try {
        this.mirror.open(this.db);
      } catch (e) {
        this.db.close();
        throw e;
      }
    }
    this.tx = this.db.transaction((f: () => void) => f());
    // The schema and any migration above are on disk before the host relies on them.
    if (this.walPath !== undefined) this.syncWal();
    // An idle host has no batch to check before: a timer does (unref'd: it keeps no process alive).
    if (onDisk && defer) this.guardTimer = setInterval(() => this.guarded(), GUARD_MS).unref();
  }

  /**
   * Before SQLite writes (a batch begins or commits, a write of its own): the -shm file can still be
   * written, else the journal is lost (throws). SQLite maps it into memory; once the file is immutable or
   * its file system read-only, the kernel answers a write to a page of that mapping with SIGBUS, which ends
   * the process without a word. access(2) sees both (EPERM, EROFS) first: one system call at the
   * BEGIN and one at the COMMIT of a batch. The database and -wal files are written with pwrite(2), which
   * fails with an error instead (a failed commit, rolled back); the timer checks all three once a second.
   */
  protected guard(files = this.mapped): void {
    if (this.lost) this.refuse();
    for (const f of files)
      try {
        accessSync(f, constants.W_OK);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        // Not there (yet): SQLite creates -wal/-shm when it needs them, and cannot map what is not there.
        if (code === 'ENOENT') continue;
        this.lose(f, e as NodeJS.ErrnoException);
      }
  }

  /** The timer's check: a lost journal was told through onUnwritable already. */
  private guarded(): void {
    try {
      this.guard(this.files);
    } catch {
      // told through onUnwritable
    }
  }

  /** A file became unwritable: refuse every write from now on, tell every waiter, and touch SQLite no more. */
  private lose(file: string, err: NodeJS.ErrnoException): never {
    const e = new Error(
      `journal file ${file} can no longer be written (${err.code}: ${err.message}); the journal takes no more writes and nothing waiting for it was sent or answered; stop the host, make the file writable again (chattr -i, a read-write mount) and restart it`,
    );
    this.lost = e;
    this.broken ??= e;
    clearInterval(this.guardTimer);
    const all = [...this.covered.splice(0), ...this.next.splice(0), ...this.after.splice(0)];
    // The open batch is abandoned as it is: even its ROLLBACK would touch the -shm mapping.
    this.pending = false;
    this.unsynced = false;
    this.commitAfterSync = false;
    busy.delete(this);
    for (const a of all) a.fail?.(e);
    this.onUnwritable?.(e);
    throw new Error(e.message);
  }

  /** Write what the open batch staged to SQLite, inside its transaction (before its COMMIT). */
  protected abstract flushStaged(): void;
  /** After a rollback: forget what the batch staged; what is in memory is what is on disk again. */
  protected abstract reload(): void;

  /**
   * Run fn as one step whose writes commit together: on the real clock with the rest of this turn's
   * batch, without `defer` when the outermost group ends. Whoever must not hear of the writes before
   * they are on disk is told through afterCommit.
   */
  group<T>(fn: () => T): T {
    this.grouping++;
    try {
      return fn();
    } finally {
      this.grouping--;
      // commitBatch() itself waits for the outermost group to end.
      if (!this.defer && this.db.open) this.commitBatch();
    }
  }

  /** fn runs once everything written so far is on disk: now, or once the batch committed and its fsync returned (never if either fails: then `fail`). */
  afterCommit(fn: () => void, fail?: (e: Error) => void): void {
    const w = this.waitingFor();
    if (w) w.push({ ok: fn, fail });
    else fn();
  }

  /** Resolves once everything written so far is on disk; rejects if the batch holding it failed to commit or to sync. */
  flushed(): Promise<void> {
    const w = this.waitingFor();
    if (!w) return DONE;
    return new Promise((resolve, reject) => w.push({ ok: resolve, fail: reject }));
  }

  /** The list a waiter for everything written so far joins; undefined when all of it is on disk. */
  private waitingFor(): Waiter[] | undefined {
    if (this.pending) return this.after;
    if (this.unsynced) return this.next;
    if (this.syncing) return this.covered;
    return undefined;
  }

  /** Writes not on disk yet: in the open batch, or committed and waiting for their fsync. */
  get uncommitted(): boolean {
    return this.pending || this.unsynced || this.syncing;
  }

  /** Commit the open batch (if any), then run what waited for it; on failure roll back and tell every waiter. */
  commitBatch(): void {
    if (!this.pending || this.grouping) return;
    try {
      this.guard();
    } catch {
      // lost: its waiters were told, and onUnwritable
      return;
    }
    const after = this.after;
    this.after = [];
    this.pending = false;
    const poisoned = this.poisoned;
    this.poisoned = undefined;
    try {
      if (poisoned) throw new Error('a write of the batch failed: ' + poisoned.message);
      this.flushStaged();
      // What the batch changed, read in its transaction; PostgreSQL gets it once the COMMIT returned.
      const changes = this.mirror?.collect();
      this.commit();
      this.mirror?.queue(changes);
      this.checkpointed();
    } catch (err) {
      const e = new Error(`journal commit failed (${(err as Error)?.message ?? String(err)}); nothing of it was sent or answered`);
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      // A flush that failed just now marked the batch; the next one starts clean.
      this.poisoned = undefined;
      this.reload();
      for (const a of after) a.fail?.(e);
      this.onRollback?.(e);
      return;
    }
    this.synced(after);
  }

  /** The batch holding `after` committed: run them once the WAL is fsynced after that COMMIT. */
  private synced(after: Waiter[]): void {
    if (this.walPath === undefined && !this.mirror) return this.run(after);
    if (!this.defer) {
      // On a virtual clock each step is on disk when it returns.
      try {
        this.syncWal();
      } catch (e) {
        return this.syncFailed(e as Error, after);
      }
      return this.run(after);
    }
    this.unsynced = true;
    for (const a of after) this.next.push(a);
    this.startSync();
  }

  /** Begin an fsync of the WAL covering every COMMIT so far, unless one is running (its end starts the next). */
  private startSync(): void {
    if (this.syncing || !this.unsynced) return;
    this.syncing = true;
    this.unsynced = false;
    this.covered = this.next;
    this.next = [];
    let fd: number | undefined;
    if (!this.mirror)
      try {
        fd = this.wal();
      } catch (e) {
        this.syncing = false;
        return this.syncFailed(e as Error, this.covered.splice(0));
      }
    this.durableAsync(fd, (err) => {
      this.syncing = false;
      const done = this.covered;
      this.covered = [];
      if (this.broken || this.closed) return;
      if (err) return this.syncFailed(err, done);
      this.run(done);
      if (this.commitAfterSync) {
        this.commitAfterSync = false;
        this.commitBatch();
      }
      this.startSync();
    });
  }

  /** What makes the COMMITs so far durable: the WAL's fsync (`fd`), or for a journal in PostgreSQL its transaction there. */
  private durableAsync(fd: number | undefined, done: (err: Error | null) => void): void {
    if (this.mirror) this.mirror.ship(done);
    else this.syncAsync(fd!, done);
  }

  /** The fsync of the WAL on libuv's thread pool (a seam: tests delay or fail it). */
  protected syncAsync(fd: number, done: (err: Error | null) => void): void {
    fdatasync(fd, done);
  }

  /** The same fsync, waited for on this thread (a seam too). */
  protected syncWal(): void {
    if (this.mirror) return this.mirror.shipSync();
    fdatasyncSync(this.wal());
  }

  /** A write after a failed fsync or after close(): refused with the reason (a new error, thrown where the write was tried). */
  protected refuse(): never {
    throw new Error(this.broken!.message);
  }

  /** A write outside any batch (its own transaction) is on disk when this returns. */
  protected durably<T>(f: () => T): T {
    if (this.broken) this.refuse();
    this.guard();
    const v = f();
    // A write inside an open batch (a group) is collected with the batch, at its COMMIT.
    if (this.mirror && !this.db.inTransaction) this.mirror.queue(this.mirror.collect());
    this.checkpointed();
    if (this.walPath !== undefined || this.mirror) this.syncWal();
    return v;
  }

  private wal(): number {
    // Opened once the first COMMIT created the file; fsync through any descriptor syncs the file.
    return (this.walFd ??= openSync(this.walPath!, 'r'));
  }

  /**
   * An fsync failed. Linux may have dropped the dirty pages it could not write (a retry would then
   * "succeed"), so what was committed since the last good fsync may not be on disk: nothing waiting
   * for it is sent or answered, and the journal refuses every write after it; restart the host.
   */
  private syncFailed(err: Error, waiting: Waiter[]): void {
    const e = new Error(
      this.mirror
        ? `journal commit to PostgreSQL (${this.mirror.shown}) failed (${err.message}); what the host committed since the last good one may not be in PostgreSQL; nothing of it was sent or answered, and the journal takes no more writes (restart the host)`
        : `journal fsync failed (${err.message}); what was committed since the last good sync may not be on disk; nothing of it was sent or answered, and the journal takes no more writes (restart the host)`,
    );
    this.broken ??= e;
    const all = [...waiting, ...this.covered.splice(0), ...this.next.splice(0), ...this.after.splice(0)];
    this.unsynced = false;
    this.commitAfterSync = false;
    // The open batch, whose waiters are told it failed, is never committed.
    if (this.pending) {
      this.pending = false;
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.reload();
    }
    for (const a of all) a.fail?.(e);
    this.onBroken?.(e);
  }

  /** Run what waited for a commit; on the real clock one failing listener must not keep the others' frames and answers back. */
  private run(after: Waiter[]): void {
    for (const a of after) {
      if (!this.defer) a.ok();
      else
        try {
          a.ok();
        } catch (e) {
          this.onCallbackError?.(e);
        }
    }
  }

  /** A COMMIT returned: the row writes it carried count towards the next background checkpoint. */
  private checkpointed(): void {
    const n = this.rowWrites;
    this.rowWrites = 0;
    this.checkpointer?.committed(Math.max(1, n));
  }

  /** The COMMIT of a batch (a seam: tests make it fail). */
  protected commit(): void {
    this.db.exec('COMMIT');
  }

  /** Open the batch transaction if none is open; on the real clock schedule its commit. */
  protected begin(): void {
    if (this.broken) this.refuse();
    if (this.pending) return;
    this.guard();
    this.db.exec('BEGIN');
    this.pending = true;
    busy.add(this);
    if (this.defer && !this.scheduled) {
      this.scheduled = true;
      this.defer(() => {
        this.scheduled = false;
        if (!this.db.open) return;
        // Group commit: while an fsync runs, the batch stays open and grows; it commits when the fsync returns.
        if (this.syncing) this.commitAfterSync = true;
        else this.commitBatch();
      });
    }
  }

  /** One write, atomic on its own: it joins the batch on the real clock or inside a group, else it commits now. */
  protected write(f: () => void): void {
    // After a failed fsync both paths refuse: durably() and begin().
    if (!this.defer && !this.grouping) return this.durably(() => this.tx(f));
    this.begin();
    this.rowWrites++;
    // Inside the open batch a write gets no savepoint of its own (they were a large share of the
    // journal's time per command): a write that fails poisons the batch instead, and commitBatch() rolls
    // the whole batch back as it does a failed COMMIT, so nothing partial is ever committed.
    try {
      f();
    } catch (e) {
      this.poisoned ??= e as Error;
      throw e;
    }
  }

  close(): void {
    clearInterval(this.guardTimer);
    if (this.lost) {
      // Closing would checkpoint and write the -shm mapping: the process ends with the connection open
      // (SQLite recovers the WAL at the next start, as after a crash).
      this.closed = true;
      busy.delete(this);
      return;
    }
    this.commitBatch();
    // What still waits for an fsync is synced here, before the process may exit.
    if (!this.broken && (this.syncing || this.unsynced)) {
      const waiting = [...this.covered.splice(0), ...this.next.splice(0)];
      this.unsynced = false;
      try {
        this.syncWal();
        this.run(waiting);
      } catch (e) {
        this.syncFailed(e as Error, waiting);
      }
    }
    // A write after this fails on the closed database ("The database connection is not open").
    this.closed = true;
    busy.delete(this);
    // The worker's connection closes first, so this one is the last: it checkpoints the WAL and removes it.
    this.checkpointer?.close();
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = undefined;
    this.db.close();
    // Its connection ends, releasing the database for another host.
    this.mirror?.close();
  }
}
