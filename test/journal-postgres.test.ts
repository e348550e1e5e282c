// The journal on PostgreSQL keeps the journal's promise with PostgreSQL as the durability point: nobody
// is told of a write before PostgreSQL committed it; a host restarted on the same database sees every
// command with its history; a second host on it is refused; PostgreSQL going away makes the journal
// refuse further writes and tells nobody of the lost batch; bad URLs and unreachable servers get clear
// errors that never show the password. (The journal's contract on both backends: host-journal.test.ts.)
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { Journal } from '../host/src/core/journal/journal.js';
import { board, command, immediate, SECRET } from './helpers/group-commit.js';
import { PG_PASS, postgresOrNotice, startPostgres, type Postgres } from './helpers/postgres.js';

const RUN = postgresOrNotice();
const turn = () => new Promise((r) => setImmediate(r));

describe.runIf(RUN)('the journal on PostgreSQL', () => {
  let server: Postgres;
  let url: string;
  let j: Journal | undefined;
  let admin: pg.Client;
  const rows = async (sql: string, args: unknown[] = []) => (await admin.query(sql, args)).rows;

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(() => server.stop());
  beforeEach(async () => {
    url = await server.createDatabase();
    admin = await server.client(new URL(url).pathname.slice(1));
  });
  afterEach(async () => {
    j?.close();
    j = undefined;
    await admin.end().catch(() => {});
  });

  /** Resolves once a backend of the journal waits for a lock (its batch is held by the lock's holder). */
  async function journalWaitsForLock(): Promise<void> {
    for (;;) {
      const r = await rows("SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'proofrig host%' AND wait_event_type = 'Lock'");
      if (r.length) return;
      await new Promise((res) => setTimeout(res, 5));
    }
  }

  it('nobody is told of a write before PostgreSQL committed it: a batch held by a lock in PostgreSQL keeps its waiters waiting, and they run once it commits', async () => {
    j = new Journal(url, immediate);
    const holder = await server.client(new URL(url).pathname.slice(1));
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE commands IN EXCLUSIVE MODE');
    const told: string[] = [];
    j.insert(command(1));
    j.afterCommit(() => told.push('afterCommit'));
    const flushed = j.flushed().then(() => told.push('flushed'));
    await journalWaitsForLock();
    // SQLite (the working copy) committed the batch; PostgreSQL has not: nobody has heard of it.
    await turn();
    expect(told).toEqual([]);
    expect(j.uncommitted).toBe(true);
    expect(j.get('cmd_1')?.state).toBe('submitted');
    // Writes go on meanwhile, into the next batch, which waits for the one before it.
    j.insert(command(2));
    const second = j.flushed().then(() => told.push('second'));
    await turn();
    expect(told).toEqual([]);
    await holder.query('COMMIT');
    await holder.end();
    await flushed;
    await second;
    expect(told).toEqual(['afterCommit', 'flushed', 'second']);
    expect(await rows('SELECT command_id, state FROM commands ORDER BY command_id')).toEqual([
      { command_id: 'cmd_1', state: 'submitted' },
      { command_id: 'cmd_2', state: 'submitted' },
    ]);
    expect(j.uncommitted).toBe(false);
  });

  it('a host restarted on the same database sees every command with its history, its devices and their events', async () => {
    j = new Journal(url, immediate);
    j.provision('dev', SECRET, board);
    const c = command(1);
    j.insert(c, 'hello');
    await turn();
    j.update({ ...c, state: 'sent', sent_at: 5, updated_at: 5 }, true, 'deadline 700 ms');
    await j.flushed();
    j.update({ ...c, state: 'completed', sent_at: 5, executed: true, verified: true, evidence: 'aux_contact', terminal_at: 9, updated_at: 9 }, true);
    j.insert(command(2));
    j.deviceEvent({ device_id: 'dev', boot_id: 'b1', event_id: 'e1', at: 7, kind: 'estop', ch: null, msg: 'pressed', device_state: { up: 1, relays: [] } });
    j.seen('dev', 'b1', 8);
    await j.flushed();
    const before = { cmd: j.get('cmd_1'), events: j.events('cmd_1'), open: j.open(), dev: j.device('dev'), evts: j.deviceEvents('dev', 10), recent: j.recent() };
    j.close();
    j = new Journal(url, immediate);
    expect({ cmd: j.get('cmd_1'), events: j.events('cmd_1'), open: j.open(), dev: j.device('dev'), evts: j.deviceEvents('dev', 10), recent: j.recent() }).toStrictEqual(before);
    expect(before.events.map((e) => [e.state, e.note])).toEqual([
      ['submitted', 'hello'],
      ['sent', 'deadline 700 ms'],
      ['completed', null],
    ]);
    // A device event id handed out after the restart does not reuse one (SQLite's AUTOINCREMENT carries over).
    j.deviceEvent({ device_id: 'dev', boot_id: 'b2', event_id: 'e1', at: 10, kind: 'estop', ch: null, msg: 'again', device_state: { up: 1, relays: [] } });
    await j.flushed();
    expect((await rows('SELECT id::int AS id FROM device_events ORDER BY id')).map((r) => r.id)).toEqual([1, 2]);
  });

  it('a second host on the same database is refused, naming the holder; once the first closed, it opens', () => {
    j = new Journal(url, immediate);
    const shown = url.replace(PG_PASS, '***');
    expect(() => new Journal(url, immediate)).toThrow(
      new RegExp(`^journal ${shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by another proofrig host \\(proofrig host pid ${process.pid} at 127\\.0\\.0\\.1 since .*\\); stop that one, or give this one its own database with --db$`),
    );
    j.close();
    j = new Journal(url, immediate);
    expect(j.open()).toEqual([]);
  });

  it('the schema version is recorded; a database written by a newer proofrig is refused', async () => {
    new Journal(url).close();
    expect(await rows('SELECT version FROM proofrig_schema')).toEqual([{ version: 1 }]);
    await rows("INSERT INTO proofrig_schema VALUES (2, 0, 'a newer proofrig')");
    expect(() => new Journal(url)).toThrow(/was written by a newer proofrig \(schema version 2; this one knows up to 1\); upgrade proofrig/);
  });

  it('a column the working copy has and the database lacks is added in place (a newer proofrig on an older database)', async () => {
    new Journal(url).close();
    await rows('ALTER TABLE commands DROP COLUMN sent_at');
    j = new Journal(url);
    j.insert({ ...command(1), sent_at: 42 });
    j.close();
    j = new Journal(url);
    expect(j.get('cmd_1')?.sent_at).toBe(42);
  });

  it('on a virtual clock (no deferral) each step is in PostgreSQL when it returns', async () => {
    j = new Journal(url);
    j.insert(command(1));
    expect(await rows('SELECT state FROM commands')).toEqual([{ state: 'submitted' }]);
    j.group(() => {
      j!.update({ ...command(1), state: 'sent', updated_at: 2 }, true);
      j!.provision('dev', SECRET, board);
    });
    expect(await rows('SELECT state FROM commands')).toEqual([{ state: 'sent' }]);
    expect((await rows('SELECT device_id FROM devices')).map((r) => r.device_id)).toEqual(['dev']);
    expect(j.prune({ maxAgeMs: 0, maxCommands: 0 }, 10)).toBe(0);
    j.update({ ...command(1), state: 'completed', updated_at: 3, terminal_at: 3 }, true);
    expect(j.prune({ maxAgeMs: 1, maxCommands: 10 }, 10)).toBe(1);
    expect(await rows('SELECT count(*)::int AS n FROM commands')).toEqual([{ n: 0 }]);
    expect(await rows('SELECT command_id FROM pruned_commands')).toEqual([{ command_id: 'cmd_1' }]);
  });
});

