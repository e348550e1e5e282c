// Ad-hoc (not part of the bench): where the time of one verified relay command goes, on a rig in another process: the host's
// steps, its journal commits and WAL fdatasyncs, and the device's share (cmd out → ack/res in). node bench/dist/latprobe.js CH N
import { hostWithRig } from './one-rig.js';

const ch = Number(process.argv[2] ?? 3);
const n = Number(process.argv[3] ?? 200);
const { running, close } = await hostWithRig();
const j = running.core.journal as unknown as { syncAsync(fd: number, d: (e: Error | null) => void): void; commitBatch(): void };
const syncs: number[] = [];
let syncStarts: number[] = [];
let durs: number[] = [];
let ends: number[] = [];
const sa = j.syncAsync.bind(j);
j.syncAsync = (fd, d) => { const t = performance.now(); syncStarts.push(t); sa(fd, (e) => { const x = performance.now(); syncs.push(x - t); durs.push(x - t); ends.push(x); d(e); }); };
let batches: number[] = [];
const st = j.commitBatch.bind(j);
j.commitBatch = () => { const t = performance.now(); st(); batches.push(performance.now() - t); };
const jr = j as unknown as { run(a: { ok: () => void }[]): void };
const runs: number[] = [];
const rr = jr.run.bind(jr);
jr.run = (a) => { const t = performance.now(); rr(a); runs.push(performance.now() - t, a.length); };
const jc = j as unknown as { commit(): void; flushStaged(): void };
const commits: number[] = [], flushes: number[] = [];
const c0 = jc.commit.bind(jc), f0 = jc.flushStaged.bind(jc);
jc.commit = () => { const t = performance.now(); c0(); commits.push(performance.now() - t); };
jc.flushStaged = () => { const t = performance.now(); f0(); flushes.push(performance.now() - t); };
const cmds = running.core.commands as unknown as Record<string, (...a: unknown[]) => void>;
let tAck = 0, tRes = 0, tResRaw = 0;
const ack = cmds.ack.bind(cmds), res = cmds.result.bind(cmds);
cmds.ack = (...a) => { tAck = performance.now(); ack(...a); };
cmds.result = (...a) => { tRes = performance.now(); res(...a); };
const s = running.core.devices.session('lat-1') as unknown as { send(f: unknown): void; link: { onmessage(t: string): void } };
const om = s.link.onmessage;
s.link.onmessage = (t: string) => { if (t.includes('"res"')) tResRaw = performance.now(); om(t); };
let tCmd = 0;
const send = s.send.bind(s);
s.send = (f: unknown) => { if ((f as { t: string }).t === 'cmd') tCmd = performance.now(); send(f); };
const rows: number[][] = [];
for (let i = 0; i < n; i++) {
  syncStarts = []; durs = []; ends = [];
  const t0 = performance.now();
  const c = await running.core.submit({ device_id: 'lat-1', action: 'relay.set', args: { ch, on: i % 2 === 0 } });
  const t1 = performance.now();
  await running.core.waitTerminal(c.command_id, 5000);
  const t2 = performance.now();
  const ls = syncStarts[syncStarts.length - 1] ?? t2;
  if (i >= 10) rows.push([tCmd - t0, t1 - t0, tAck - tCmd, tRes - tCmd, tRes - tResRaw, ls - tRes, t2 - ls, t2 - tRes, t2 - t0, syncStarts.length, durs[0] ?? 0, durs[durs.length - 1] ?? 0, t2 - (ends[ends.length - 1] ?? t2)]);
}
const med = (k: number) => { const xs = rows.map((r) => r[k]).sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)].toFixed(3); };
const md = (xs: number[]) => { xs.sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)].toFixed(3) + '/p99 ' + xs[Math.floor(xs.length * 0.99)].toFixed(3); };
console.log(`ch ${ch} p50 ms: submit→cmd sent ${med(0)}, submit resolved ${med(1)}, cmd→ack in ${med(2)}, cmd→res handled ${med(3)}, res raw→handled ${med(4)}, res→last fsync start ${med(5)}, last fsync start→told ${med(6)}, res→told ${med(7)}, total ${med(8)}, fsyncs/cmd ${med(9)}, submit fsync ${med(10)}, result fsync ${med(11)}, result fsync end→told ${med(12)}`);
console.log('runs', runs.slice(-30).map((x) => x.toFixed(3)).join(' '));
console.log('commit', md(commits), 'flush', md(flushes));
console.log('fsync', md(syncs), 'commitBatch', md(batches));
await close();
process.exit(0);
