// A journal kept in PostgreSQL. The host reads and writes a SQLite working copy synchronously, as with a
// file journal (a private temporary database); PostgreSQL is where a write becomes durable. Triggers on
// the working copy note the key of every row a write touched; at each COMMIT of the working copy those
// rows are read back (in its transaction) and queued, and commit.ts hands them to PostgreSQL in one
// transaction of upserts and deletes where it would fsync a file's WAL: nobody is told of a write
// before PostgreSQL's COMMIT of it returned (see commit.ts). At start the working copy is loaded from
// PostgreSQL; an advisory lock refuses a second host on the same database.
import type Database from 'better-sqlite3';
import { redactUrl } from './db-url.js';
import { PgLink, type Query } from './pg-link.js';
import { COLUMNS_QUERY, LOCK_KEY, PG_SCHEMA_VERSION, ROWID, VERSION_TABLE, migrations, reconcile, tablesOf, type Table } from './pg-schema.js';

/** Rows loaded per query at start. */
const LOAD_PAGE = 5000;
/** PostgreSQL takes at most 65535 parameters per statement. */
const MAX_PARAMS = 60000;
/** How long a request waited for on the host's thread (the start, a durable write, close) may take. */
export const PG_WAIT_MS = 30_000;

/** The rows a commit changed, by table and key: the row's values (the table's columns, then its rowid) or null (deleted). */
type Changes = Map<string, Map<unknown, unknown[] | null>>;

export class PgMirror {
  readonly shown: string;
  private readonly link: PgLink;
  private tables: Table[] = [];
  private byName = new Map<string, { t: Table; row: Database.Statement }>();
  private dirty!: Database.Statement;
  private clearDirty!: Database.Statement;
  /** Committed to the working copy, not yet handed to PostgreSQL. */
  private queued: Changes = new Map();

  constructor(url: string, waitMs = PG_WAIT_MS) {
    this.shown = redactUrl(url);
    this.link = new PgLink(url, this.shown, waitMs);
  }

  /**
   * Take the database (refused while another host holds it), bring its tables to this version, load
   * its rows into the working copy `db` (whose schema is made), and start noting what writes change.
   */
  open(db: Database.Database): void {
    try {
      this.lock();
      this.tables = tablesOf(db);
      const [, [[have]]] = this.link.runSync([{ text: VERSION_TABLE }, { text: 'SELECT coalesce(max(version), 0) FROM proofrig_schema' }], true) as [unknown, [[number]]];
      if (have > PG_SCHEMA_VERSION)
        throw new Error(`journal ${this.shown} was written by a newer proofrig (schema version ${have}; this one knows up to ${PG_SCHEMA_VERSION}); upgrade proofrig`);
      if (have < PG_SCHEMA_VERSION) this.link.runSync(migrations(have, this.tables, Date.now()), true);
      const [cols] = this.link.runSync([{ text: COLUMNS_QUERY }]) as [[string, string][]];
      const add = reconcile(this.tables, cols.map(([table, column]) => ({ table, column })));
      if (add.length) this.link.runSync(add, true);
      this.load(db);
    } catch (e) {
      this.link.close();
      const msg = (e as Error).message;
      throw new Error(msg.includes(this.shown) ? msg : `journal ${this.shown}: ${msg}`);
    }
    this.watch(db);
  }

  /** One writing host per database (a session advisory lock, released when its connection ends). */
  private lock(): void {
    const [[[got]]] = this.link.runSync([{ text: 'SELECT pg_try_advisory_lock($1)', values: [LOCK_KEY] }]) as [[[boolean]]];
    if (got) return;
    const [holders] = this.link.runSync([
      {
        text: "SELECT a.application_name, host(a.client_addr), a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.objid = $1 AND l.granted",
        values: [LOCK_KEY],
      },
    ]) as [[string, string | null, Date][]];
    const who = holders.map(([app, addr, since]) => `${app || 'a client'}${addr ? ' at ' + addr : ''} since ${new Date(since).toISOString()}`).join(', ');
    throw new Error(`journal ${this.shown} is in use by another proofrig host (${who || 'holder unknown'}); stop that one, or give this one its own database with --db`);
  }

  /** Copy every row of the database into the working copy, in rowid order, a page at a time. */
  private load(db: Database.Database): void {
    db.transaction(() => {
      for (const t of this.tables) {
        const order = t.keyIsRowid ? t.key : ROWID;
        const cols = t.keyIsRowid ? t.cols : [...t.cols, ROWID];
        const put = db.prepare(`INSERT INTO main.${t.name} (${t.keyIsRowid ? t.cols : [...t.cols, 'rowid']}) VALUES (${cols.map(() => '?').join(', ')})`);
        let after: unknown = null;
        for (;;) {
          const [rows] = this.link.runSync([
            { text: `SELECT ${cols.join(', ')} FROM ${t.name} ${after === null ? '' : `WHERE ${order} > $1`} ORDER BY ${order} LIMIT ${LOAD_PAGE}`, values: after === null ? [] : [after] },
          ]) as [unknown[][]];
          for (const r of rows) put.run(r);
          if (rows.length < LOAD_PAGE) break;
          after = rows[rows.length - 1][cols.indexOf(order)];
        }
      }
    })();
  }

