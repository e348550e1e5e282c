// The journal's tables and indexes, and the migrations of journals written by earlier versions.
// The commands table is built from the column table (records.ts); two indexes are built from the
// lists below, which the queries repeat (queries.ts) so that SQLite uses them.
import type Database from 'better-sqlite3';
import { COMMAND_COLUMNS, type CommandRecord } from './records.js';
import { MOTION_ACTIONS } from '@proofrig/protocol/kinds';
import { momentCodes, type ErrorCode } from '@proofrig/protocol';

/**
 * The host's refusals of the moment (the codes marked `moment` in the protocol's error table,
 * @proofrig/protocol codes.ts): decided before anything was sent, for a reason that passes. They
 * are not the request's answer, so a retry with the same request_id is judged anew. A refusal the
 * device made (sent_at set) is its answer and dedupes like any result. The index below is built
 * from this list: changing it needs a new index name (the old one is dropped in openSchema).
 */
export const MOMENT_REFUSALS: readonly ErrorCode[] = momentCodes();
export const MOMENT_SQL = `(state = 'rejected' AND sent_at IS NULL AND error_code IN (${MOMENT_REFUSALS.map((c) => `'${c}'`).join(', ')}))`;
const MOMENT = new Set<string>(MOMENT_REFUSALS);
/**
 * Ended motion commands: the rows commands_motion_end holds (the last motion of an axis decides whether
 * it may move). The index is built from this list: changing it needs a new index name.
 */
export const MOTIONS = new Set<string>(MOTION_ACTIONS);
export const MOTION_END_SQL = `terminal_at IS NOT NULL AND action IN (${MOTION_ACTIONS.map((a) => `'${a}'`).join(', ')})`;
export function momentRefusal(c: CommandRecord): boolean {
  return c.state === 'rejected' && c.sent_at === null && MOMENT.has(c.error_code!);
}

/** The commands table: the column table's columns, then the history (JSON lines, see histLine). */
const COMMANDS_TABLE = `CREATE TABLE IF NOT EXISTS commands (
${Object.entries(COMMAND_COLUMNS)
  .map(([name, decl]) => `  ${name} ${decl},\n`)
  .join('')}  history TEXT
);`;

const SCHEMA = `
${COMMANDS_TABLE}
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

/** Create what is missing of the schema and bring a journal of an earlier version up to this one. */
export function openSchema(db: Database.Database): void {
  // Earlier journals made (device_id, request_id) unique outright (commands_request), then except
  // DEVICE_OFFLINE alone (commands_request_sent); both kept a retry after a refusal of the moment from running.
  db.exec('DROP INDEX IF EXISTS commands_request');
  db.exec('DROP INDEX IF EXISTS commands_request_sent');
  // And indexed open commands by state, which every state change rewrote (commands_open_at replaces it).
  db.exec('DROP INDEX IF EXISTS commands_open');
  db.exec(SCHEMA);
  migrate(db);
}

/** Journals written by an earlier version lack newer columns; add them in place. */
function migrate(db: Database.Database): void {
  const have = new Set((db.prepare('PRAGMA table_info(commands)').all() as { name: string }[]).map((c) => c.name));
  if (!have.has('position')) db.exec('ALTER TABLE commands ADD COLUMN position REAL');
  const dev = new Set((db.prepare('PRAGMA table_info(devices)').all() as { name: string }[]).map((c) => c.name));
  if (!dev.has('simulated')) db.exec('ALTER TABLE devices ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0');
  if (!have.has('sent_at')) db.exec('ALTER TABLE commands ADD COLUMN sent_at INTEGER');
  // History moved from command_events rows (four per command) into the row itself; old rows keep theirs there.
  if (!have.has('history')) db.exec('ALTER TABLE commands ADD COLUMN history TEXT');
  // A request_id names at most one command that could have reached a device; the host's refusals
  // of the moment (nothing was sent) may repeat it, so a retry after one can run. Built once the
  // columns it reads exist.
  // One index both finds a request's commands and keeps its one command that could have reached a
  // device unique: that one's third key is '' and a refusal of the moment's is its own command_id.
  // It replaces a plain (device_id, request_id) index and a partial unique one on the same columns,
  // so a submit writes one entry for the request instead of two.
  // request_id leads: the ids the host mints are time-ordered, so their entries go to one end of it
  // (device_id first put each submit on that device's page: ~one page per command of a batch).
  db.exec(`CREATE UNIQUE INDEX IF NOT EXISTS commands_request_rid ON commands(request_id, device_id, CASE WHEN ${MOMENT_SQL} THEN command_id ELSE '' END)`);
  db.exec('DROP INDEX IF EXISTS commands_request_all');
  db.exec('DROP INDEX IF EXISTS commands_request_once');
  // The same index keyed device_id first (one build of this version's work, never released).
  db.exec('DROP INDEX IF EXISTS commands_request_key');
}
