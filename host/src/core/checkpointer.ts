// SQLite's WAL checkpoint, off the event loop. With the default wal_autocheckpoint the COMMIT that
// finds the WAL past 1,000 pages copies them into the database file and fsyncs it, on the thread that
// committed: on the bench's batches it made the tail of a COMMIT's latency ten times longer, and cost SQL
// time per command (docs/performance.md). Here the writer's own connection never checkpoints (wal_autocheckpoint = 0) and a
// worker thread with its own connection runs PASSIVE checkpoints, which never block the writer. What is
// durable and when does not change: the WAL holds every commit (fsynced by the journal) until a
// checkpoint has copied it and synced the database file, and SQLite resets the WAL only after that.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Ask for a checkpoint once this many commits, or this many row writes, went into the WAL since the last one. */
export const CHECKPOINT_COMMITS = 32;
export const CHECKPOINT_ROWS = 1000;
/** Reports of the last checkpoints kept (tests, the bench). */
const REPORTS_KEPT = 16;
/** How long close() waits for the worker to close its connection. */
const CLOSE_WAIT_MS = 2000;

// CommonJS, evaluated as the worker's whole program. flags[0]: 1 while a checkpoint runs; flags[1]: 1 once closed.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const flags = new Int32Array(workerData.flags);
let db;
parentPort.on('message', (m) => {
  if (m === 'close') {
    try { if (db) db.close(); } catch {}
    Atomics.store(flags, 1, 1);
    Atomics.notify(flags, 1);
    parentPort.close();
    return;
  }
  try {
    db ??= new Database(workerData.path, { fileMustExist: true });
    const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    parentPort.postMessage({ log: r.log, checkpointed: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ error: String(e && e.message || e) });
  }
  Atomics.store(flags, 0, 0);
});
`;

export interface CheckpointReport {
  log?: number;
  checkpointed?: number;
  error?: string;
}

/**
 * Background checkpoints of one database file. The owner turns its connection's autocheckpoint off and
 * calls committed() after every COMMIT; the worker starts at the first checkpoint it is asked for.
 * If the worker cannot run (it failed to start or died), `onFail` is told once: the owner then turns its
 * own autocheckpoint back on, so the WAL never grows without bound.
 */
export class Checkpointer {
  private worker: Worker | undefined;
  private readonly flags = new Int32Array(new SharedArrayBuffer(8));
  private commits = 0;
  private rows = 0;
  private failed = false;
  private closed = false;
  /** Checkpoints asked for and reports received (tests, the bench). */
  asked = 0;
  reports: CheckpointReport[] = [];

  constructor(
    private readonly path: string,
    private readonly onFail: (reason: string) => void,
  ) {}

  /** A COMMIT that wrote `rows` row writes to the WAL returned. */
  committed(rows: number): void {
    this.commits++;
    this.rows += rows;
    if (this.commits < CHECKPOINT_COMMITS && this.rows < CHECKPOINT_ROWS) return;
    // One at a time: a checkpoint still running copies what came since when it is asked again.
    if (Atomics.load(this.flags, 0) === 1) return;
    this.commits = 0;
    this.rows = 0;
    this.ask();
  }

  /** Run a checkpoint now (unless one is running); false when there is no worker to run it. */
  ask(): boolean {
    if (this.failed || this.closed) return false;
    let w = this.worker;
    if (!w) {
      // A throw here would otherwise fail the COMMIT whose committed() asked.
      try {
        w = this.worker = this.start();
      } catch (e) {
        this.fail(`checkpoint worker could not start: ${(e as Error).message}`);
        return false;
      }
    }
    Atomics.store(this.flags, 0, 1);
    this.asked++;
    w.postMessage('cp');
    return true;
  }

  /** Resolves once no checkpoint runs (polled: the flag is set by the worker's thread). */
  async idle(): Promise<void> {
    while (Atomics.load(this.flags, 0) === 1 && !this.failed && !this.closed) await new Promise((r) => setTimeout(r, 1));
  }

  /** The better-sqlite3 module the worker loads (a seam: tests give one that cannot load). */
  protected sqliteModule(): string {
    return createRequire(import.meta.url).resolve('better-sqlite3');
  }

  private start(): Worker {
    const w = new Worker(WORKER, { eval: true, workerData: { path: this.path, sqlite: this.sqliteModule(), flags: this.flags.buffer } });
    // A process ends when its work does, whatever this thread is doing.
    w.unref();
    w.on('message', (m: CheckpointReport) => {
      this.reports.push(m);
      if (this.reports.length > REPORTS_KEPT) this.reports.shift();
      if (m.error) this.fail(`checkpoint failed: ${m.error}`);
    });
    w.on('error', (e) => this.fail(`checkpoint worker failed: ${e.message}`));
    // After close() it exits as told; fail() then does nothing.
    w.on('exit', () => this.fail('checkpoint worker exited'));
    return w;
  }

  private fail(reason: string): void {
    if (this.failed || this.closed) return;
    this.failed = true;
    Atomics.store(this.flags, 0, 0);
    void this.worker?.terminate();
    this.worker = undefined;
    this.onFail(reason);
  }

  /**
   * Close the worker's connection (after a running checkpoint ends) and end its thread; no checkpoint
   * is asked after this. Waits (at most CLOSE_WAIT_MS) for the worker's connection to close first.
   */
  close(): void {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    if (!w) return;
    w.postMessage('close');
    Atomics.wait(this.flags, 1, 0, CLOSE_WAIT_MS);
    void w.terminate();
  }
}
