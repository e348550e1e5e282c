// Issue 26 item 7: a journal whose files become unwritable under a running host (made immutable with
// chattr +i, a file system gone read-only) ends writes with a clear logged error and a clean exit code,
// never a signal. SQLite maps the -shm file into memory, and a write to a page of that mapping once the
// file is immutable is answered by the kernel with SIGBUS (the host died ~10 s after chattr +i, without
// a word); the journal checks its files before SQLite writes them and, once one refuses, touches SQLite
// no more. Needs a file system that supports the immutable flag and the right to set it (root): elsewhere
// (overlayfs, tmpfs, no CAP_LINUX_IMMUTABLE) these specs are skipped with a notice.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Journal } from '../host/src/core/journal/journal.js';
import { blankCommand, type CommandRecord } from '../host/src/core/journal/records.js';

const BIN = fileURLToPath(new URL('../host/bin/proofrig.js', import.meta.url));
const immediate = (fn: () => void) => void setImmediate(fn);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const chattr = (flag: '+i' | '-i', files: string[]) => spawnSync('chattr', [flag, ...files], { encoding: 'utf8' });
/** Whether this machine lets us make a file in `dir` immutable (and back). */
function immutableWorks(dir: string): boolean {
  const probe = join(dir, 'probe');
  writeFileSync(probe, 'x');
  const r = chattr('+i', [probe]);
  if (r.status !== 0) return false;
  chattr('-i', [probe]);
  return true;
}
const base = mkdtempSync(join(tmpdir(), 'proofrig-unwritable-'));
const CAN = immutableWorks(base);
if (!CAN) console.warn(`journal-unwritable: skipped, chattr +i is not possible here (${base}: not root, or a file system without the immutable flag such as overlayfs or tmpfs)`);

const files = (db: string) => [db, db + '-wal', db + '-shm'];
let made: string[] = [];
afterEach(() => {
  if (made.length) chattr('-i', made);
  made = [];
});
function freeze(db: string): void {
  made = files(db);
  const r = chattr('+i', made);
  if (r.status !== 0) throw new Error('chattr +i failed: ' + r.stderr);
}

let n = 0;
const command = (): CommandRecord => {
  n++;
  return { ...blankCommand(), command_id: `cmd_${n}`, device_id: 'rig1', request_id: `req_${n}`, action: 'relay.set', args: { ch: 1, on: true }, submitted_at: n, updated_at: n };
};

describe.skipIf(!CAN)('a journal whose files become immutable while it runs', () => {
  it('refuses the next write with the file and the reason, fails what waited, tells onUnwritable once, and closes without touching SQLite', async () => {
    const db = join(mkdtempSync(join(base, 'j-')), 'journal.db');
    const j = new Journal(db, immediate);
    const told: Error[] = [];
    j.onUnwritable = (e) => told.push(e);
    j.insert(command());
    await j.flushed();
    freeze(db);
    expect(() => j.insert(command())).toThrow(/journal file .*journal\.db-shm can no longer be written \(EPERM/);
    expect(told).toHaveLength(1);
    expect(told[0].message).toMatch(/takes no more writes/);
    // Every later write is refused with the same reason; nothing is pending.
    expect(() => j.seen('rig1', 'b', 1)).toThrow(/can no longer be written/);
    expect(j.uncommitted).toBe(false);
    await sleep(50);
    expect(told).toHaveLength(1);
    j.close();
  });

  it('an idle journal notices within a second, before anything is written', async () => {
    const db = join(mkdtempSync(join(base, 'j-')), 'journal.db');
    const j = new Journal(db, immediate);
    const told: Error[] = [];
    j.onUnwritable = (e) => told.push(e);
    j.insert(command());
    await j.flushed();
    freeze(db);
    const t0 = Date.now();
    while (told.length === 0 && Date.now() - t0 < 3000) await sleep(20);
    expect(told).toHaveLength(1);
    expect(Date.now() - t0).toBeLessThan(1500);
    j.close();
  });

  it('proofrig serve with a simulated rig: the journal made immutable ends it with a logged journal_unwritable and exit code 3, never a signal', async () => {
    const db = join(mkdtempSync(join(base, 's-')), 'journal.db');
    const p = spawn(process.execPath, [BIN, 'serve', '--http', '0', '--db', db, '--sim', 'relay-rig-4ch', '--heartbeat-ms', '200'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('exit', (code, signal) => r({ code, signal })));
    try {
      const t0 = Date.now();
      while (!err.includes('"evt":"device_online"') && Date.now() - t0 < 20_000) await sleep(50);
      expect(err).toContain('"evt":"device_online"');
      // A few heartbeats' worth of writes, then the files refuse them.
      await sleep(500);
      freeze(db);
      const end = await Promise.race([exited, sleep(15_000).then(() => undefined)]);
      expect(end).toEqual({ code: 3, signal: null });
      const lines = err
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { evt?: string; level: number; err?: string; msg: string });
      const fatal = lines.filter((l) => l.evt === 'journal_unwritable');
      expect(fatal).toHaveLength(1);
      expect(fatal[0]).toMatchObject({ level: 60, msg: 'journal files can no longer be written; the host takes no more commands and must stop' });
      expect(fatal[0].err).toMatch(/can no longer be written \(EPERM/);
    } finally {
      p.kill('SIGKILL');
    }
  }, 40_000);
});
