// Ad-hoc: core-API capacity at N load-generator devices, with journal commit counts (for profiling).
// node bench/dist/probe.js N MS [mcp [wait]]   (RAW=1: protocol-level MCP clients instead of the SDK's)
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { DEVICE_PATH, type BoardDef } from '@proofrig/protocol';
import { serve } from '@proofrig/host/tools';
import { newSecret } from '@proofrig/host/core';
import { driveCore } from './core-load.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const n = Number(process.argv[2] ?? 100);
const ms = Number(process.argv[3] ?? 3000);
const db = join(mkdtempSync(join(tmpdir(), 'proofrig-probe-')), 'journal.db');
const running = await serve({ db, port: 0, logger: pino({ level: 'silent' }), heartbeatMs: 2000, maxConnections: 5000, maxConnectionsPerAddress: 5000, maxSessions: 1000 });
const j = running.core.journal as unknown as { commit(): void };
let commits = 0;
let commitMs = 0;
const commit = j.commit.bind(j);
j.commit = () => {
  const t = performance.now();
  commit();
  commitMs += performance.now() - t;
  commits++;
};
const board = JSON.parse(readFileSync(join(ROOT, 'boards', 'relay-rig-4ch.json'), 'utf8')) as BoardDef;
const devices = Array.from({ length: n }, (_, i) => ({ id: `load-${i}`, secret: newSecret(), board: board.id }));
for (const d of devices) running.core.provision(d.id, d.secret, board);
const g = fork(join(ROOT, 'bench', 'dist', 'loadgen.js'), [JSON.stringify({ url: `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}`, mode: 'proofrig', devices })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
while (!devices.every((d) => running.core.devices.session(d.id))) await new Promise((r) => setTimeout(r, 20));
await new Promise((r) => setTimeout(r, 300));
commits = 0;
commitMs = 0;
if (process.argv[4] === 'mcp') {
  const m = fork(join(ROOT, 'bench', 'dist', 'mcp-load.js'), [JSON.stringify({ url: running.url + '/mcp', token: running.tokens?.agent, devices: devices.map((d) => d.id), ms, channel: 3, wait: process.argv[5] === 'wait', raw: !!process.env.RAW })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const cpu0 = process.cpuUsage();
  const r = await new Promise<{ done: number; bad: number; ms: number }>((resolve) => {
    m.on('message', (x: { ready?: boolean; done?: number; ms?: number }) => {
      if (x.ready) {
        commits = 0;
        commitMs = 0;
        m.send('go');
      } else resolve(x as { done: number; bad: number; ms: number });
    });
  });
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({ n, mcpRate: Math.round(r.done / (r.ms / 1000)), done: r.done, bad: r.bad, commits, commitMs: +(commitMs / commits).toFixed(2), cpuUsPerCmd: Math.round((cpu.user + cpu.system) / r.done), sysUsPerCmd: Math.round(cpu.system / r.done) }));
  m.kill('SIGKILL');
  g.kill('SIGKILL');
  await running.close();
  process.exit(0);
}
// COUNT=1: how many socket writes were single frames and how many were batches (a rack sent with the next frame), printed after the run.
const cnt = { send: 0, batch: 0, batched: 0 };
if (process.env.COUNT) for (const ss of (running.core as unknown as { sessions: Set<{ link: { send(t: string): void; sendBatch?(t: string[]): void } }> }).sessions) {
  const l = ss.link;
  const s0 = l.send.bind(l);
  l.send = (t) => { cnt.send++; s0(t); };
  if (l.sendBatch) { const b0 = l.sendBatch.bind(l); l.sendBatch = (t) => { cnt.batch++; cnt.batched += t.length; b0(t); }; }
}
const { done, secs, cpu } = await driveCore(running.core, devices, ms);
if (process.env.COUNT) console.log(JSON.stringify(cnt));
console.log(JSON.stringify({ n, rate: Math.round(done / secs), done, commits, perCommit: +(done / commits).toFixed(1), commitMs: +(commitMs / commits).toFixed(2), cpuUsPerCmd: Math.round((cpu.user + cpu.system) / done) }));
g.kill('SIGKILL');
await running.close();
process.exit(0);
