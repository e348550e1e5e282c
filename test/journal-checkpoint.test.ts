// WAL checkpoints off the event loop: on the real clock the journal's own connection never checkpoints
// (a checkpoint inside a COMMIT copied ~1,000 pages and fsynced the database file there: COMMIT p99
// ~13 ms against ~1.2 ms without, measured on the bench's batches); a worker thread with its own
// connection does, and the WAL still stays bounded. Durability is checked as everywhere else: by what a
// second connection, or the file after close, holds.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Journal } from '../host/src/core/journal/journal.js';
import { blankCommand, type CommandRecord } from '../host/src/core/journal/records.js';
import { CHECKPOINT_COMMITS, CHECKPOINT_ROWS, Checkpointer } from '../host/src/core/checkpointer.js';

const immediate = (fn: () => void) => void setImmediate(fn);
const newDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-ckpt-')), 'journal.db');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const command = (i: number): CommandRecord => ({
  ...blankCommand(), command_id: `cmd_${i}`, device_id: 'dev', request_id: `req_${i}`, action: 'relay.set',
  args: { ch: 1, on: true, pad: 'x'.repeat(400) }, submitted_at: i, updated_at: i,
});
const conn = (j: Journal) => (j as unknown as { db: Database.Database }).db;
async function until(f: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
}
/** `batches` turns of the real clock, each committing `rows` new commands. */
async function writeBatches(j: Journal, batches: number, rows: number, from = 0): Promise<number> {
  let i = from;
  for (let b = 0; b < batches; b++) {
    for (let r = 0; r < rows; r++) j.insert(command(i++));
    await j.flushed();
  }
  return i;
}