  /** Temporary triggers note the key of each row a write inserts, updates or deletes. */
  private watch(db: Database.Database): void {
    db.exec('CREATE TEMP TABLE pg_dirty (tbl TEXT NOT NULL, k NOT NULL, PRIMARY KEY (tbl, k)) WITHOUT ROWID');
    for (const t of this.tables) {
      // Not INSERT OR IGNORE: a trigger takes the conflict policy of the statement that fired it (an upsert's is ABORT).
      const note = (row: 'NEW' | 'OLD') =>
        `INSERT INTO pg_dirty SELECT '${t.name}', ${row}.${t.key} WHERE NOT EXISTS (SELECT 1 FROM pg_dirty WHERE tbl = '${t.name}' AND k = ${row}.${t.key});`;
      db.exec(`CREATE TEMP TRIGGER pg_ins_${t.name} AFTER INSERT ON main.${t.name} BEGIN ${note('NEW')} END`);
      db.exec(`CREATE TEMP TRIGGER pg_upd_${t.name} AFTER UPDATE ON main.${t.name} BEGIN ${note('OLD')} ${note('NEW')} END`);
      db.exec(`CREATE TEMP TRIGGER pg_del_${t.name} AFTER DELETE ON main.${t.name} BEGIN ${note('OLD')} END`);
      const sel = t.keyIsRowid ? t.cols : [...t.cols, 'rowid'];
      this.byName.set(t.name, { t, row: db.prepare(`SELECT ${sel.join(', ')} FROM main.${t.name} WHERE ${t.key} = ?`).raw() });
    }
    this.dirty = db.prepare('SELECT tbl, k FROM pg_dirty').raw();
    this.clearDirty = db.prepare('DELETE FROM pg_dirty');
  }

  /**
   * The rows written since the last call, as they are now (inside the transaction about to COMMIT, or
   * after a write that committed on its own). Queue them with queue() once that COMMIT returned.
   */
  collect(): Changes | undefined {
    const keys = this.dirty.all() as [string, unknown][];
    if (keys.length === 0) return undefined;
    this.clearDirty.run();
    const out: Changes = new Map();
    for (const [tbl, k] of keys) {
      const { row } = this.byName.get(tbl)!;
      let m = out.get(tbl);
      if (!m) out.set(tbl, (m = new Map()));
      m.set(k, (row.get(k) as unknown[] | undefined) ?? null);
    }
    return out;
  }

  /** Changes whose COMMIT in the working copy returned: the next ship() carries them. */
  queue(c: Changes | undefined): void {
    if (!c) return;
    for (const [tbl, rows] of c) {
      let m = this.queued.get(tbl);
      if (!m) this.queued.set(tbl, (m = new Map()));
      for (const [k, v] of rows) m.set(k, v);
    }
  }

  /** Everything queued, as the statements of one PostgreSQL transaction (empty when nothing is queued). */
  private take(): Query[] {
    const out: Query[] = [];
    for (const [tbl, rows] of this.queued) {
      const { t } = this.byName.get(tbl)!;
      const gone = [...rows].filter(([, v]) => v === null).map(([k]) => k);
      if (gone.length) out.push({ text: `DELETE FROM ${t.name} WHERE ${t.key} = ANY($1)`, values: [gone] });
      const put = [...rows.values()].filter((v): v is unknown[] => v !== null);
      const cols = t.keyIsRowid ? t.cols : [...t.cols, ROWID];
      const per = Math.max(1, Math.floor(MAX_PARAMS / cols.length));
      const set = cols.filter((c) => c !== t.key).map((c) => `${c} = EXCLUDED.${c}`);
      for (let i = 0; i < put.length; i += per) {
        const chunk = put.slice(i, i + per);
        const values: unknown[] = [];
        const tuples = chunk.map((r) => `(${r.map((v) => (values.push(v), '$' + values.length)).join(', ')})`);
        out.push({
          text: `INSERT INTO ${t.name} (${cols.join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT (${t.key}) DO ${set.length ? 'UPDATE SET ' + set.join(', ') : 'NOTHING'}`,
          values,
        });
      }
    }
    this.queued = new Map();
    return out;
  }

  /** Something is queued for PostgreSQL. */
  get waiting(): boolean {
    return this.queued.size > 0;
  }

  /** Hand what is queued to PostgreSQL in one transaction; `done` once its COMMIT returned (or failed). */
  ship(done: (err: Error | null) => void): void {
    const qs = this.take();
    if (qs.length === 0) return done(null);
    this.link.run(qs, true, done);
  }

  /** The same, waited for on this thread (and after every ship asked before it). */
  shipSync(): void {
    const qs = this.take();
    // An empty request still waits for the background ones before it.
    this.link.runSync(qs, qs.length > 0);
  }

  /** End the connection, releasing the database for another host. */
  close(): void {
    this.link.close();
  }
}
