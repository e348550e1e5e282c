// The journal as a file: only this user may read it, a million commands stay fast, journals written by
// earlier versions are migrated in place, and group commit (split from host-journal.test.ts).
import { chmodSync, existsSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Journal } from '../host/src/core/journal/journal.js';
import { board, dir, path, j, full, blank, setJournal, useJournal } from './helpers/journal-fixture.js';

useJournal();

describe('the journal holds device secrets: only this user may read it', () => {
  const mode = (p: string) => statSync(p).mode & 0o777;

  it('a new journal is created 0600 in a new .proofrig folder made 0700', () => {
    const p = join(dir, 'state', '.proofrig', 'journal.db');
    const k = new Journal(p);
    k.insert(blank());
    expect(mode(join(dir, 'state', '.proofrig'))).toBe(0o700);
    expect(mode(p)).toBe(0o600);
    expect(mode(p + '-wal')).toBe(0o600);
    k.close();
  });

  it('the -wal and -shm files of a journal from before are made 0600 too', () => {
    j.close();
    const old = join(dir, 'old.db');
    // An earlier version left the journal's WAL files readable by others (its writer still has them open).
    const writer = new Database(old);
    writer.pragma('journal_mode = WAL');
    writer.exec('CREATE TABLE t (x)');
    for (const f of [old, old + '-wal', old + '-shm']) chmodSync(f, 0o644);
    setJournal(new Journal(old));
    writer.close();
    for (const f of [old, old + '-wal', old + '-shm']) expect(mode(f)).toBe(0o600);
  });

  it('an in-memory journal (":memory:", or "" for a temporary one) leaves no file behind', () => {
    // Would be created in the working folder (a file named ':memory:' never belongs there).
    const stray = resolve(':memory:');
    rmSync(stray, { force: true });
    try {
      for (const p of [':memory:', '']) {
        const k = new Journal(p);
        k.insert(blank());
        expect(k.open()).toHaveLength(1);
        k.close();
      }
      expect(existsSync(stray)).toBe(false);
    } finally {
      rmSync(stray, { force: true });
    }
  });
});

describe('a journal of a million commands stays fast: what the host asks at every submit, and list_commands, never reads every row', () => {
  /** SQLite's plan for a statement of the journal, its parameters bound to placeholders. */
  function plan(sql: string): string {
    const db = (j as unknown as { db: Database.Database }).db;
    const p = db.prepare('EXPLAIN QUERY PLAN ' + sql);
    for (let n = 0; n < 6; n++)
      try {
        return (p.all(...Array(n).fill('x')) as { detail: string }[]).map((r) => r.detail).join(' | ');
      } catch {
        // wrong number of parameters: try one more
      }
    throw new Error('no plan for ' + sql);
  }
  const stmt = (k: string) => (j as unknown as { stmts: Record<string, { source: string }> }).stmts[k].source;

  it.each(['byRequest', 'lastMotion', 'get', 'open', 'prunedByRequest', 'expiredIds'])('%s searches an index', (k) => {
    expect(plan(stmt(k))).toMatch(/^SEARCH|^SCAN \w+ USING INDEX/);
    expect(plan(stmt(k))).not.toMatch(/^SCAN \w+$|\| SCAN \w+$/);
  });

  it('the newest commands (list_commands, the dashboard) are read from the end of the submission-time index, unsorted', () => {
    const p = plan('SELECT * FROM commands ORDER BY submitted_at DESC, rowid DESC LIMIT 50');
    expect(p).toBe('SCAN commands USING INDEX commands_submitted');
  });

  it('the last motion of an axis comes from the motion index, in order (relay commands are not in it)', () => {
    expect(plan(stmt('lastMotion'))).toBe('SEARCH commands USING INDEX commands_motion_end (device_id=? AND action=? AND terminal_at>?)');
    const c = blank({ action: 'relay.set', state: 'completed', terminal_at: 1000 });
    const m = blank({ action: 'stepper.move', state: 'failed', terminal_at: 1001 });
    j.insert(c);
    j.insert(m);
    const db = (j as unknown as { db: Database.Database }).db;
    expect(db.prepare('SELECT command_id FROM commands INDEXED BY commands_motion_end WHERE terminal_at IS NOT NULL AND action IN (\'stepper.move\', \'stepper.home\')').all()).toEqual([{ command_id: m.command_id }]);
    expect(j.lastTerminal('rig1', 'stepper.move').map((x) => x.command_id)).toEqual([m.command_id]);
  });
});

