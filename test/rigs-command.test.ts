// `proofrig rigs`: many simulated rigs in one process, outside the host, from a count or a list.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEVICE_PATH } from '@proofrig/protocol';
import { serve, type Running } from '../host/src/serve.js';
import { runRigsCommand } from '../host/src/cli/rigs.js';
import { RELAY_BOARD, until } from './helpers/e2e.js';

let running: Running | undefined;
let stop: (() => void) | undefined;
let done: Promise<number> | undefined;
afterEach(async () => {
  stop?.();
  await done;
  await running?.close();
  running = stop = done = undefined;
});

const sink = () => {
  const out: string[] = [];
  return { out, w: { write: (t: string) => out.push(t) } };
};

async function host() {
  const db = join(mkdtempSync(join(tmpdir(), 'proofrig-rigs-')), 'journal.db');
  running = await serve({ db, port: 0, logger: pino({ level: 'silent' }), heartbeatMs: 500 });
  return { db, ws: `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}` };
}

function launch(o: Parameters<typeof runRigsCommand>[0]) {
  const stdout = sink();
  const stderr = sink();
  done = runRigsCommand(o, {
    stdout: stdout.w,
    stderr: stderr.w,
    until: () => new Promise<void>((r) => (stop = r)),
  });
  return { stdout: stdout.out, stderr: stderr.out };
}

describe('proofrig rigs', () => {
  it('--count runs that many rigs of one board; each is provisioned, comes online and executes commands', async () => {
    const h = await host();
    const { stdout } = launch({ board: RELAY_BOARD, count: 3, idPrefix: 'bench', host: h.ws, db: h.db, seed: 1 });
    const ids = ['bench-1', 'bench-2', 'bench-3'];
    await until(() => ids.every((id) => running!.core.devices.session(id) !== undefined), 10000, 'all rigs online');
    expect(stdout.join('')).toMatch(/^3 simulated rig\(s\)/);
    const c = await running!.core.submit({ device_id: 'bench-2', action: 'relay.set', args: { ch: 1, on: true } });
    await until(() => running!.core.status(c.command_id)!.terminal, 5000, 'terminal');
    expect(running!.core.status(c.command_id)).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
  });

  it('--list takes one board[=id] per line, comments allowed', async () => {
    const h = await host();
    const list = join(mkdtempSync(join(tmpdir(), 'proofrig-rigs-')), 'rigs.txt');
    writeFileSync(list, `# two relay rigs\n${RELAY_BOARD}=left\n${RELAY_BOARD}=right  # the other one\n`);
    launch({ list, host: h.ws, db: h.db });
    await until(() => ['left', 'right'].every((id) => running!.core.devices.session(id) !== undefined), 10000, 'both online');
  });

  it('refuses a wrong call with a specific message and starts nothing', async () => {
    const h = await host();
    const r1 = launch({ host: h.ws, db: h.db });
    expect(await done).toBe(2);
    expect(r1.stderr.join('')).toMatch(/either --board .* or --list/);
    const list = join(mkdtempSync(join(tmpdir(), 'proofrig-rigs-')), 'dup.txt');
    writeFileSync(list, `${RELAY_BOARD}=a\n${RELAY_BOARD}=a\n`);
    const r2 = launch({ list, host: h.ws, db: h.db });
    expect(await done).toBe(2);
    expect(r2.stderr.join('')).toMatch(/device id a appears twice/);
  });
});
