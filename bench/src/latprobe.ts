// Ad-hoc (not part of the bench): where the time of one verified relay command goes, on a rig in another process.
// node bench/dist/latprobe.js CH N
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { DEVICE_PATH } from '@proofrig/protocol';
import { serve } from '../../host/src/serve.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ch = Number(process.argv[2] ?? 3);
const n = Number(process.argv[3] ?? 200);
const db = join(mkdtempSync(join(tmpdir(), 'proofrig-lat-')), 'journal.db');
const running = await serve({ db, port: 0, logger: pino({ level: 'silent' }), heartbeatMs: 2000 });
const rig = spawn(process.execPath, [join(ROOT, 'host', 'bin', 'proofrig.js'), 'rigs', '--board', join(ROOT, 'boards', 'relay-rig-4ch.json'), '--count', '1', '--id-prefix', 'lat', '--host', `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}`, '--db', db, '--seed', '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
while (!running.core.devices.session('lat-1')) await new Promise((r) => setTimeout(r, 20));
const cmds = running.core.commands as unknown as Record<string, (...a: unknown[]) => void>;
let tAck = 0, tRes = 0;
const ack = cmds.ack.bind(cmds), res = cmds.result.bind(cmds);
cmds.ack = (...a) => { tAck = performance.now(); ack(...a); };
cmds.result = (...a) => { tRes = performance.now(); res(...a); };
const s = running.core.devices.session('lat-1') as unknown as { send(f: unknown): void };
let tCmd = 0;
const send = s.send.bind(s);
s.send = (f: unknown) => { if ((f as { t: string }).t === 'cmd') tCmd = performance.now(); send(f); };
const rows: number[][] = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const c = await running.core.submit({ device_id: 'lat-1', action: 'relay.set', args: { ch, on: i % 2 === 0 } });
  const t1 = performance.now();
  await running.core.waitTerminal(c.command_id, 5000);
  const t2 = performance.now();
  if (i >= 10) rows.push([tCmd - t0, t1 - t0, tAck - tCmd, tRes - tCmd, t2 - tRes, t2 - t0]);
}
const med = (k: number) => { const xs = rows.map((r) => r[k]).sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)].toFixed(2); };
console.log(`ch ${ch} p50 ms: submit→cmd sent ${med(0)}, submit resolved ${med(1)}, cmd→ack in ${med(2)}, cmd→res in ${med(3)}, res in→terminal told ${med(4)}, total ${med(5)}`);
rig.kill('SIGKILL');
await running.close();
process.exit(0);
