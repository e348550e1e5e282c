// A journal of its own per test for the journal specs (host-journal, host-journal-file), and commands
// to write to it: every field set, or blank. useJournal() registers the per-test setup in the calling
// spec file (or describe block): a SQLite file, or a database of its own in a throwaway PostgreSQL
// (test/helpers/postgres.ts) for the same contract on both backends.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { BoardDef, DeviceState } from '@proofrig/protocol';
import { Journal } from '../../host/src/core/journal/journal.js';
import { blankCommand, type CommandRecord } from '../../host/src/core/journal/records.js';
import { postgresOrNotice, startPostgres, type Postgres } from './postgres.js';

export const board = JSON.parse(readFileSync(new URL('../../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
export const STATE: DeviceState = { up: 42, relays: [{ ch: 1, cmd: true, pin: true, aux: true }] };
export const DAY = 24 * 3600 * 1000;

export let dir: string;
export let path: string;
export let j: Journal;

export let n = 0;
/** A command with every field set to something other than its blank value. */
export function full(o: Partial<CommandRecord> = {}): CommandRecord {
  n++;
  return {
    command_id: 'cmd_' + n,
    device_id: 'rig1',
    request_id: 'req_' + n,
    action: 'stepper.move',
    args: { axis: 'x', mm: 12.5 },
    state: 'running',
    accepted: true,
    executed: true,
    verified: true,
    evidence: 'encoder',
    error_code: 'POSITION_ERROR',
    detail: 'some detail',
    boot_id: 'boot1',
    submitted_at: 1000,
    updated_at: 1500,
    terminal_at: null,
    deadline_at: 9000,
    estimated_ms: 2500,
    progress: 42.5,
    position: 7.25,
    device_state: STATE,
    device_state_at: 1400,
    sends: 2,
    sent_at: 1100,
    ...o,
  };
}
/** A blank command (every nullable field null, every flag false). */
export function blank(o: Partial<CommandRecord> = {}): CommandRecord {
  n++;
  return { ...blankCommand(), command_id: 'cmd_' + n, device_id: 'rig1', request_id: 'req_' + n, action: 'relay.set', args: { ch: 1, on: true }, submitted_at: 1000, updated_at: 1000, ...o };
}
export const reopen = () => {
  j.close();
  j = new Journal(path);
};

/** For a test that replaces the Journal of the setup (a restart, a journal of another kind). */
export function setJournal(x: Journal): void {
  j = x;
}

export type Backend = 'sqlite' | 'postgres';
/** The backends the contract specs run on: PostgreSQL where it is installed (else a one-line notice). */
export const BACKENDS: Backend[] = postgresOrNotice() ? ['sqlite', 'postgres'] : ['sqlite'];
/** The PostgreSQL cluster of the running describe block (postgres backend). */
export let server: Postgres | undefined;

/**
 * Registers the per-test setup (beforeEach) and teardown (afterEach) in the calling spec file or describe
 * block; on PostgreSQL one cluster for the block and a database per test, `path` being its URL.
 */
export function useJournal(backend: Backend = 'sqlite'): void {
  if (backend === 'postgres') {
    beforeAll(async () => {
      server = await startPostgres();
    });
    afterAll(() => {
      server?.stop();
      server = undefined;
    });
  }
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'proofrig-journal-'));
    path = backend === 'postgres' ? await server!.createDatabase() : join(dir, 'journal.db');
    j = new Journal(path);
  });
  afterEach(() => j.close());
}
