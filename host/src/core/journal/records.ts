// What the journal holds, as the host sees it (the records) and as SQLite stores it (the columns):
// the column table of a command row, from which the commands table (schema.ts) and the order of
// toValues are built, and the conversions between a row and a record.
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

export interface CommandEvent {
  at: number;
  state: LifecycleState;
  note: string | null;
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

/**
 * The column table of a command row: each field of CommandRecord, in its order, with its SQL
 * declaration (JSON fields are TEXT, flags INTEGER 0/1). The commands table is built from it, the
 * statements bind and select in its order, and toValues/toRecord below follow it. Typed as the
 * record, so a field added to it and not here fails to compile.
 */
export const COMMAND_COLUMNS: { readonly [K in keyof CommandRecord]: string } = {
  command_id: 'TEXT PRIMARY KEY',
  device_id: 'TEXT NOT NULL',
  request_id: 'TEXT NOT NULL',
  action: 'TEXT NOT NULL',
  args: 'TEXT NOT NULL',
  state: 'TEXT NOT NULL',
  accepted: 'INTEGER NOT NULL',
  executed: 'INTEGER NOT NULL',
  verified: 'INTEGER NOT NULL',
  evidence: 'TEXT',
  error_code: 'TEXT',
  detail: 'TEXT',
  boot_id: 'TEXT',
  submitted_at: 'INTEGER NOT NULL',
  updated_at: 'INTEGER NOT NULL',
  terminal_at: 'INTEGER',
  deadline_at: 'INTEGER',
  estimated_ms: 'INTEGER NOT NULL',
  progress: 'REAL',
  position: 'REAL',
  device_state: 'TEXT',
  device_state_at: 'INTEGER',
  sends: 'INTEGER NOT NULL DEFAULT 0',
  sent_at: 'INTEGER',
};

/** The columns of a command row, in the order of CommandRecord's fields, which toValues follows. */
export const COLUMNS = Object.keys(COMMAND_COLUMNS) as (keyof CommandRecord)[];
/** Positions of the columns an UPDATE may set: all but the key (position 0). */
export const FIRST_FIELD = 1;

export type Row = Record<string, unknown>;

export function toRecord(r: Row): CommandRecord {
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

/**
 * A command's column values in COLUMNS order, bound as positional parameters: a named binding looks
 * every one of the 24 names up on an object, and an UPDATE's arguments built by name made objects with
 * keys added one by one (a large share of the journal's time per command; docs/performance.md).
 */
export type Values = unknown[];
export function toValues(c: CommandRecord): Values {
  return [
    c.command_id, c.device_id, c.request_id, c.action, JSON.stringify(c.args), c.state,
    c.accepted ? 1 : 0, c.executed ? 1 : 0, c.verified ? 1 : 0, c.evidence, c.error_code, c.detail,
    c.boot_id, c.submitted_at, c.updated_at, c.terminal_at, c.deadline_at, c.estimated_ms,
    c.progress, c.position, c.device_state ? JSON.stringify(c.device_state) : null, c.device_state_at, c.sends, c.sent_at,
  ];
}

/** Whether two rows of one command hold the same values in every column an UPDATE may set. */
export function sameFields(a: Values, b: Values): boolean {
  for (let i = FIRST_FIELD; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A shallow copy: callers change top-level fields and then call update(); the journal's own copy must not move with them.
 * Field by field rather than `{ ...c }`: one object shape for every copy. Five copies a command at full load; with
 * the spread they were the journal's largest JS cost (docs/performance.md). Typed as the record, so a field added
 * to it and not here fails to compile.
 */
export const copy = (c: CommandRecord): CommandRecord => ({
  command_id: c.command_id, device_id: c.device_id, request_id: c.request_id, action: c.action, args: c.args, state: c.state,
  accepted: c.accepted, executed: c.executed, verified: c.verified, evidence: c.evidence, error_code: c.error_code, detail: c.detail,
  boot_id: c.boot_id, submitted_at: c.submitted_at, updated_at: c.updated_at, terminal_at: c.terminal_at, deadline_at: c.deadline_at,
  estimated_ms: c.estimated_ms, progress: c.progress, position: c.position, device_state: c.device_state,
  device_state_at: c.device_state_at, sends: c.sends, sent_at: c.sent_at,
});
export const reqKey = (deviceId: string, requestId: string) => deviceId + '\u0000' + requestId;

/** One step of a command's history as it is stored: a JSON line appended to commands.history. */
// Written as JSON.stringify([at, state, note]) would, by hand (three lines a command at full load): a state
// is one of the lifecycle names (no character to escape) and `at` a finite number.
export const histLine = (at: number, state: LifecycleState, note: string | null) => '[' + at + ',"' + state + '",' + (note === null ? 'null' : JSON.stringify(note)) + ']\n';
export function parseHistory(text: string | null): CommandEvent[] {
  if (!text) return [];
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [at, state, note] = JSON.parse(l) as [number, LifecycleState, string | null];
      return { at, state, note };
    });
}

export function toDevice(r: Row): DeviceRecord {
  return {
    device_id: r.device_id as string,
    secret: r.secret as string,
    board: JSON.parse(r.board as string),
    last_boot: (r.last_boot as string | null) ?? null,
    last_seen: (r.last_seen as number | null) ?? null,
    simulated: r.simulated === 1,
  };
}

export function toDeviceEvent(r: Row): DeviceEventRecord {
  return {
    device_id: r.device_id as string,
    boot_id: r.boot_id as string,
    event_id: r.event_id as string,
    at: r.at as number,
    kind: r.kind as string,
    ch: (r.ch as number | null) ?? null,
    msg: r.msg as string,
    device_state: JSON.parse(r.device_state as string),
  };
}
