// Bench section 4: the journal alone against raw better-sqlite3 inserts.
import { readFileSync, existsSync, statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { type BoardDef } from '@proofrig/protocol';
import { Journal, blankCommand, Checkpointer, type CommandRecord } from '@proofrig/host/core';
import { RELAY_BOARD, quick, tmpDb } from './harness.js';

//
// Both sides run with the journal's own settings (read back from its connection: WAL, synchronous=FULL,
// every commit fsynced, checkpoints on a background connection as the host runs them) and get the same
// batching opportunity, measured twice:
// - one at a time (batch size 1): the journal as the host drives it for a single device with one command
//   in flight: submitted+sent commit before the cmd frame, then the ack and the result each in their own
//   turn; the raw side commits every INSERT on its own. The rule (on disk before anyone is told) needs at
//   least two commits per command here, so this ratio is bounded near 0.5× by construction.
// - batched (B commands in flight, as at B devices): every commit of the journal holds B submits
//   (submitted+sent) and the ack and result of the B commands before them, which is what one event-loop
//   turn of the host holds in steady state; the raw side commits B INSERTs per transaction. One commit per
//   B commands on both sides: the ratio is the journal's SQL work per command against one bare row.
// The raw row is the smallest honest record of a command (ids, device, action, args, state, time). A third
// side, batched the same way, writes the journal's own record with plain SQL (the same table, indexes and
// bytes: one INSERT of the sent row, one UPDATE to its end): what that record costs SQLite, so the
// journal's own overhead (staging, copies, views) and the record's size show apart.

export const JOURNAL_BATCH = 100;

export interface JournalFigures { single: number; rawSingle: number; batched: number; rawBatched: number; recordBatched: number; sync: string; bytes: { journal: number; raw: number } }

export function journalBench(): JournalFigures {
  const n = quick ? 300 : 1000;
  const rounds = quick ? 20 : 100;
  const jdb = tmpDb();
  const j = new Journal(jdb, undefined, { checkpoint: 'background' });
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  j.provision('dev', 'secret', board);
  // The settings the journal really runs with, read back from its own connection. Its SQLite runs
  // synchronous=NORMAL and the journal fsyncs the WAL after every COMMIT itself (on the bench's virtual
  // path, no deferral: on this thread, before the step returns), which is what synchronous=FULL does in
  // WAL mode; the raw side gets FULL, the same guarantee. Checkpoints: the journal's connection has
  // wal_autocheckpoint=0 and its worker checkpoints; the raw sides get the same checkpointer.
  const jconn = (j as unknown as { db: Database.Database }).db;
  const mode = jconn.pragma('journal_mode', { simple: true }) as string;
  const jsync = Number(jconn.pragma('synchronous', { simple: true }));
  const jckpt = Number(jconn.pragma('wal_autocheckpoint', { simple: true }));
  if (mode !== 'wal' || jsync !== 1 || jckpt !== 0 || !j.checkpointer)
    throw new Error(`bench: the journal runs journal_mode=${mode}, synchronous=${jsync}, wal_autocheckpoint=${jckpt}; this comparison assumes wal + NORMAL with its own WAL fsync and background checkpoints`);
  const sync = 'FULL';
  const state = { up: 1, relays: [1, 2, 3, 4].map((ch) => ({ ch, cmd: true, pin: true, aux: null })) };
  const fresh = (i: number): CommandRecord => ({ ...blankCommand(), command_id: `cmd_${i}`, device_id: 'dev', request_id: `req_${i}`, action: 'relay.set', args: { ch: 3, on: true }, submitted_at: i, updated_at: i, estimated_ms: 100 });
  const sent = (c: CommandRecord, i: number) => Object.assign(c, { state: 'sent', boot_id: 'b', sends: 1, sent_at: i, deadline_at: i + 1000 });
  const done = (c: CommandRecord, i: number) =>
    Object.assign(c, { state: 'completed', executed: true, verified: true, evidence: 'pin_readback', terminal_at: i + 5, device_state: state, device_state_at: i + 5 });
  // The host's steps for one command (Commands.submit, ack, result), each a group: without a deferral a
  // group commits when it ends; nested in an outer group they join its commit.
  const submit = (i: number) =>
    j.group(() => {
      const c = fresh(i);
      j.byRequest('dev', c.request_id);
      j.insert(sent(c, i), null, [
        { at: i, state: 'submitted', note: null },
        { at: i, state: 'sent', note: 'deadline 1000 ms' },
      ]);
    });
  const ack = (i: number) =>
    j.group(() => {
      const a = j.byRequest('dev', `req_${i}`)!;
      Object.assign(a, { state: 'accepted', accepted: true });
      j.update(a, true);
    });
  const result = (i: number) =>
    j.group(() => {
      const r = j.byRequest('dev', `req_${i}`)!;
      j.update(done(r, i), true);
    });
  /** A raw connection with the journal's settings and the same background checkpointer. */
  const rawDb = (path: string) => {
    const d = new Database(path);
    d.pragma(`journal_mode = ${mode}`);
    d.pragma('synchronous = FULL');
    d.pragma('wal_autocheckpoint = 0');
    const cp = new Checkpointer(path, (why) => {
      throw new Error(`bench: the raw side's checkpointer failed: ${why}`);
    });
    return { d, cp };
  };
  const rdbPath = tmpDb();
  const { d: rdb, cp: rcp } = rawDb(rdbPath);
  rdb.exec('CREATE TABLE t (id TEXT PRIMARY KEY, device TEXT, rid TEXT, action TEXT, args TEXT, state TEXT, at INTEGER)');
  const ins = rdb.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)');
  const one = (i: number) => ins.run(`cmd_${i}`, 'dev', `req_${i}`, 'relay.set', '{"ch":3,"on":true}', 'submitted', i);
  const oneCommitted = (i: number) => {
    one(i);
    rcp.committed(1);
  };
  const many = rdb.transaction((from: number) => {
    for (let k = 0; k < JOURNAL_BATCH; k++) one(from + k);
  });
  // The journal's own record through plain SQL: the table and indexes a Journal creates, the same column
  // values it writes (an INSERT of the sent row with its two history lines, an UPDATE to the end with two).
  const recPath = tmpDb();
  new Journal(recPath).close();
  const { d: rec, cp: reccp } = rawDb(recPath);
  const hist = (at: number, st: string, note: string | null) => JSON.stringify([at, st, note]) + '\n';
  const recIns = rec.prepare(
    'INSERT INTO commands (command_id, device_id, request_id, action, args, state, accepted, executed, verified, boot_id, submitted_at, updated_at, deadline_at, estimated_ms, sends, sent_at, history) ' +
      "VALUES (@id, 'dev', @rid, 'relay.set', @args, 'sent', 0, 0, 0, 'b', @at, @at, @deadline, 100, 1, @at, @history)",
  );
  const recUpd = rec.prepare(
    "UPDATE commands SET state = 'completed', accepted = 1, executed = 1, verified = 1, evidence = 'pin_readback', terminal_at = @end, updated_at = @end, " +
      "device_state = @ds, device_state_at = @end, history = coalesce(history, '') || @history WHERE command_id = @id",
  );
  const ds = JSON.stringify(state);
  const recBatch = rec.transaction((from: number | undefined, prev: number | undefined) => {
    if (from !== undefined)
      for (let k = 0; k < JOURNAL_BATCH; k++) {
        const i = from + k;
        recIns.run({ id: `cmd_${i}`, rid: `req_${i}`, args: JSON.stringify({ ch: 3, on: true }), at: i, deadline: i + 1000, history: hist(i, 'submitted', null) + hist(i, 'sent', 'deadline 1000 ms') });
      }
    if (prev !== undefined)
      for (let k = 0; k < JOURNAL_BATCH; k++) {
        const i = prev + k;
        recUpd.run({ id: `cmd_${i}`, end: i + 5, ds, history: hist(i, 'accepted', null) + hist(i + 5, 'completed', null) });
      }
  });
  // The two sides alternate in slices (50 commands one at a time, or one batch), each slice timed on its
  // own: on a shared machine the disk's fsync time drifts, and both sides then see the same drift.
  const time = (f: () => void) => {
    const t = performance.now();
    f();
    return performance.now() - t;
  };
  let jMs = 0;
  let rMs = 0;
  for (let i = 0; i < n; i += 50) {
    jMs += time(() => {
      for (let k = i; k < i + 50; k++) {
        submit(k);
        ack(k);
        result(k);
      }
    });
    rMs += time(() => {
      for (let k = i; k < i + 50; k++) oneCommitted(k);
    });
  }
  const single = n / (jMs / 1000);
  const rawSingle = n / (rMs / 1000);
  // Batched: round r commits the submits of its B commands with the ack and result of round r-1's.
  const base = n;
  jMs = 0;
  rMs = 0;
  let recMs = 0;
  const walBytes = (p: string) => (existsSync(p + '-wal') ? statSync(p + '-wal').size : 0);
  for (let r = 0; r <= rounds; r++) {
    jMs += time(() =>
      j.group(() => {
        if (r < rounds) for (let k = 0; k < JOURNAL_BATCH; k++) submit(base + r * JOURNAL_BATCH + k);
        if (r > 0)
          for (let k = 0; k < JOURNAL_BATCH; k++) {
            ack(base + (r - 1) * JOURNAL_BATCH + k);
            result(base + (r - 1) * JOURNAL_BATCH + k);
          }
      }),
    );
    if (r < rounds)
      rMs += time(() => {
        many(base + r * JOURNAL_BATCH);
        rcp.committed(JOURNAL_BATCH);
      });
    recMs += time(() => {
      recBatch(r < rounds ? base + r * JOURNAL_BATCH : undefined, r > 0 ? base + (r - 1) * JOURNAL_BATCH : undefined);
      reccp.committed(2 * JOURNAL_BATCH);
    });
  }
  const batched = (rounds * JOURNAL_BATCH) / (jMs / 1000);
  const rawBatched = (rounds * JOURNAL_BATCH) / (rMs / 1000);
  const recordBatched = (rounds * JOURNAL_BATCH) / (recMs / 1000);
  // What a command costs in database bytes: the file (with its WAL checkpointed in) per command written.
  const fileBytes = (d: Database.Database, p: string) => {
    d.pragma('wal_checkpoint(TRUNCATE)');
    return statSync(p).size + walBytes(p);
  };
  const bytes = { journal: fileBytes(jconn, jdb) / (n + rounds * JOURNAL_BATCH), raw: fileBytes(rdb, rdbPath) / (n + rounds * JOURNAL_BATCH) };
  rcp.close();
  reccp.close();
  j.close();
  rdb.close();
  rec.close();
  return { single, rawSingle, batched, rawBatched, recordBatched, bytes, sync: `WAL, every commit fsynced: the journal's own WAL fsync / raw synchronous=${sync}; checkpoints on a background connection` };
}
