// The journal on PostgreSQL against the journal on a SQLite file, driven as the host drives it on the real
// clock (writes of a turn share one batch; whoever is told waits for flushed()):
// - commit latency: one command at a time (its submitted+sent row), from the write to flushed() resolving
//   (SQLite: COMMIT + fdatasync of the WAL; PostgreSQL: COMMIT in the working copy + one PostgreSQL
//   transaction of the changed rows), p50 and p99;
// - commands/s with B commands in flight: each turn submits B commands and ends the B submitted the turn
//   before, then waits for flushed() (one batch per turn on both).
// Run: node bench/dist/journal-pg.js --pg postgres://USER:PASS@HOST:PORT/DB (a database of its own: the
// bench empties it first), after `tsup --config bench/tsup.config.ts`. [--quick] runs fewer rounds.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { BoardDef } from '@proofrig/protocol';
import { Journal, blankCommand, type CommandRecord } from '@proofrig/host/core';
import { RELAY_BOARD, quick, tmpDb } from './harness.js';

const B = 100;
const defer = (fn: () => void) => void setImmediate(fn);
const state = { up: 1, relays: [1, 2, 3, 4].map((ch) => ({ ch, cmd: true, pin: true, aux: null })) };

function fresh(i: number): CommandRecord {
  return { ...blankCommand(), command_id: `cmd_${i}`, device_id: 'dev', request_id: `req_${i}`, action: 'relay.set', args: { ch: 3, on: true }, state: 'sent', submitted_at: i, updated_at: i, sent_at: i, sends: 1, boot_id: 'b', estimated_ms: 100, deadline_at: i + 1000 };
}
const ended = (c: CommandRecord): CommandRecord => ({ ...c, state: 'completed', executed: true, verified: true, evidence: 'pin_readback', terminal_at: c.submitted_at + 5, updated_at: c.submitted_at + 5, device_state: state, device_state_at: c.submitted_at + 5 });
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

async function measure(db: string): Promise<{ p50: number; p99: number; perSecond: number }> {
  const j = new Journal(db, defer);
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  j.provision('dev', 'secret', board);
  let i = 0;
  const lat: number[] = [];
  for (let k = 0; k < (quick ? 100 : 500); k++) {
    const t0 = performance.now();
    j.insert(fresh(++i), null, [
      { at: i, state: 'submitted', note: null },
      { at: i, state: 'sent', note: null },
    ]);
    await j.flushed();
    lat.push(performance.now() - t0);
    j.update(ended(fresh(i)), true);
    await j.flushed();
  }
  const rounds = quick ? 20 : 100;
  let before: CommandRecord[] = [];
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    const now: CommandRecord[] = [];
    for (let b = 0; b < B; b++) {
      const c = fresh(++i);
      j.insert(c, null, [{ at: i, state: 'sent', note: null }]);
      now.push(c);
    }
    for (const c of before) j.update(ended(c), true);
    before = now;
    await j.flushed();
  }
  const perSecond = (rounds * B) / ((performance.now() - t0) / 1000);
  j.close();
  return { p50: pct(lat, 50), p99: pct(lat, 99), perSecond };
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--pg');
  const url = at > 0 ? process.argv[at + 1] : process.env.PROOFRIG_BENCH_PG;
  if (!url) throw new Error('give the bench a PostgreSQL database of its own: --pg postgres://USER:PASS@HOST:PORT/DB (it is emptied first)');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('DROP TABLE IF EXISTS commands, command_events, device_events, devices, pruned_commands, proofrig_schema');
  const settings = (await c.query("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method')")).rows;
  await c.end();
  const sqlite = await measure(tmpDb());
  const postgres = await measure(url);
  const f = (x: number) => x.toFixed(2);
  console.log(`PostgreSQL settings: ${settings.map((s) => `${s.name}=${s.setting}`).join(', ')}`);
  console.log(`backend     commit p50 ms  p99 ms  commands/s (${B} in flight)`);
  for (const [name, r] of [['sqlite', sqlite], ['postgres', postgres]] as const) console.log(`${name.padEnd(10)}  ${f(r.p50).padStart(12)}  ${f(r.p99).padStart(6)}  ${r.perSecond.toFixed(0).padStart(10)}`);
  console.log(`postgres/sqlite: latency p50 ${(postgres.p50 / sqlite.p50).toFixed(2)}x, commands/s ${(postgres.perSecond / sqlite.perSecond).toFixed(2)}x`);
}

await main();
