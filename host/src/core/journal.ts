// The persistent journal: every command with its lifecycle, and the provisioned devices.
// Writes are group-committed (see settle); reads see the host's own uncommitted batch, and
// whatever tells anyone outside about a write waits until it is on disk (afterCommit, flushed):
// its COMMIT returned and the WAL was fsynced after it.
import { chmodSync, closeSync, existsSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Checkpointer } from './checkpointer.js';
import { prepareStateDir, privateFile, stateDir } from '../state-dir.js';
import type { BoardDef, DeviceState, ErrorCode, Evidence, LifecycleState } from '@proofrig/protocol';
import { MOTION_ACTIONS } from '@proofrig/protocol/kinds';

export interface CommandRecord {
  command_id: string;
  device_id: string;
  request_id: string;
  action: string;
  args: Record<string, unknown>;
  state: LifecycleState;
  accepted: boolean;
  executed: boolean;
  verified: boolean;
  evidence: Evidence | null;
  error_code: ErrorCode | null;
  detail: string | null;
  /** Boot id of the device when the command was sent. */
  boot_id: string | null;
  submitted_at: number;
  updated_at: number;
  terminal_at: number | null;
  deadline_at: number | null;
  estimated_ms: number;
  progress: number | null;
  /** Last measured position (mm) reported by the device for a motion command. */
  position: number | null;
  device_state: DeviceState | null;
  device_state_at: number | null;
  sends: number;
  /** When the host last sent it to the device (null: never). */
  sent_at: number | null;
}

export interface DeviceRecord {
  device_id: string;
  secret: string;
  board: BoardDef;
  last_boot: string | null;
  last_seen: number | null;
  /** A simulated rig provisioned by a host run (removed when a later run does not start it). */
  simulated: boolean;
}

export interface CommandQuery {
  device_id?: string;
  states?: LifecycleState[];
  actions?: string[];
  /** submitted_at bounds, ms since the epoch. */
  since?: number;
  until?: number;
  /** Only commands that are not terminal yet. */
  open?: boolean;
  limit?: number;
}

/** Something an interlock on the device did by itself (an `evt` frame), journaled once per boot and id. */
export interface DeviceEventRecord {
  device_id: string;
  boot_id: string;
  event_id: string;
  at: number;
  kind: string;
  ch: number | null;
  msg: string;
  device_state: DeviceState;
}

/** The tombstone of a command removed by retention. */
export interface PrunedCommand {
  command_id: string;
  device_id: string;
  request_id: string;
  action: string;
  state: LifecycleState;
  submitted_at: number;
  terminal_at: number;
  pruned_at: number;
}

/** Journal retention: terminal commands older than `maxAgeMs`, or beyond the newest `maxCommands` terminal ones, are pruned. */
export interface Retention {
  maxAgeMs: number;
  maxCommands: number;
}

export const DEFAULT_RETENTION: Retention = { maxAgeMs: 30 * 24 * 3600 * 1000, maxCommands: 1_000_000 };
/** Rows pruned per transaction, so a large backlog never blocks the host for long. */
const PRUNE_BATCH = 2000;

export interface CommandEvent {
  at: number;
  state: LifecycleState;
  note: string | null;
}

/**
 * The host's refusals of the moment: decided before anything was sent, for a reason that passes (the
 * device offline, the axis busy with another motion, a state read due after a fault). They are not
 * the request's answer, so a retry with the same request_id is judged anew. A refusal the device
 * made (sent_at set) is its answer and dedupes like any result. The index below is built from this
 * list: changing it needs a new index name (the old one is dropped in the constructor).
 */
export const MOMENT_REFUSALS = ['DEVICE_OFFLINE', 'BUSY', 'STATE_READ_REQUIRED'] as const;
const MOMENT_SQL = `(state = 'rejected' AND sent_at IS NULL AND error_code IN (${MOMENT_REFUSALS.map((c) => `'${c}'`).join(', ')}))`;
const MOMENT = new Set<string>(MOMENT_REFUSALS);
/**
 * Ended motion commands: the rows commands_motion_end holds (the last motion of an axis decides whether
 * it may move). The index is built from this list: changing it needs a new index name.
 */
