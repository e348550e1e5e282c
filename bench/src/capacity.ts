// Bench section 2: host capacity against a protocol-level load generator (and over MCP), idle memory per device.
import { fork, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { driveCore } from './core-load.js';
import WebSocket, { WebSocketServer } from 'ws';
import { DEVICE_PATH, type BoardDef } from '@proofrig/protocol';
import { Journal, newSecret } from '@proofrig/host/core';
import { DIST, CLI, RELAY_BOARD, CAP_MS, notes, sleep, until, tmpDb, children, startHost, loadgen, stop, tokenOf } from './harness.js';
import { freePort, answering, INIT } from './cold-start.js';

/** Raw ws request/response over n sockets for `ms`: the parent sends, the loadgen process answers. */
export async function rawWs(n: number, ms: number): Promise<number> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((r) => wss.once('listening', r));
  const socks: WebSocket[] = [];
  wss.on('connection', (s) => socks.push(s));
  const g = loadgen({ url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`, mode: 'echo', devices: Array.from({ length: n }, () => ({ id: 'x', secret: '', board: '' })) });
  await until(() => socks.length === n, 60000, `${n} raw sockets`);
  let count = 0;
  const end = Date.now() + ms;
  const msg = JSON.stringify({ t: 'cmd', rid: 'req_0123456789ab', a: 'relay.set', p: { ch: 3, on: true } });
  const t = performance.now();
  await Promise.all(
    socks.map(
      (s) =>
        new Promise<void>((done) => {
          s.on('message', () => {
            count++;
            if (Date.now() < end) s.send(msg);
            else done();
          });
          s.send(msg);
        }),
    ),
  );
  const rate = count / ((performance.now() - t) / 1000);
  await stop(g.child);
  wss.close();
  return rate;
}

export async function capacity(n: number): Promise<{ rate: number; cpuUs: number }> {
  const h = await startHost();
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  const devices = Array.from({ length: n }, (_, i) => ({ id: `load-${i}`, secret: newSecret(), board: board.id }));
  for (const d of devices) h.running.core.provision(d.id, d.secret, board);
  const g = loadgen({ url: h.ws, mode: 'proofrig', devices });
  await until(() => devices.every((d) => h.running.core.devices.session(d.id) !== undefined), 60000 + 200 * n, `${n} load devices online`);
  await sleep(200);
  const { done, bad, secs, cpu } = await driveCore(h.running.core, devices, CAP_MS);
  if (bad) notes.push(`capacity at ${n} devices: ${bad} commands did not complete`);
  await stop(g.child);
  await h.running.close();
  return { rate: done / secs, cpuUs: (cpu.user + cpu.system) / Math.max(1, done) };
}

/** `wait`: relay_set with wait_ms (the outcome in the same call); else relay_set, then get_action_status until terminal. */
export async function capacityMcp(n: number, wait: boolean, raw = false): Promise<{ rate: number; hostUs: number; clientUs: number }> {
  const h = await startHost();
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  const devices = Array.from({ length: n }, (_, i) => ({ id: `mcp-${i}`, secret: newSecret(), board: board.id }));
  for (const d of devices) h.running.core.provision(d.id, d.secret, board);
  const g = loadgen({ url: h.ws, mode: 'proofrig', devices });
  await until(() => devices.every((d) => h.running.core.devices.session(d.id) !== undefined), 60000 + 200 * n, `${n} load devices online`);
  let cpu0 = process.cpuUsage();
  const result = await mcpLoad<{ done: number; bad: number; ms: number; cpuUs: number }>(
    { url: h.mcp, token: h.running.tokens?.agent, devices: devices.map((d) => d.id), ms: CAP_MS, channel: 3, wait, raw },
    () => (cpu0 = process.cpuUsage()),
  );
  const cpu = process.cpuUsage(cpu0);
  if (result.bad) notes.push(`MCP capacity: ${result.bad} commands did not complete`);
  await stop(g.child);
  await h.running.close();
  const done = Math.max(1, result.done);
  return { rate: result.done / (result.ms / 1000), hostUs: (cpu.user + cpu.system) / done, clientUs: result.cpuUs / done };
}

/** Run mcp-load.ts with these options in its own process: start it once its clients are connected, return its report. */
export async function mcpLoad<T>(opts: Record<string, unknown>, onGo?: () => void): Promise<T> {
  const m = fork(join(DIST, 'mcp-load.js'), [JSON.stringify(opts)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  children.push(m);
  const report = await new Promise<T>((resolve, reject) => {
    m.on('message', (x: { ready?: boolean }) => {
      if (x.ready) {
        onGo?.();
        m.send('go');
      }
      else resolve(x as T);
    });
    m.once('exit', (code) => reject(new Error(`bench: mcp-load exited ${code}`)));
  });
  await stop(m);
  return report;
}

/** Times (ms) of n MCP relay_set wait_ms calls one after another, from an MCP client in its own process (`raw`: protocol-level). */
export async function mcpLatency(url: string, token: string | undefined, device: string, channel: number, n: number, raw: boolean): Promise<number[]> {
  return (await mcpLoad<{ times: number[] }>({ url, token, devices: [device], ms: 0, channel, lat: n, raw })).times;
}

/** RSS of a `proofrig serve` process (its own, nothing of the bench's) per connected idle device. */
export async function idleRss(n: number): Promise<{ perDevice: number; base: number }> {
  const db = tmpDb();
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  const devices = Array.from({ length: n }, (_, i) => ({ id: `idle-${i}`, secret: newSecret(), board: board.id }));
  const j = new Journal(db);
  for (const d of devices) j.provision(d.id, d.secret, board);
  j.close();
  const port = await freePort();
  const host = spawn(process.execPath, [CLI, 'serve', '--http', String(port), '--db', db, '--log-level', 'silent', '--max-connections', '5000', '--max-connections-per-address', '5000'], { stdio: 'ignore' });
  children.push(host);
  await until(() => answering(`http://127.0.0.1:${port}/mcp`, INIT, tokenOf(db)), 20000, 'proofrig serve answering');
  await sleep(500);
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${host.pid}/status`, 'utf8'))![1]) * 1024;
  const before = rss();
  const g = loadgen({ url: `ws://127.0.0.1:${port}${DEVICE_PATH}`, mode: 'proofrig', devices });
  await until(() => g.online() === n, 120000, `${n} idle devices online`);
  await sleep(4500); // two heartbeat rounds on every connection
  const after = rss();
  await stop(g.child);
  await stop(host);
  return { perDevice: (after - before) / n, base: before };
}
