// Staging: what the open batch wrote of each command, kept in memory until the batch flushes it to
// SQLite (one INSERT or UPDATE per command, whatever number of steps it took), and the open commands
// served from memory (this process is their only writer), with the row last written for each, so an
// update writes only the columns that changed.
import type Database from 'better-sqlite3';
import { GroupCommit, type JournalOptions } from './commit.js';
import { prepareStatements, type Statements } from './queries.js';
import { COLUMNS, FIRST_FIELD, copy, histLine, reqKey, sameFields, toRecord, toValues, type CommandEvent, type CommandRecord, type Row, type Values } from './records.js';

/** How many of the commands that ended last Journal.get serves from memory. */
const ENDED_KEPT = 1024;

/** A command written in the open batch but not yet to SQLite: its latest record and row, and the history lines it adds. */
interface Staged {
  rec: CommandRecord;
  row: Values;
  /** Not in the database yet: the flush INSERTs it. */
  isNew: boolean;
  history: string;
}

export abstract class Staging extends GroupCommit {
  protected stmts: Statements;
  // Open commands are served from memory (this process is their only writer), with the row last written
  // for each, so an update writes only the columns that changed. Terminal ones are read from disk.
  protected openRecs = new Map<string, CommandRecord>();
  protected openByReq = new Map<string, string>();
  private written = new Map<string, Values>();
  // The commands that ended last (as written, oldest first): whoever waited for one reads its status
  // right after it ends (an MCP call with wait_ms, a poll), which needs no SELECT and JSON.parse then.
  protected ended = new Map<string, CommandRecord>();
  // Write-behind: inside a batch a command's writes are staged here and reach SQLite once, when the batch
  // flushes (before its COMMIT, or before a read that SQL must answer), so a command submitted, acked and
  // answered within one batch is one row write, and its ack and result in the next batch one UPDATE.
  protected staged = new Map<string, Staged>();
  /** Request keys of staged commands that are terminal (no longer in openByReq): SQL answers them only after a flush. */
  protected stagedClosed = new Set<string>();
  /** The UPDATE statement of each shape (the set of columns it sets, and whether it appends history), prepared once. */
  private updateByShape = new Map<number, Database.Statement>();

  constructor(path: string, defer?: (fn: () => void) => void, opts: JournalOptions = {}) {
    super(path, defer, opts);
    this.stmts = prepareStatements(this.db);
    for (const r of this.stmts.open.all() as Row[]) {
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
    let st = this.updateByShape.get(key);
    if (!st) {
      const sets = cols.map((i) => `${COLUMNS[i]} = ?`);
      if (history) sets.push("history = coalesce(history, '') || ?");
      st = this.db.prepare(`UPDATE commands SET ${sets.join(', ')} WHERE command_id = ?`);
      this.updateByShape.set(key, st);
    }
    return st;
  }

  /** After a rollback: the open commands in memory are what is on disk again. */
  protected reload(): void {
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
   * whatever number of steps it took. A failure poisons the batch (commitBatch() rolls it back).
   */
  protected flushStaged(): void {
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
  protected sql(): Statements {
    this.flushStaged();
    return this.stmts;
  }
}
