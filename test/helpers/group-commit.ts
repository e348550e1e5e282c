// Shared by the group-commit specs (journal-group-commit, journal-fsync, journal-commit-order): a
// journal that counts its commits and can be told to fail one, a fresh database path, and what a
// second connection (committed rows only) sees.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { BoardDef } from '@proofrig/protocol';
import { Journal } from '../../host/src/core/journal/journal.js';
import { blankCommand, type CommandRecord } from '../../host/src/core/journal/records.js';

export const board: BoardDef = JSON.parse(readFileSync(new URL('../../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
export const SECRET = 'a'.repeat(64);
export const immediate = (fn: () => void) => void setImmediate(fn);

/** A journal that counts its batch commits and can be told to fail the next one. */
export class TestJournal extends Journal {
  commits = 0;
  failNext = false;
  /** Fail the next commit the way SQLite can on a full disk or an I/O error: the transaction already rolled back. */
  failRolledBackNext = false;
  protected override commit(): void {
    if (this.failRolledBackNext) {
      this.failRolledBackNext = false;
      (this as unknown as { db: Database.Database }).db.exec('ROLLBACK');
      throw new Error('database or disk is full (simulated)');
    }
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk I/O error (simulated)');
    }
    this.commits++;
    super.commit();
  }
}

export const newDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-group-')), 'journal.db');

/** What a second connection (committed rows only) holds for a request id. */
export function onDisk(db: Database.Database, rid: string): string | undefined {
  return (db.prepare('SELECT state FROM commands WHERE request_id = ?').get(rid) as { state: string } | undefined)?.state;
}

export function command(i: number): CommandRecord {
  return { ...blankCommand(), command_id: `cmd_${i}`, device_id: 'dev', request_id: `req_${i}`, action: 'relay.set', args: { ch: 1, on: true }, submitted_at: i, updated_at: i };
}
