// The persistent journal: every command with its lifecycle, and the provisioned devices. Its parts:
// records.ts (the records and the column table), schema.ts (tables, indexes, migrations), commit.ts
// (group commit and the fsync: nobody hears of a write before it is on disk), staging.ts (a batch's
// writes held in memory until it flushes), queries.ts (the SQL reads) and retention.ts (pruning).
// Writes are group-committed; reads see the host's own uncommitted batch, and whatever tells anyone
// outside about a write waits until it is on disk (afterCommit, flushed).
import type { BoardDef } from '@proofrig/protocol';
import { recentQuery } from './queries.js';
import { copy, parseHistory, reqKey, toDevice, toDeviceEvent, toRecord, type CommandEvent, type CommandQuery, type CommandRecord, type DeviceEventRecord, type DeviceRecord, type PrunedCommand, type Row } from './records.js';
import { expire, tombstone, type Retention } from './retention.js';
import { MOTIONS } from './schema.js';
import { Staging } from './staging.js';

export class Journal extends Staging {
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
    this.commitBatch();
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
    return (this.stmts.deviceEvents.all(deviceId, limit) as Row[]).map(toDeviceEvent);
  }

  seen(deviceId: string, boot: string, at: number): void {
    this.write(() => this.stmts.seen.run(boot, at, deviceId));
  }

  /** Commands newest first, filtered (list_commands, the recent-commands resource, tasks/list). */
  recent(q: CommandQuery = {}): CommandRecord[] {
    const { sql, args } = recentQuery(q);
    this.flushStaged();
    return (this.db.prepare(sql).all(args) as Row[]).map(toRecord);
  }

  /**
   * Remove a device and its secret; its commands stay in the journal as history. Refused while
   * it has commands that are not terminal, since their outcome would have nowhere to go.
   */
  removeDevice(deviceId: string): { ok: true } | { ok: false; reason: string } {
    this.commitBatch();
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
    this.commitBatch();
    const drop = (ids: string[]) =>
      this.durably(this.db.transaction(() => {
        this.rowWrites += ids.length * 2;
        for (const id of ids) {
          tombstone(this.stmts, id, now);
          this.ended.delete(id);
        }
      }));
    return expire(this.stmts, r, now, drop);
  }
}