describe.runIf(RUN)('PostgreSQL going away, and bad input', () => {
  let server: Postgres;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(() => server.stop());

  it('PostgreSQL going away: the lost batch tells nobody, and the journal refuses every later write with a clear error', async () => {
    const url = await server.createDatabase();
    const j = new Journal(url, immediate);
    const broken: string[] = [];
    j.onBroken = (e) => broken.push(e.message);
    j.insert(command(1));
    await j.flushed();
    server.kill();
    const told: string[] = [];
    j.insert(command(2));
    j.afterCommit(() => told.push('told'));
    const lost = await j.flushed().then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    const shown = url.replace(PG_PASS, '***');
    expect(lost).toMatch(
      new RegExp(`^journal commit to PostgreSQL \\(${shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\) failed \\(.+\\); what the host committed since the last good one may not be in PostgreSQL; nothing of it was sent or answered, and the journal takes no more writes \\(restart the host\\)$`),
    );
    expect(lost).not.toContain(PG_PASS);
    expect(told).toEqual([]);
    expect(broken).toEqual([lost]);
    expect(() => j.insert(command(3))).toThrow(lost);
    expect(() => j.provision('dev', SECRET, board)).toThrow(lost);
    j.close();
    // What PostgreSQL holds is what was committed before it went: the lost batch is not there.
    server.start();
    const again = new Journal(url, immediate);
    expect(again.open().map((c) => c.command_id)).toEqual(['cmd_1']);
    again.close();
  });

  it('an unreachable server, a wrong password, a missing database and a malformed URL each get a specific error without the password', async () => {
    const errorOf = (db: string) => {
      try {
        new Journal(db).close();
        return 'opened';
      } catch (e) {
        return (e as Error).message;
      }
    };
    const port = server.port;
    const unreachable = errorOf(`postgres://proofrig:${PG_PASS}@127.0.0.1:1/x`);
    expect(unreachable).toBe('journal postgres://proofrig:***@127.0.0.1:1/x: connect ECONNREFUSED 127.0.0.1:1');
    const wrong = errorOf(`postgres://proofrig:not-the-password@127.0.0.1:${port}/postgres`);
    expect(wrong).toBe(`journal postgres://proofrig:***@127.0.0.1:${port}/postgres: password authentication failed for user "proofrig"`);
    const missing = errorOf(`postgres://proofrig:${PG_PASS}@127.0.0.1:${port}/nope`);
    expect(missing).toBe(`journal postgres://proofrig:***@127.0.0.1:${port}/nope: database "nope" does not exist`);
    expect(errorOf(`postgres://proofrig:${PG_PASS}@127.0.0.1:${port}`)).toBe(
      `--db postgres://proofrig:***@127.0.0.1:${port} names no database; a PostgreSQL journal is named postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
    );
    expect(errorOf(`postgres://proofrig:${PG_PASS}@127.0.0.1:99999/x`)).toBe(
      '--db postgres://… is not a valid URL; a PostgreSQL journal is named postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE',
    );
    for (const e of [unreachable, wrong, missing]) expect(e).not.toContain(PG_PASS);
  });
});
