// The persistent journal: every command with its lifecycle, and the provisioned devices.
// Writes are group-committed (see settle); reads see the host's own uncommitted batch, and
// whatever tells anyone outside about a write waits for its commit (afterCommit, flushed).
import { chmodSync, existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { prepareStateDir, privateFile, stateDir } from '../state-dir.js';
import type { BoardDef, DeviceState, ErrorCode, Evidence, LifecycleState } from '@proofrig/protocol';

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
  sent_at INTEGER
);
CREATE INDEX IF NOT EXISTS commands_request_all ON commands(device_id, request_id);
-- Open commands in submission order (the restart's reload). Keyed on a column that never changes, so
-- a state change does not touch it: an entry is written at insert and removed when the command ends.
CREATE INDEX IF NOT EXISTS commands_open_at ON commands(submitted_at) WHERE terminal_at IS NULL;
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

function toRow(c: CommandRecord): Row {
  return {
    ...c,
    args: JSON.stringify(c.args),
    accepted: c.accepted ? 1 : 0,
    executed: c.executed ? 1 : 0,
    verified: c.verified ? 1 : 0,
    device_state: c.device_state ? JSON.stringify(c.device_state) : null,
  };
}

/** A shallow copy: callers change top-level fields and then call update(); the journal's own copy must not move with them. */
const copy = (c: CommandRecord): CommandRecord => ({ ...c });
const reqKey = (deviceId: string, requestId: string) => deviceId + '\u0000' + requestId;
/** The columns of a command row, and those an UPDATE may set (all but the key). */
const COLUMNS = Object.keys(toRow(blankCommand()));
const FIELDS = COLUMNS.filter((k) => k !== 'command_id');
const DONE = Promise.resolve();

export class Journal {
  private db: Database.Database;
  private stmts: Record<string, Database.Statement>;
  // Open commands are served from memory (this process is their only writer), with the row last written
  // for each, so an update writes only the columns that changed. Terminal ones are read from disk.
  private openRecs = new Map<string, CommandRecord>();
  private openByReq = new Map<string, string>();
  private written = new Map<string, Row>();
  private narrow = new Map<string, Database.Statement>();
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
  private after: { ok: () => void; fail?: (e: Error) => void }[] = [];
  /** Called after a batch failed to commit and was rolled back (the host re-arms what it lost). */
  onRollback: ((e: Error) => void) | undefined;
  /** An afterCommit callback threw while the deferred commit ran it (the others still run). */
  onCallbackError: ((e: unknown) => void) | undefined;

  /**
   * `path` is a file, or ':memory:' for tests that do not restart. `defer` schedules the batch commit
   * (the host passes setImmediate on the real clock); without it a group commits when it ends.
   */
  constructor(path: string, private readonly defer?: (fn: () => void) => void) {
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
    // FULL: every commit is fsynced (WAL included) before the host acts on it, so a power loss or OS
    // crash cannot roll back a command the host already sent. Cost measured in the README.
    this.db.pragma('synchronous = FULL');
    // Earlier journals made (device_id, request_id) unique outright (commands_request), then except
    // DEVICE_OFFLINE alone (commands_request_sent); both kept a retry after a refusal of the moment from running.
    this.db.exec('DROP INDEX IF EXISTS commands_request');
    this.db.exec('DROP INDEX IF EXISTS commands_request_sent');
    // And indexed open commands by state, which every state change rewrote (commands_open_at replaces it).
    this.db.exec('DROP INDEX IF EXISTS commands_open');
    this.db.exec(SCHEMA);
    this.migrate();
    const cols = COLUMNS.join(', ');
    const vals = COLUMNS.map((k) => '@' + k).join(', ');
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
      open: this.db.prepare('SELECT * FROM commands WHERE terminal_at IS NULL ORDER BY submitted_at'),
      event: this.db.prepare('INSERT INTO command_events (command_id, at, state, note) VALUES (?, ?, ?, ?)'),
      events: this.db.prepare('SELECT at, state, note FROM command_events WHERE command_id = ? ORDER BY id'),
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
          'SELECT command_id, device_id, request_id, action, state, submitted_at, terminal_at, ? FROM commands WHERE command_id = ? AND terminal_at IS NOT NULL',
      ),
      dropEvents: this.db.prepare('DELETE FROM command_events WHERE command_id = ?'),
      dropCommand: this.db.prepare('DELETE FROM commands WHERE command_id = ? AND terminal_at IS NOT NULL'),
    };
    this.stmts = stmts;
    for (const r of stmts.open.all() as Row[]) {
      const c = toRecord(r);
      this.remember(c, toRow(c));
    }
  }

  private remember(c: CommandRecord, row: Row): void {
    if (c.terminal_at !== null) {
      this.forget(c.command_id);
      return;
    }
    this.openRecs.set(c.command_id, copy(c));
    this.openByReq.set(reqKey(c.device_id, c.request_id), c.command_id);
    this.written.set(c.command_id, row);
  }

  private forget(id: string): void {
    const c = this.openRecs.get(id);
    if (!c) return;
    this.openRecs.delete(id);
    this.openByReq.delete(reqKey(c.device_id, c.request_id));
    this.written.delete(id);
  }

  /** UPDATE of just these columns, prepared once per column set. */
  private updateOf(cols: string[]): Database.Statement {
    const key = cols.join(',');
    let st = this.narrow.get(key);
    if (!st) {
      st = this.db.prepare(`UPDATE commands SET ${cols.map((k) => `${k} = @${k}`).join(', ')} WHERE command_id = @command_id`);
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
    // A request_id names at most one command that could have reached a device; the host's refusals
    // of the moment (nothing was sent) may repeat it, so a retry after one can run. Built once the
    // columns it reads exist.
    this.db.exec(`CREATE UNIQUE INDEX IF NOT EXISTS commands_request_once ON commands(device_id, request_id) WHERE NOT ${MOMENT_SQL}`);
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

  /** fn runs once everything written so far is on disk: now, or right after the batch commits (never if it fails: then `fail`). */
  afterCommit(fn: () => void, fail?: (e: Error) => void): void {
    if (this.pending) this.after.push({ ok: fn, fail });
    else fn();
  }

  /** Resolves once everything written so far is on disk; rejects if the batch holding it failed to commit. */
  flushed(): Promise<void> {
    if (!this.pending) return DONE;
    return new Promise((resolve, reject) => this.after.push({ ok: resolve, fail: reject }));
  }

  /** Writes waiting in the open batch (not on disk yet). */
  get uncommitted(): boolean {
    return this.pending;
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
      this.commit();
    } catch (err) {
      const e = new Error(`journal commit failed (${(err as Error)?.message ?? String(err)}); nothing of it was sent or answered`);
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.reload();
      for (const a of after) a.fail?.(e);
      this.onRollback?.(e);
      return;
    }
    for (const a of after) {
      if (!this.defer) a.ok();
      else
        try {
          a.ok();
        } catch (e) {
          // One failing listener must not keep the other commands' frames and answers back.
          this.onCallbackError?.(e);
        }
    }
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
    for (const r of this.stmts.open.all() as Row[]) {
      const c = toRecord(r);
      this.remember(c, toRow(c));
    }
  }

  /** Open the batch transaction if none is open; on the real clock schedule its commit. */
  private begin(): void {
    if (this.pending) return;
    this.db.exec('BEGIN');
    this.pending = true;
    if (this.defer && !this.scheduled) {
      this.scheduled = true;
      this.defer(() => {
        this.scheduled = false;
        if (this.db.open) this.settle();
      });
    }
  }

  /** One write, atomic on its own: it joins the batch on the real clock or inside a group, else it commits now. */
  private write(f: () => void): void {
    if (!this.defer && !this.grouping) return this.tx(f);
    this.begin();
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
    const row = toRow(c);
    this.write(() => {
      this.stmts.insert.run(row);
      if (!history) this.stmts.event.run(c.command_id, c.updated_at, c.state, note);
      else for (const e of history) this.stmts.event.run(c.command_id, e.at, e.state, e.note);
    });
    this.remember(c, row);
  }

  /** Persist the record; `note` goes to the command's event history when the state changed or a note is given. */
  update(c: CommandRecord, stateChanged: boolean, note: string | null = null): void {
    const row = toRow(c);
    const event = stateChanged || !!note;
    const before = this.written.get(c.command_id);
    // An open command we wrote ourselves: only the changed columns (an ack touches 3 of 23); else all of them.
    const cols = before ? FIELDS.filter((k) => row[k] !== before[k]) : FIELDS;
    if (cols.length === 0 && !event) return;
    this.write(() => {
      if (cols.length > 0) {
        const args: Row = { command_id: c.command_id };
        for (const k of cols) args[k] = row[k];
        this.updateOf(cols).run(args);
      }
      if (event) this.stmts.event.run(c.command_id, c.updated_at, c.state, note);
    });
    this.remember(c, row);
  }

  get(commandId: string): CommandRecord | undefined {
    const o = this.openRecs.get(commandId);
    if (o) return copy(o);
    const r = this.stmts.get.get(commandId) as Row | undefined;
    return r ? toRecord(r) : undefined;
  }

  byRequest(deviceId: string, requestId: string): CommandRecord | undefined {
    const id = this.openByReq.get(reqKey(deviceId, requestId));
    if (id !== undefined) return copy(this.openRecs.get(id)!);
    const r = this.stmts.byRequest.get(deviceId, requestId) as Row | undefined;
    return r ? toRecord(r) : undefined;
  }

  /** Most recent terminal commands of an action on a device that were not refused, newest first. */
  lastTerminal(deviceId: string, action: string): CommandRecord[] {
    return (this.stmts.lastTerminal.all(deviceId, action) as Row[]).map(toRecord);
  }

  /** Open commands, oldest first (from memory; the same rows as the database, the open batch included). */
  open(): CommandRecord[] {
    return [...this.openRecs.values()].sort((a, b) => a.submitted_at - b.submitted_at).map(copy);
  }

  events(commandId: string): CommandEvent[] {
    return this.stmts.events.all(commandId) as CommandEvent[];
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
    this.stmts.putDevice.run(deviceId, secret, JSON.stringify(board), simulated ? 1 : 0);
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
    this.db.prepare('DELETE FROM devices WHERE device_id = ?').run(deviceId);
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
      this.db.transaction(() => {
        for (const id of ids) {
          this.stmts.tombstone.run(now, id);
          this.stmts.dropEvents.run(id);
          this.stmts.dropCommand.run(id);
        }
      })();
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
