// The journal's SQL reads and the device writes, prepared once per connection: the lookups the host
// core decides with (a command, a request's command, the last motion of an axis, the open commands),
// devices and their events, and the filtered list behind list_commands.
import type Database from 'better-sqlite3';
import { COLUMNS, type CommandQuery } from './records.js';
import { MOMENT_SQL, MOTION_END_SQL } from './schema.js';

export type Statements = ReturnType<typeof prepareStatements>;

export function prepareStatements(db: Database.Database) {
  const cols = COLUMNS.join(', ') + ', history';
  const vals = COLUMNS.map(() => '?').join(', ') + ', ?';
  return {
    insert: db.prepare(`INSERT INTO commands (${cols}) VALUES (${vals})`),
    get: db.prepare('SELECT * FROM commands WHERE command_id = ?'),
    // The command that could have reached the device, else the newest refusal of the moment.
    byRequest: db.prepare(`SELECT * FROM commands WHERE device_id = ? AND request_id = ? ORDER BY ${MOMENT_SQL}, rowid DESC LIMIT 1`),
    lastTerminal: db.prepare(
      // Refusals never reached the axis: they are not its last motion.
      "SELECT * FROM commands WHERE device_id = ? AND action = ? AND terminal_at IS NOT NULL AND state != 'rejected' ORDER BY terminal_at DESC, rowid DESC LIMIT 50",
    ),
    // The same for a motion (asked at every motion submit), through commands_motion_end: the
    // query repeats the index's own WHERE terms, which is what lets SQLite use a partial index.
    lastMotion: db.prepare(
      `SELECT * FROM commands WHERE device_id = ? AND action = ? AND ${MOTION_END_SQL} AND state != 'rejected' ORDER BY terminal_at DESC, rowid DESC LIMIT 50`,
    ),
    open: db.prepare('SELECT * FROM commands WHERE terminal_at IS NULL ORDER BY submitted_at'),
    events: db.prepare('SELECT at, state, note FROM command_events WHERE command_id = ? ORDER BY id'),
    history: db.prepare('SELECT history FROM commands WHERE command_id = ?'),
    device: db.prepare('SELECT * FROM devices WHERE device_id = ?'),
    devices: db.prepare('SELECT * FROM devices ORDER BY device_id'),
    putDevice: db.prepare(
      'INSERT INTO devices (device_id, secret, board, simulated) VALUES (?, ?, ?, ?) ON CONFLICT(device_id) DO UPDATE SET secret = excluded.secret, board = excluded.board, simulated = excluded.simulated',
    ),
    removeDevice: db.prepare('DELETE FROM devices WHERE device_id = ?'),
    seen: db.prepare('UPDATE devices SET last_boot = ?, last_seen = ? WHERE device_id = ?'),
    putDeviceEvent: db.prepare(
      'INSERT OR IGNORE INTO device_events (device_id, boot_id, event_id, at, kind, ch, msg, device_state) VALUES (@device_id, @boot_id, @event_id, @at, @kind, @ch, @msg, @device_state)',
    ),
    deviceEvents: db.prepare('SELECT * FROM device_events WHERE device_id = ? ORDER BY id DESC LIMIT ?'),
    pruned: db.prepare('SELECT * FROM pruned_commands WHERE command_id = ?'),
    prunedByRequest: db.prepare('SELECT * FROM pruned_commands WHERE device_id = ? AND request_id = ?'),
    // Retention (retention.ts). Never an open command: only rows with terminal_at set are candidates.
    expiredIds: db.prepare('SELECT command_id FROM commands WHERE terminal_at IS NOT NULL AND terminal_at < ? ORDER BY terminal_at LIMIT ?'),
    terminalCount: db.prepare('SELECT COUNT(*) AS n FROM commands WHERE terminal_at IS NOT NULL'),
    oldestTerminalIds: db.prepare('SELECT command_id FROM commands WHERE terminal_at IS NOT NULL ORDER BY terminal_at, rowid LIMIT ?'),
    tombstone: db.prepare(
      'INSERT OR REPLACE INTO pruned_commands (command_id, device_id, request_id, action, state, submitted_at, terminal_at, pruned_at) ' +
        // A refusal of the moment executed nothing and leaves no tombstone: its request_id stays free, judged anew.
        `SELECT command_id, device_id, request_id, action, state, submitted_at, terminal_at, ? FROM commands WHERE command_id = ? AND terminal_at IS NOT NULL AND NOT ${MOMENT_SQL}`,
    ),
    dropEvents: db.prepare('DELETE FROM command_events WHERE command_id = ?'),
    dropCommand: db.prepare('DELETE FROM commands WHERE command_id = ? AND terminal_at IS NOT NULL'),
  };
}

/** The SQL and named parameters of recent(): commands newest first, filtered. */
export function recentQuery(q: CommandQuery): { sql: string; args: Record<string, unknown> } {
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
  return { sql, args };
}