// (MOTION_ACTIONS comes from the kinds: @proofrig/protocol.)
const MOTIONS = new Set<string>(MOTION_ACTIONS);
const MOTION_END_SQL = `terminal_at IS NOT NULL AND action IN (${MOTION_ACTIONS.map((a) => `'${a}'`).join(', ')})`;
export function momentRefusal(c: CommandRecord): boolean {
  return c.state === 'rejected' && c.sent_at === null && MOMENT.has(c.error_code!);
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS commands (
  command_id TEXT PRIMARY KEY,
  device_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  action TEXT NOT NULL,
  args TEXT NOT NULL,
  state TEXT NOT NULL,
  accepted INTEGER NOT NULL,
  executed INTEGER NOT NULL,
  verified INTEGER NOT NULL,
  evidence TEXT,
  error_code TEXT,
  detail TEXT,
  boot_id TEXT,
  submitted_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  terminal_at INTEGER,
  deadline_at INTEGER,
  estimated_ms INTEGER NOT NULL,
  progress REAL,
  position REAL,
  device_state TEXT,
  device_state_at INTEGER,
  sends INTEGER NOT NULL DEFAULT 0,
  sent_at INTEGER,
  history TEXT
);
-- Open commands in submission order (the restart's reload). Keyed on a column that never changes, so
-- a state change does not touch it: an entry is written at insert and removed when the command ends.
CREATE INDEX IF NOT EXISTS commands_open_at ON commands(submitted_at) WHERE terminal_at IS NULL;
-- Every command by submission time: recent() (list_commands, the dashboard, tasks/list) walks it from
-- the newest end instead of sorting the whole table. Appended at one end, never changed.
CREATE INDEX IF NOT EXISTS commands_submitted ON commands(submitted_at);
-- Ended motions per device and action (relay commands never enter it). It replaces the device_id prefix
-- of the former (device_id, request_id) index, which every submit of every device wrote.
CREATE INDEX IF NOT EXISTS commands_motion_end ON commands(device_id, action, terminal_at) WHERE ${MOTION_END_SQL};
-- The lifecycle history of commands journaled before it moved into commands.history (read, pruned, never written).
CREATE TABLE IF NOT EXISTS command_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  command_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  state TEXT NOT NULL,
  note TEXT
);
CREATE INDEX IF NOT EXISTS command_events_cmd ON command_events(command_id);
CREATE TABLE IF NOT EXISTS device_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  ch INTEGER,
  msg TEXT NOT NULL,
  device_state TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS device_events_once ON device_events(device_id, boot_id, event_id);
-- What retention leaves of a pruned command (~100 bytes instead of the row and its events), so a
-- question about it is answered "pruned" and its request_id is never executed again.
CREATE TABLE IF NOT EXISTS pruned_commands (
  command_id TEXT PRIMARY KEY,
  device_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  action TEXT NOT NULL,
  state TEXT NOT NULL,
  submitted_at INTEGER NOT NULL,
  terminal_at INTEGER NOT NULL,
  pruned_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS pruned_request ON pruned_commands(device_id, request_id);
CREATE INDEX IF NOT EXISTS commands_terminal ON commands(terminal_at) WHERE terminal_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS devices (
  device_id TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  board TEXT NOT NULL,
  last_boot TEXT,
  last_seen INTEGER
);
`;

type Row = Record<string, unknown>;
type Waiter = { ok: () => void; fail?: (e: Error) => void };

function toRecord(r: Row): CommandRecord {
  return {
    command_id: r.command_id as string,
    device_id: r.device_id as string,
    request_id: r.request_id as string,
    action: r.action as string,
    args: JSON.parse(r.args as string),
    state: r.state as LifecycleState,
    accepted: r.accepted === 1,
    executed: r.executed === 1,
    verified: r.verified === 1,
    evidence: (r.evidence as Evidence | null) ?? null,
    error_code: (r.error_code as ErrorCode | null) ?? null,
    detail: (r.detail as string | null) ?? null,
    boot_id: (r.boot_id as string | null) ?? null,
    submitted_at: r.submitted_at as number,
    updated_at: r.updated_at as number,
    terminal_at: (r.terminal_at as number | null) ?? null,
    deadline_at: (r.deadline_at as number | null) ?? null,
    estimated_ms: r.estimated_ms as number,
    progress: (r.progress as number | null) ?? null,
    position: (r.position as number | null) ?? null,
    device_state: r.device_state ? JSON.parse(r.device_state as string) : null,
    device_state_at: (r.device_state_at as number | null) ?? null,
    sends: r.sends as number,
    sent_at: (r.sent_at as number | null) ?? null,
  };
}

/** The columns of a command row, in the order of CommandRecord's fields (blankCommand's), which toValues follows. */
const COLUMNS = Object.keys(blankCommand()) as (keyof CommandRecord)[];
/**
 * A command's column values in COLUMNS order, bound as positional parameters: a named binding looks
 * every one of the 24 names up on an object, and an UPDATE's arguments built by name made objects with
 * keys added one by one (measured: ~20 % of the journal's time per command at 100 in flight).
 */
type Values = unknown[];
function toValues(c: CommandRecord): Values {
  return [
    c.command_id, c.device_id, c.request_id, c.action, JSON.stringify(c.args), c.state,
    c.accepted ? 1 : 0, c.executed ? 1 : 0, c.verified ? 1 : 0, c.evidence, c.error_code, c.detail,
    c.boot_id, c.submitted_at, c.updated_at, c.terminal_at, c.deadline_at, c.estimated_ms,
    c.progress, c.position, c.device_state ? JSON.stringify(c.device_state) : null, c.device_state_at, c.sends, c.sent_at,
  ];
}

/** Whether two rows of one command hold the same values in every column an UPDATE may set. */
function sameFields(a: Values, b: Values): boolean {
  for (let i = FIRST_FIELD; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A shallow copy: callers change top-level fields and then call update(); the journal's own copy must not move with them.
 * Field by field rather than `{ ...c }`: one object shape for every copy. Five copies a command at full load; with
 * the spread they were the journal's largest JS cost (measured without the fsync, 100 in flight: ~85 → ~55 µs a
 * command). Typed as the record, so a field added to it and not here fails to compile.
 */
const copy = (c: CommandRecord): CommandRecord => ({
  command_id: c.command_id, device_id: c.device_id, request_id: c.request_id, action: c.action, args: c.args, state: c.state,
  accepted: c.accepted, executed: c.executed, verified: c.verified, evidence: c.evidence, error_code: c.error_code, detail: c.detail,
  boot_id: c.boot_id, submitted_at: c.submitted_at, updated_at: c.updated_at, terminal_at: c.terminal_at, deadline_at: c.deadline_at,
  estimated_ms: c.estimated_ms, progress: c.progress, position: c.position, device_state: c.device_state,
  device_state_at: c.device_state_at, sends: c.sends, sent_at: c.sent_at,
});
const reqKey = (deviceId: string, requestId: string) => deviceId + '\u0000' + requestId;
/** Positions of the columns an UPDATE may set: all but the key (position 0). */
const FIRST_FIELD = 1;
const DONE = Promise.resolve();
/** How many of the commands that ended last Journal.get serves from memory. */
const ENDED_KEPT = 1024;

/** One step of a command's history as it is stored: a JSON line appended to commands.history. */
// Written as JSON.stringify([at, state, note]) would, by hand (three lines a command at full load): a state
// is one of the lifecycle names (no character to escape) and `at` a finite number.
const histLine = (at: number, state: LifecycleState, note: string | null) => '[' + at + ',"' + state + '",' + (note === null ? 'null' : JSON.stringify(note)) + ']\n';
function parseHistory(text: string | null): CommandEvent[] {
  if (!text) return [];
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [at, state, note] = JSON.parse(l) as [number, LifecycleState, string | null];
      return { at, state, note };
    });
}

/** A command written in the open batch but not yet to SQLite: its latest record and row, and the history lines it adds. */
interface Staged {
  rec: CommandRecord;
  row: Values;
  /** Not in the database yet: the flush INSERTs it. */
  isNew: boolean;
  history: string;
}

/** Journals of this process with writes not on disk yet (a batch open, or an fsync to come or running). */
const busy = new Set<Journal>();

/** Resolves once no journal of this process holds a write that is not on disk (tests, a graceful stop). */
export async function allDurable(): Promise<void> {
  for (;;) {
    for (const j of busy) if (!j.uncommitted) busy.delete(j);
    if (busy.size === 0) return;
    await Promise.allSettled([...busy].map((j) => j.flushed()));
  }
}

export class Journal {
  private db: Database.Database;
  private stmts: Record<string, Database.Statement>;
  // Open commands are served from memory (this process is their only writer), with the row last written
  // for each, so an update writes only the columns that changed. Terminal ones are read from disk.
  private openRecs = new Map<string, CommandRecord>();
  private openByReq = new Map<string, string>();
  private written = new Map<string, Values>();
  // The commands that ended last (as written, oldest first): whoever waited for one reads its status
  // right after it ends (an MCP call with wait_ms, a poll), which needs no SELECT and JSON.parse then.
  private ended = new Map<string, CommandRecord>();
  // Write-behind: inside a batch a command's writes are staged here and reach SQLite once, when the batch
  // flushes (before its COMMIT, or before a read that SQL must answer), so a command submitted, acked and
  // answered within one batch is one row write, and its ack and result in the next batch one UPDATE.
  private staged = new Map<string, Staged>();
  /** Request keys of staged commands that are terminal (no longer in openByReq): SQL answers them only after a flush. */
  private stagedClosed = new Set<string>();
  private narrow = new Map<number, Database.Statement>();
  /** One transaction wrapper, made once (better-sqlite3 builds a new one per db.transaction() call). */
  private readonly tx: (f: () => void) => void;
  // Group commit. With `defer` (the real clock) every write joins one open transaction (the batch)
  // that commits once, when the deferred callback runs at the end of the event-loop turn; without
  // it (a virtual clock) writes inside group() commit when the outermost group ends and any other
  // write commits at once. Reads go through the same connection, so the host's own logic sees its
  // batch; whoever outside must not hear of a write before it is on disk waits for afterCommit()
  // or flushed(), which run (or resolve) only after the COMMIT returned, and fail if it did not.
  private grouping = 0;
  /** A batch transaction is open (BEGIN issued, COMMIT not yet). */
  private pending = false;
  /** A write of the open batch failed: the batch is rolled back, never committed. */
  private poisoned: Error | undefined;
  private scheduled = false;
  private after: Waiter[] = [];
  // Durability. SQLite runs with synchronous=NORMAL (a COMMIT appends to the WAL without fsync) and the
  // journal fsyncs the WAL itself after each COMMIT, which is what synchronous=FULL adds in WAL mode. With
  // `defer` the fsync runs on libuv's thread pool, so the event loop goes on with the next batch meanwhile;
  // what waits for a batch runs once an fsync that began after its COMMIT has returned.
  private walFd: number | undefined;
  private walPath: string | undefined;
  /** A COMMIT returned since the running fsync began (or with none running): the next fsync must cover it. */
  private unsynced = false;
  private syncing = false;
  /** The end of the event-loop turn came while an fsync ran: the open batch commits when it returns. */
  private commitAfterSync = false;
  /** Waiters of what the running fsync covers, and of what committed after it began. */
  private covered: Waiter[] = [];
  private next: Waiter[] = [];
  /** An fsync failed: what the WAL holds since the last good one may not be on disk; the journal writes no more. */
  private broken: Error | undefined;
  private closed = false;
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
  private rowWrites = 0;

  /**
   * `path` is a file, or ':memory:' for tests that do not restart. `defer` schedules the batch commit
   * (the host passes setImmediate on the real clock); without it a group commits when it ends.
   * `checkpoint`: where WAL checkpoints run, 'background' (a worker thread, see checkpointer.ts; the
   * default for an on-disk journal with `defer`) or 'inline' (inside a COMMIT, SQLite's default).
   */
  constructor(path: string, private readonly defer?: (fn: () => void) => void, opts: { checkpoint?: 'inline' | 'background' } = {}) {
    const onDisk = path !== ':memory:' && path !== '';
    if (onDisk) {
      // Device secrets live here: the folder is 0700 and the files 0600 before anything is written.
      prepareStateDir(stateDir(path));
      privateFile(path);
    }
    this.db = new Database(path);
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
    // Earlier journals made (device_id, request_id) unique outright (commands_request), then except
    // DEVICE_OFFLINE alone (commands_request_sent); both kept a retry after a refusal of the moment from running.
    this.db.exec('DROP INDEX IF EXISTS commands_request');
    this.db.exec('DROP INDEX IF EXISTS commands_request_sent');
    // And indexed open commands by state, which every state change rewrote (commands_open_at replaces it).
    this.db.exec('DROP INDEX IF EXISTS commands_open');
    this.db.exec(SCHEMA);
    this.migrate();
    const cols = COLUMNS.join(', ') + ', history';
    const vals = COLUMNS.map(() => '?').join(', ') + ', ?';
    this.tx = this.db.transaction((f: () => void) => f());
    const stmts = {
      insert: this.db.prepare(`INSERT INTO commands (${cols}) VALUES (${vals})`),
      get: this.db.prepare('SELECT * FROM commands WHERE command_id = ?'),
      // The command that could have reached the device, else the newest refusal of the moment.
      byRequest: this.db.prepare(`SELECT * FROM commands WHERE device_id = ? AND request_id = ? ORDER BY ${MOMENT_SQL}, rowid DESC LIMIT 1`),
      lastTerminal: this.db.prepare(
        // Refusals never reached the axis: they are not its last motion.
        "SELECT * FROM commands WHERE device_id = ? AND action = ? AND terminal_at IS NOT NULL AND state != 'rejected' ORDER BY terminal_at DESC, rowid DESC LIMIT 50",
      ),
      // The same for a motion (asked at every motion submit), through commands_motion_end: the
      // query repeats the index's own WHERE terms, which is what lets SQLite use a partial index.
      lastMotion: this.db.prepare(
        `SELECT * FROM commands WHERE device_id = ? AND action = ? AND ${MOTION_END_SQL} AND state != 'rejected' ORDER BY terminal_at DESC, rowid DESC LIMIT 50`,
      ),
      open: this.db.prepare('SELECT * FROM commands WHERE terminal_at IS NULL ORDER BY submitted_at'),
      events: this.db.prepare('SELECT at, state, note FROM command_events WHERE command_id = ? ORDER BY id'),
      history: this.db.prepare('SELECT history FROM commands WHERE command_id = ?'),
      device: this.db.prepare('SELECT * FROM devices WHERE device_id = ?'),
      devices: this.db.prepare('SELECT * FROM devices ORDER BY device_id'),
      putDevice: this.db.prepare(
        'INSERT INTO devices (device_id, secret, board, simulated) VALUES (?, ?, ?, ?) ON CONFLICT(device_id) DO UPDATE SET secret = excluded.secret, board = excluded.board, simulated = excluded.simulated',
      ),
      removeDevice: this.db.prepare('DELETE FROM devices WHERE device_id = ?'),
      seen: this.db.prepare('UPDATE devices SET last_boot = ?, last_seen = ? WHERE device_id = ?'),
      putDeviceEvent: this.db.prepare(
        'INSERT OR IGNORE INTO device_events (device_id, boot_id, event_id, at, kind, ch, msg, device_state) VALUES (@device_id, @boot_id, @event_id, @at, @kind, @ch, @msg, @device_state)',
      ),
      deviceEvents: this.db.prepare('SELECT * FROM device_events WHERE device_id = ? ORDER BY id DESC LIMIT ?'),
      pruned: this.db.prepare('SELECT * FROM pruned_commands WHERE command_id = ?'),
      prunedByRequest: this.db.prepare('SELECT * FROM pruned_commands WHERE device_id = ? AND request_id = ?'),
      // Never an open command: only rows with terminal_at set are candidates.
      expiredIds: this.db.prepare('SELECT command_id FROM commands WHERE terminal_at IS NOT NULL AND terminal_at < ? ORDER BY terminal_at LIMIT ?'),
      terminalCount: this.db.prepare('SELECT COUNT(*) AS n FROM commands WHERE terminal_at IS NOT NULL'),
      oldestTerminalIds: this.db.prepare('SELECT command_id FROM commands WHERE terminal_at IS NOT NULL ORDER BY terminal_at, rowid LIMIT ?'),
      tombstone: this.db.prepare(
        'INSERT OR REPLACE INTO pruned_commands (command_id, device_id, request_id, action, state, submitted_at, terminal_at, pruned_at) ' +
          // A refusal of the moment executed nothing and leaves no tombstone: its request_id stays free, judged anew.
          `SELECT command_id, device_id, request_id, action, state, submitted_at, terminal_at, ? FROM commands WHERE command_id = ? AND terminal_at IS NOT NULL AND NOT ${MOMENT_SQL}`,
      ),
      dropEvents: this.db.prepare('DELETE FROM command_events WHERE command_id = ?'),
      dropCommand: this.db.prepare('DELETE FROM commands WHERE command_id = ? AND terminal_at IS NOT NULL'),
    };
    this.stmts = stmts;
    // The schema and any migration above are on disk before the host relies on them.
    if (this.walPath !== undefined) this.syncWal();
    for (const r of stmts.open.all() as Row[]) {
      const c = toRecord(r);
      this.remember(c, toValues(c));
    }
  }

  private remember(c: CommandRecord, row: Values): void {
    this.hold(c);
    if (c.terminal_at === null) this.written.set(c.command_id, row);
  }

  /** Serve c from memory while it is open (its latest state, written or staged); forget it once it ends. */
  private hold(c: CommandRecord): void {
    if (c.terminal_at !== null) {
      this.forget(c.command_id);
      return;
    }
    this.openRecs.set(c.command_id, c);
    this.openByReq.set(reqKey(c.device_id, c.request_id), c.command_id);
  }

  private forget(id: string): void {
    const c = this.openRecs.get(id);
    if (!c) return;
    this.openRecs.delete(id);
    this.openByReq.delete(reqKey(c.device_id, c.request_id));
    this.written.delete(id);
  }

  /**
   * UPDATE of just the columns at these positions (and history lines appended, with `history`), prepared
   * once per shape; its parameters are their values, then the history, then the command id.
   */
  private updateOf(cols: number[], history: boolean): Database.Statement {
    // One bit per column position (24 columns), and one for the history.
    let key = history ? 1 : 0;
    for (const i of cols) key += 2 ** i;
    let st = this.narrow.get(key);
    if (!st) {
      const sets = cols.map((i) => `${COLUMNS[i]} = ?`);
      if (history) sets.push("history = coalesce(history, '') || ?");
      st = this.db.prepare(`UPDATE commands SET ${sets.join(', ')} WHERE command_id = ?`);
      this.narrow.set(key, st);
    }
    return st;
  }

  /** Journals written by an earlier version lack newer columns; add them in place. */
  private migrate(): void {
    const have = new Set((this.db.prepare('PRAGMA table_info(commands)').all() as { name: string }[]).map((c) => c.name));
    if (!have.has('position')) this.db.exec('ALTER TABLE commands ADD COLUMN position REAL');
    const dev = new Set((this.db.prepare('PRAGMA table_info(devices)').all() as { name: string }[]).map((c) => c.name));
    if (!dev.has('simulated')) this.db.exec('ALTER TABLE devices ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0');
    if (!have.has('sent_at')) this.db.exec('ALTER TABLE commands ADD COLUMN sent_at INTEGER');
    // History moved from command_events rows (four per command) into the row itself; old rows keep theirs there.
    if (!have.has('history')) this.db.exec('ALTER TABLE commands ADD COLUMN history TEXT');
    // A request_id names at most one command that could have reached a device; the host's refusals
    // of the moment (nothing was sent) may repeat it, so a retry after one can run. Built once the
    // columns it reads exist.
    // One index both finds a request's commands and keeps its one command that could have reached a
    // device unique: that one's third key is '' and a refusal of the moment's is its own command_id.
    // It replaces a plain (device_id, request_id) index and a partial unique one on the same columns,
    // so a submit writes one entry for the request instead of two.
    // request_id leads: the ids the host mints are time-ordered, so their entries go to one end of it
    // (device_id first put each submit on that device's page: ~one page per command of a batch).
    this.db.exec(`CREATE UNIQUE INDEX IF NOT EXISTS commands_request_rid ON commands(request_id, device_id, CASE WHEN ${MOMENT_SQL} THEN command_id ELSE '' END)`);
    this.db.exec('DROP INDEX IF EXISTS commands_request_all');
    this.db.exec('DROP INDEX IF EXISTS commands_request_once');
    // The same index keyed device_id first (one build of this version's work, never released).
    this.db.exec('DROP INDEX IF EXISTS commands_request_key');
  }

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
      // settle() itself waits for the outermost group to end.
      if (!this.defer && this.db.open) this.settle();
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
  settle(): void {
    if (!this.pending || this.grouping) return;
    const after = this.after;
    this.after = [];
    this.pending = false;
    const poisoned = this.poisoned;
    this.poisoned = undefined;
    try {
      if (poisoned) throw new Error('a write of the batch failed: ' + poisoned.message);
      this.flushStaged();
      this.commit();
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
    if (this.walPath === undefined) return this.run(after);
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
    let fd: number;
    try {
      fd = this.wal();
    } catch (e) {
      this.syncing = false;
      return this.syncFailed(e as Error, this.covered.splice(0));
    }
    this.syncAsync(fd, (err) => {
      this.syncing = false;
      const done = this.covered;
      this.covered = [];
      if (this.broken || this.closed) return;
      if (err) return this.syncFailed(err, done);
      this.run(done);
      if (this.commitAfterSync) {
        this.commitAfterSync = false;
        this.settle();
      }
      this.startSync();
    });
  }

  /** The fsync of the WAL on libuv's thread pool (a seam: tests delay or fail it). */
  protected syncAsync(fd: number, done: (err: Error | null) => void): void {
    fdatasync(fd, done);
  }

  /** The same fsync, waited for on this thread (a seam too). */
  protected syncWal(): void {
    fdatasyncSync(this.wal());
  }

  /** A write after a failed fsync or after close(): refused with the reason (a new error, thrown where the write was tried). */
  private refuse(): never {
    throw new Error(this.broken!.message);
  }

  /** A write outside any batch (its own transaction) is on disk when this returns. */
  private durably<T>(f: () => T): T {
    if (this.broken) this.refuse();
    const v = f();
    this.checkpointed();
    if (this.walPath !== undefined) this.syncWal();
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
    const e = new Error(`journal fsync failed (${err.message}); what was committed since the last good sync may not be on disk; nothing of it was sent or answered, and the journal takes no more writes (restart the host)`);
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

  /** After a rollback: the open commands in memory are what is on disk again. */
  private reload(): void {
    this.openRecs.clear();
    this.openByReq.clear();
    this.written.clear();
    this.staged.clear();
    this.stagedClosed.clear();
    this.ended.clear();
    for (const r of this.stmts.open.all() as Row[]) {
      const c = toRecord(r);
      this.remember(c, toValues(c));
    }
  }

  /** Open the batch transaction if none is open; on the real clock schedule its commit. */
  private begin(): void {
    if (this.broken) this.refuse();
    if (this.pending) return;
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
        else this.settle();
      });
    }
  }

  /** One write, atomic on its own: it joins the batch on the real clock or inside a group, else it commits now. */
  private write(f: () => void): void {
    // After a failed fsync both paths refuse: durably() and begin().
    if (!this.defer && !this.grouping) return this.durably(() => this.tx(f));
    this.begin();
    this.rowWrites++;
    // Inside the open batch a write gets no savepoint of its own (they were 30 % of the journal's
    // time per command, measured): a write that fails poisons the batch instead, and settle() rolls
    // the whole batch back as it does a failed COMMIT, so nothing partial is ever committed.
    try {
      f();
    } catch (e) {
      this.poisoned ??= e as Error;
      throw e;
    }
  }

  /** A new command; its history is one event (its state, `note`), or the steps given (a row inserted already past submitted). */
  insert(c: CommandRecord, note: string | null = null, history?: CommandEvent[]): void {
    const id = c.command_id;
    // Caught here rather than by the flush, which would fail the whole batch for it.
    if (this.openRecs.has(id) || this.staged.has(id)) throw new Error(`journal: command ${id} is already recorded`);
    const open = this.openByReq.get(reqKey(c.device_id, c.request_id));
    if (open !== undefined) throw new Error(`journal: request ${c.request_id} of ${c.device_id} is already open as ${open}`);
    const lines = history ? history.map((e) => histLine(e.at, e.state, e.note)).join('') : histLine(c.updated_at, c.state, note);
    this.stage(c, toValues(c), true, lines);
  }

  /** Persist the record; `note` goes to the command's event history when the state changed or a note is given. */
  update(c: CommandRecord, stateChanged: boolean, note: string | null = null): void {
    const row = toValues(c);
    const event = stateChanged || !!note;
    const s = this.staged.get(c.command_id);
    const before = s?.row ?? this.written.get(c.command_id);
    if (!event && before && sameFields(row, before)) return;
    this.stage(c, row, false, event ? histLine(c.updated_at, c.state, note) : '');
  }

  /** Keep c's latest record and row for the flush (merged with what the batch staged of it before). */
  private stage(c: CommandRecord, row: Values, isNew: boolean, history: string): void {
    if (this.broken) this.refuse();
    const rec = copy(c);
    const s = this.staged.get(c.command_id);
    if (s) {
      s.rec = rec;
      s.row = row;
      s.history += history;
    } else this.staged.set(c.command_id, { rec, row, isNew, history });
    this.hold(rec);
    if (rec.terminal_at !== null) this.stagedClosed.add(reqKey(rec.device_id, rec.request_id));
    if (this.defer || this.grouping) return this.begin();
    // Outside a batch (virtual clock, no group) the write commits at once, and a failure is the caller's.
    try {
      this.durably(() => this.tx(() => this.flushStaged()));
    } catch (e) {
      this.poisoned = undefined;
      this.reload();
      throw e;
    }
  }

  /**
   * Write what the batch staged to SQLite (inside its transaction): one INSERT or UPDATE per command,
   * whatever number of steps it took. A failure poisons the batch (settle() rolls it back).
   */
  private flushStaged(): void {
    if (this.staged.size === 0 || this.poisoned) return;
    try {
      for (const [id, s] of this.staged) {
        this.staged.delete(id);
        this.rowWrites++;
        if (s.isNew) this.stmts.insert.run(s.row, s.history);
        else {
          const base = this.written.get(id);
          // An open command we wrote ourselves: only the changed columns (an ack touches 3 of 23); else all of them.
          const cols: number[] = [];
          const args: unknown[] = [];
          for (let i = FIRST_FIELD; i < s.row.length; i++)
            if (!base || s.row[i] !== base[i]) {
              cols.push(i);
              args.push(s.row[i]);
            }
          if (cols.length > 0 || s.history !== '') {
            if (s.history !== '') args.push(s.history);
            args.push(id);
            this.updateOf(cols, s.history !== '').run(args);
          }
        }
        if (s.rec.terminal_at === null) this.written.set(id, s.row);
        else {
          this.written.delete(id);
          this.ended.delete(id);
          this.ended.set(id, s.rec);
          if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
        }
      }
      this.stagedClosed.clear();
    } catch (e) {
      this.poisoned ??= e as Error;
      throw e;
    }
  }

  /** Before a read that SQL answers: what the batch staged goes to SQLite first (same transaction). */
  private sql(): Record<string, Database.Statement> {
    this.flushStaged();
    return this.stmts;
  }

  get(commandId: string): CommandRecord | undefined {
    const o = this.openRecs.get(commandId) ?? this.staged.get(commandId)?.rec ?? this.ended.get(commandId);
    if (o) return copy(o);
    const r = this.stmts.get.get(commandId) as Row | undefined;
    return r ? toRecord(r) : undefined;
  }

  byRequest(deviceId: string, requestId: string): CommandRecord | undefined {
    const key = reqKey(deviceId, requestId);
    const id = this.openByReq.get(key);
    if (id !== undefined) return copy(this.openRecs.get(id)!);
    // Any other command of this request is in SQLite, unless the batch staged one that has ended.
    const st = this.stagedClosed.has(key) ? this.sql() : this.stmts;
    const r = st.byRequest.get(deviceId, requestId) as Row | undefined;
    return r ? toRecord(r) : undefined;
  }

  /** Most recent terminal commands of an action on a device that were not refused, newest first. */
  lastTerminal(deviceId: string, action: string): CommandRecord[] {
    const st = MOTIONS.has(action) ? this.sql().lastMotion : this.sql().lastTerminal;
    return (st.all(deviceId, action) as Row[]).map(toRecord);
  }

  /** Open commands, oldest first (from memory; the same rows as the database, the open batch included). */
  open(): CommandRecord[] {
    return [...this.openRecs.values()].sort((a, b) => a.submitted_at - b.submitted_at).map(copy);
  }

  /** The command's lifecycle steps, oldest first: rows of an earlier version's command_events, then its history, then what the batch staged. */
  events(commandId: string): CommandEvent[] {
    const legacy = this.stmts.events.all(commandId) as CommandEvent[];
    const h = this.stmts.history.get(commandId) as { history: string | null } | undefined;
    return [...legacy, ...parseHistory(h?.history ?? null), ...parseHistory(this.staged.get(commandId)?.history ?? null)];
  }

  device(deviceId: string): DeviceRecord | undefined {
    const r = this.stmts.device.get(deviceId) as Row | undefined;
    return r ? toDevice(r) : undefined;
  }

  devices(): DeviceRecord[] {
    return (this.stmts.devices.all() as Row[]).map(toDevice);
  }

  /** Register (or re-key) a device with its secret and board; `simulated` marks a rig a host run started. */
  provision(deviceId: string, secret: string, board: BoardDef, simulated = false): void {
    this.settle();
    this.durably(() => this.stmts.putDevice.run(deviceId, secret, JSON.stringify(board), simulated ? 1 : 0));
  }

  /** Journal a device event; false when this boot's event was journaled before (a re-send after a reconnect). */
  deviceEvent(e: DeviceEventRecord): boolean {
    let changes = 0;
    this.write(() => (changes = this.stmts.putDeviceEvent.run({ ...e, device_state: JSON.stringify(e.device_state) }).changes));
    return changes === 1;
  }

  /** The device's most recent events, newest first. */
  deviceEvents(deviceId: string, limit: number): DeviceEventRecord[] {
    return (this.stmts.deviceEvents.all(deviceId, limit) as Row[]).map((r) => ({
      device_id: r.device_id as string,
      boot_id: r.boot_id as string,
      event_id: r.event_id as string,
      at: r.at as number,
      kind: r.kind as string,
      ch: (r.ch as number | null) ?? null,
      msg: r.msg as string,
      device_state: JSON.parse(r.device_state as string),
    }));
  }

  seen(deviceId: string, boot: string, at: number): void {
    this.write(() => this.stmts.seen.run(boot, at, deviceId));
  }

  /** Commands newest first, filtered (list_commands, the recent-commands resource, tasks/list). */
  recent(q: CommandQuery = {}): CommandRecord[] {
    const where: string[] = [];
    const args: Record<string, unknown> = {};
    if (q.device_id !== undefined) {
      where.push('device_id = @device_id');
      args.device_id = q.device_id;
    }
    if (q.states?.length) {
      where.push(`state IN (${q.states.map((_, i) => '@s' + i).join(', ')})`);
      q.states.forEach((s, i) => (args['s' + i] = s));
    }
    if (q.actions?.length) {
      where.push(`action IN (${q.actions.map((_, i) => '@a' + i).join(', ')})`);
      q.actions.forEach((a, i) => (args['a' + i] = a));
    }
    if (q.since !== undefined) {
      where.push('submitted_at >= @since');
      args.since = q.since;
    }
    if (q.until !== undefined) {
      where.push('submitted_at <= @until');
      args.until = q.until;
    }
    if (q.open) where.push('terminal_at IS NULL');
    args.limit = q.limit ?? 50;
    const sql = `SELECT * FROM commands ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY submitted_at DESC, rowid DESC LIMIT @limit`;
    this.flushStaged();
    return (this.db.prepare(sql).all(args) as Row[]).map(toRecord);
  }

  /**
   * Remove a device and its secret; its commands stay in the journal as history. Refused while
   * it has commands that are not terminal, since their outcome would have nowhere to go.
   */
  removeDevice(deviceId: string): { ok: true } | { ok: false; reason: string } {
    this.settle();
    if (!this.device(deviceId)) return { ok: false, reason: `no device "${deviceId}" is provisioned (known: ${this.devices().map((d) => d.device_id).join(', ') || 'none'})` };
    const open = this.recent({ device_id: deviceId, open: true, limit: 10 });
    if (open.length)
      return {
        ok: false,
        reason: `device ${deviceId} has ${open.length} open command(s) (${open.map((c) => `${c.command_id} ${c.action} ${c.state}`).join(', ')}); wait for them to end or cancel them first`,
      };
    this.durably(() => this.stmts.removeDevice.run(deviceId));
    return { ok: true };
  }

  /** The tombstone of a pruned command, if retention removed it. */
  pruned(commandId: string): PrunedCommand | undefined {
    return this.stmts.pruned.get(commandId) as PrunedCommand | undefined;
  }

  prunedByRequest(deviceId: string, requestId: string): PrunedCommand | undefined {
    return this.stmts.prunedByRequest.get(deviceId, requestId) as PrunedCommand | undefined;
  }

  /**
   * Retention: replace terminal commands older than maxAgeMs, or beyond the newest maxCommands terminal
   * ones, by tombstones (their events go too). Open commands are never touched. Returns how many went.
   */
  prune(r: Retention, now: number): number {
    this.settle();
    let total = 0;
    const drop = (ids: string[]) =>
      this.durably(this.db.transaction(() => {
        this.rowWrites += ids.length * 2;
        for (const id of ids) {
          this.stmts.tombstone.run(now, id);
          this.stmts.dropEvents.run(id);
          this.stmts.dropCommand.run(id);
          this.ended.delete(id);
        }
      }));
    for (;;) {
      const ids = (this.stmts.expiredIds.all(now - r.maxAgeMs, PRUNE_BATCH) as { command_id: string }[]).map((x) => x.command_id);
      if (ids.length === 0) break;
      drop(ids);
      total += ids.length;
    }
    for (;;) {
      const excess = (this.stmts.terminalCount.get() as { n: number }).n - r.maxCommands;
      if (excess <= 0) break;
      const ids = (this.stmts.oldestTerminalIds.all(Math.min(excess, PRUNE_BATCH)) as { command_id: string }[]).map((x) => x.command_id);
      drop(ids);
      total += ids.length;
    }
    return total;
  }

  close(): void {
    this.settle();
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
  }
}

function toDevice(r: Row): DeviceRecord {
  return {
    device_id: r.device_id as string,
    secret: r.secret as string,
    board: JSON.parse(r.board as string),
    last_boot: (r.last_boot as string | null) ?? null,
    last_seen: (r.last_seen as number | null) ?? null,
    simulated: r.simulated === 1,
  };
}

/** A command record with every field at its initial value (state submitted, nothing known). */
export function blankCommand(): CommandRecord {
  return {
    command_id: '',
    device_id: '',
    request_id: '',
    action: '',
    args: {},
    state: 'submitted',
    accepted: false,
    executed: false,
    verified: false,
    evidence: null,
    error_code: null,
    detail: null,
    boot_id: null,
    submitted_at: 0,
    updated_at: 0,
    terminal_at: null,
    deadline_at: null,
    estimated_ms: 0,
    progress: null,
    position: null,
    device_state: null,
    device_state_at: null,
    sends: 0,
    sent_at: null,
  };
}