describe('a journal written by an earlier version', () => {
  /** A journal file of today's schema with `sql` run on it (what an earlier version left), opened again as `j`. */
  function reopenedAfter(name: string, sql: string): string {
    j.close();
    const old = join(dir, name);
    new Journal(old).close();
    const db = new Database(old);
    db.exec(sql);
    db.close();
    setJournal(new Journal(old));
    return old;
  }

  /** The index names like `like` in the migrated file `old` (closed for the read, then opened again as `j`). */
  function indexesAfterReopen(old: string, like: string): string[] {
    j.close();
    const after = new Database(old, { readonly: true });
    const names = (after.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE ?").all(like) as { name: string }[]).map((r) => r.name);
    after.close();
    setJournal(new Journal(old));
    return names;
  }

  it('whose (device_id, request_id) index was unique outright: a retry after DEVICE_OFFLINE can run', () => {
    reopenedAfter('old-index.db', 'DROP INDEX commands_request_rid; CREATE UNIQUE INDEX commands_request ON commands(device_id, request_id)');
    j.insert(blank({ request_id: 'r', state: 'rejected', error_code: 'DEVICE_OFFLINE', terminal_at: 1000 }));
    const retry = blank({ request_id: 'r', state: 'sent' });
    j.insert(retry);
    expect(j.byRequest('rig1', 'r')!.command_id).toBe(retry.command_id);
  });

  it('whose index freed a request_id after DEVICE_OFFLINE only: a retry after a BUSY refusal can run', () => {
    reopenedAfter(
      'old-index-sent.db',
      "DROP INDEX commands_request_rid; CREATE UNIQUE INDEX commands_request_sent ON commands(device_id, request_id) WHERE NOT (state = 'rejected' AND error_code = 'DEVICE_OFFLINE')",
    );
    j.insert(blank({ request_id: 'r', state: 'rejected', error_code: 'BUSY', terminal_at: 1000 }));
    const retry = blank({ request_id: 'r', state: 'sent', sent_at: 1100 });
    j.insert(retry);
    expect(j.byRequest('rig1', 'r')!.command_id).toBe(retry.command_id);
  });

  it('whose request_id had two indexes (one to find, a partial unique one to hold it): they become the one index a submit writes, and it still holds the request_id', () => {
    const old = reopenedAfter(
      'old-request-indexes.db',
      'DROP INDEX commands_request_rid; CREATE INDEX commands_request_all ON commands(device_id, request_id); ' +
        "CREATE UNIQUE INDEX commands_request_once ON commands(device_id, request_id) WHERE NOT (state = 'rejected' AND sent_at IS NULL AND error_code IN ('DEVICE_OFFLINE', 'BUSY', 'STATE_READ_REQUIRED'))",
    );
    expect(indexesAfterReopen(old, 'commands_request%')).toEqual(['commands_request_rid']);
    j.insert(blank({ request_id: 'r', state: 'rejected', error_code: 'BUSY', terminal_at: 1000 }));
    j.insert(blank({ request_id: 'r', state: 'rejected', error_code: 'BUSY', terminal_at: 1001 }));
    const ran = blank({ request_id: 'r', state: 'completed', sent_at: 1100, terminal_at: 1200 });
    j.insert(ran);
    expect(() => j.insert(blank({ request_id: 'r', state: 'sent', sent_at: 1300 }))).toThrow(/UNIQUE/);
    expect(j.byRequest('rig1', 'r')!.command_id).toBe(ran.command_id);
  });

  it('whose open commands were indexed by state (rewritten on every state change): that index is replaced by one on submitted_at', () => {
    const old = reopenedAfter('old-open-index.db', 'DROP INDEX commands_open_at; CREATE INDEX commands_open ON commands(state) WHERE terminal_at IS NULL');
    expect(indexesAfterReopen(old, 'commands_open%')).toEqual(['commands_open_at']);
  });

  it('gets the newer columns added in place, and its rows read back with them empty', () => {
    j.close();
    const old = join(dir, 'old.db');
    const db = new Database(old);
    db.exec(`CREATE TABLE commands (command_id TEXT PRIMARY KEY, device_id TEXT NOT NULL, request_id TEXT NOT NULL, action TEXT NOT NULL,
      args TEXT NOT NULL, state TEXT NOT NULL, accepted INTEGER NOT NULL, executed INTEGER NOT NULL, verified INTEGER NOT NULL,
      evidence TEXT, error_code TEXT, detail TEXT, boot_id TEXT, submitted_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
      terminal_at INTEGER, deadline_at INTEGER, estimated_ms INTEGER NOT NULL, progress REAL, device_state TEXT, device_state_at INTEGER,
      sends INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE devices (device_id TEXT PRIMARY KEY, secret TEXT NOT NULL, board TEXT NOT NULL, last_boot TEXT, last_seen INTEGER);`);
    db.prepare(`INSERT INTO commands VALUES ('cmd_old', 'rig1', 'r1', 'relay.set', '{"ch":1}', 'completed', 1, 1, 1, 'aux_contact', NULL, NULL, 'b1', 10, 20, 20, 30, 25, NULL, NULL, NULL, 1)`).run();
    db.prepare(`INSERT INTO devices VALUES ('rig1', ?, ?, 'b1', 20)`).run('a'.repeat(64), JSON.stringify(board));
    db.close();
    setJournal(new Journal(old));
    expect(j.get('cmd_old')).toMatchObject({ command_id: 'cmd_old', state: 'completed', position: null, sent_at: null, evidence: 'aux_contact' });
    expect(j.device('rig1')).toMatchObject({ simulated: false, last_boot: 'b1' });
    const c = full();
    j.insert(c);
    expect(j.get(c.command_id)).toStrictEqual(c);
  });
});

describe('group commit', () => {
  it('outside a group, afterCommit runs at once; inside one, after the group ends', () => {
    const order: string[] = [];
    j.afterCommit(() => order.push('now'));
    j.group(() => {
      j.insert(blank({ state: 'sent' }));
      j.afterCommit(() => order.push('after'));
      order.push('in group');
    });
    expect(order).toEqual(['now', 'in group', 'after']);
  });

  it('with a deferred commit, writes of a group reach the disk when the deferred commit runs and are told once the WAL is fsynced after it', async () => {
    j.close();
    const later: (() => void)[] = [];
    setJournal(new Journal(path, (fn) => later.push(fn)));
    const c = blank({ state: 'sent' });
    const told: string[] = [];
    j.group(() => {
      j.insert(c);
      j.afterCommit(() => told.push('told'));
    });
    const other = new Database(path, { readonly: true });
    const count = () => (other.prepare('SELECT COUNT(*) AS n FROM commands').get() as { n: number }).n;
    expect(count()).toBe(0);
    expect(told).toEqual([]);
    expect(later).toHaveLength(1);
    later[0]();
    expect(count()).toBe(1);
    expect(told).toEqual([]);
    expect(j.uncommitted).toBe(true);
    await j.flushed();
    expect(told).toEqual(['told']);
    expect(j.uncommitted).toBe(false);
    other.close();
  });
});