describe('WAL checkpoints run off the event loop', () => {
  let j: Journal | undefined;
  afterEach(() => {
    j?.close();
    j = undefined;
  });

  it('an on-disk journal on the real clock never checkpoints in its own connection; its worker copies the WAL into the database file', async () => {
    const path = newDb();
    j = new Journal(path, immediate);
    expect(Number(conn(j).pragma('wal_autocheckpoint', { simple: true }))).toBe(0);
    const before = statSync(path).size;
    await writeBatches(j, CHECKPOINT_COMMITS, 5);
    await until(() => j!.checkpointer!.reports.length > 0);
    expect(j.checkpointer!.asked).toBeGreaterThanOrEqual(1);
    expect(j.checkpointer!.reports[0]).toMatchObject({ checkpointed: expect.any(Number) });
    expect(j.checkpointer!.reports[0].checkpointed).toBeGreaterThan(0);
    // The pages reached the database file itself (not only the WAL).
    expect(statSync(path).size).toBeGreaterThan(before);
  });

  it('many rows ask for a checkpoint before 32 commits do: 1,000 row writes are enough', async () => {
    j = new Journal(newDb(), immediate);
    await writeBatches(j, 2, CHECKPOINT_ROWS / 2 - 1);
    expect(j.checkpointer!.asked).toBe(0);
    await writeBatches(j, 1, 2, 5000);
    expect(j.checkpointer!.asked).toBe(1);
  });

  it('device writes (seen, events) count as row writes too', async () => {
    j = new Journal(newDb(), immediate);
    for (let b = 0; b < 2; b++) {
      for (let k = 0; k < CHECKPOINT_ROWS / 2; k++) j.seen('dev', 'boot', k);
      await j.flushed();
    }
    expect(j.checkpointer!.asked).toBe(1);
  });

  it('one checkpoint per 32 commits, not one per commit once the first was due', async () => {
    j = new Journal(newDb(), immediate);
    let i = 0;
    for (let round = 0; round < 3; round++) {
      for (let c = 0; c < CHECKPOINT_COMMITS; c++) {
        // The worker idle at every commit: a commit that finds a checkpoint running asks none.
        await j.checkpointer!.idle();
        i = await writeBatches(j, 1, 1, i);
      }
      expect(j.checkpointer!.asked).toBe(round + 1);
    }
  });

  it('the WAL stays bounded however long the host writes (it is reset after each background checkpoint)', async () => {
    const path = newDb();
    j = new Journal(path, immediate);
    let i = 0;
    const sizes: number[] = [];
    for (let round = 0; round < 8; round++) {
      i = await writeBatches(j, CHECKPOINT_COMMITS, 10, i);
      await j.checkpointer!.idle();
      sizes.push(statSync(path + '-wal').size);
    }
    // Without checkpoints the WAL would hold every page of all 8 rounds (about 8× what the first round left);
    // with them it is reused from its start once a checkpoint has copied it, so it stops growing.
    expect(Math.max(...sizes)).toBeLessThan(3 * sizes[0]);
  });

  it('on close every command is in the database file and no WAL is left behind', async () => {
    const path = newDb();
    j = new Journal(path, immediate);
    await writeBatches(j, CHECKPOINT_COMMITS * 2, 3);
    j.close();
    j = undefined;
    expect(existsSync(path + '-wal')).toBe(false);
    const r = new Database(path, { readonly: true });
    expect((r.prepare('SELECT COUNT(*) AS n FROM commands').get() as { n: number }).n).toBe(CHECKPOINT_COMMITS * 6);
    r.close();
  });

  it('a checkpointer that dies puts checkpoints back inside commits, says why, and loses nothing', async () => {
    const path = newDb();
    j = new Journal(path, immediate);
    const told: string[] = [];
    j.onCheckpointFail = (reason) => told.push(reason);
    await writeBatches(j, CHECKPOINT_COMMITS, 2);
    await until(() => j!.checkpointer!.reports.length > 0);
    await (j.checkpointer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await until(() => told.length > 0);
    expect(told[0]).toMatch(/checkpoint worker exited/);
    await sleep(50);
    expect(told).toHaveLength(1);
    expect(Number(conn(j).pragma('wal_autocheckpoint', { simple: true }))).toBe(1000);
    // Writes go on as before, and are all there.
    await writeBatches(j, 3, 2, 1000);
    const r = new Database(path, { readonly: true });
    expect((r.prepare('SELECT COUNT(*) AS n FROM commands').get() as { n: number }).n).toBe(CHECKPOINT_COMMITS * 2 + 6);
    r.close();
  });

  it('a worker that cannot open the database fails at its first checkpoint and tells its owner', async () => {
    const reasons: string[] = [];
    const cp = new Checkpointer(join(mkdtempSync(join(tmpdir(), 'proofrig-ckpt-')), 'missing.db'), (r) => reasons.push(r));
    expect(cp.ask()).toBe(true);
    await until(() => reasons.length > 0);
    expect(reasons[0]).toMatch(/checkpoint failed: .*(unable to open|does not exist|no such file)/i);
    expect(cp.ask()).toBe(false);
    cp.close();
  });

  it('a commit that finds a checkpoint still running asks for none; the first one after it ends does', async () => {
    j = new Journal(newDb(), immediate);
    const flags = (j.checkpointer as unknown as { flags: Int32Array }).flags;
    Atomics.store(flags, 0, 1); // as the worker holds it while it checkpoints
    await writeBatches(j, CHECKPOINT_COMMITS + 5, 1);
    expect(j.checkpointer!.asked).toBe(0);
    Atomics.store(flags, 0, 0);
    await writeBatches(j, 1, 1, 100);
    expect(j.checkpointer!.asked).toBe(1);
  });

  it('one worker runs every checkpoint, and the reports of the last 16 are kept', async () => {
    const path = newDb();
    new Journal(path).close();
    const cp = new Checkpointer(path, () => {});
    const workerOf = () => (cp as unknown as { worker: object }).worker;
    let first: object | undefined;
    for (let k = 0; k < 20; k++) {
      expect(cp.ask()).toBe(true);
      first ??= workerOf();
      await cp.idle();
    }
    // One worker thread serves them all.
    expect(workerOf()).toBe(first);
    await until(() => cp.asked === 20 && cp.reports.length === 16);
    await sleep(20);
    expect(cp.reports).toHaveLength(16);
    cp.close();
  });

  it('close() ends the worker thread, and no checkpoint is asked after it', async () => {
    const path = newDb();
    new Journal(path).close();
    const cp = new Checkpointer(path, () => {});
    cp.ask();
    await cp.idle();
    const worker = (cp as unknown as { worker: { once(e: string, f: () => void): void } }).worker;
    const exited = new Promise<void>((r) => worker.once('exit', () => r()));
    cp.close();
    await exited;
    expect(cp.ask()).toBe(false);
  });

  it('closing the journal is not reported as a checkpointer failure', async () => {
    j = new Journal(newDb(), immediate);
    const told: string[] = [];
    j.onCheckpointFail = (reason) => told.push(reason);
    await writeBatches(j, CHECKPOINT_COMMITS, 1);
    await until(() => j!.checkpointer!.reports.length > 0);
    j.close();
    j = undefined;
    await sleep(100);
    expect(told).toEqual([]);
  });

  it('a worker that cannot load SQLite fails once, saying so; with no one listening the journal goes on with inline checkpoints', async () => {
    class Broken extends Checkpointer {
      protected override sqliteModule(): string {
        return '/nonexistent/better-sqlite3.node';
      }
    }
    const reasons: string[] = [];
    const path = newDb();
    new Journal(path).close();
    const cp = new Broken(path, (r) => reasons.push(r));
    cp.ask();
    await until(() => reasons.length > 0);
    await sleep(50);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/checkpoint worker failed: .*Cannot find module/);
    // The journal's own handler, with nobody set to hear it.
    j = new Journal(newDb(), immediate);
    await writeBatches(j, CHECKPOINT_COMMITS, 1);
    await until(() => j!.checkpointer!.reports.length > 0);
    await (j.checkpointer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await until(() => Number(conn(j!).pragma('wal_autocheckpoint', { simple: true })) === 1000);
    await writeBatches(j, 2, 1, 500);
  });

  it('checkpoint: \'background\' or \'inline\' chosen explicitly wins over the clock', () => {
    const bg = new Journal(newDb(), undefined, { checkpoint: 'background' });
    expect(bg.checkpointer).toBeInstanceOf(Checkpointer);
    expect(Number(conn(bg).pragma('wal_autocheckpoint', { simple: true }))).toBe(0);
    bg.close();
    const inline = new Journal(newDb(), immediate, { checkpoint: 'inline' });
    expect(inline.checkpointer).toBeUndefined();
    expect(Number(conn(inline).pragma('wal_autocheckpoint', { simple: true }))).toBe(1000);
    inline.close();
  });

  it('on a virtual clock, and in memory, checkpoints stay SQLite\'s own (no worker)', () => {
    const onDisk = new Journal(newDb());
    expect(onDisk.checkpointer).toBeUndefined();
    expect(Number(conn(onDisk).pragma('wal_autocheckpoint', { simple: true }))).toBe(1000);
    onDisk.close();
    const mem = new Journal(':memory:', immediate);
    expect(mem.checkpointer).toBeUndefined();
    mem.close();
  });
});
