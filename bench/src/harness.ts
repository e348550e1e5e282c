// The bench's run settings, its table rows and notes, and the helpers every section uses: hosts,
// device processes and clients.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEVICE_PATH } from '@proofrig/protocol';
import { serve, findToken, type Running } from '@proofrig/host/tools';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = join(ROOT, 'bench', 'dist');
export const CLI = join(ROOT, 'host', 'bin', 'proofrig.js');
export const RELAY_BOARD = join(ROOT, 'boards', 'relay-rig-4ch.json');
export const STEPPER_BOARD = join(ROOT, 'boards', 'stepper-rig.json');
export const quick = process.argv.includes('--quick');
export const N_LAT = quick ? 60 : 300;
/** Commands per relay channel on the real Espruino interpreter (and on its vm baseline). */
export const N_ESP = quick ? 40 : 150;
export const CAP_MS = quick ? 1000 : 3000;
export const MCP_TOKEN = process.env.PROOFRIG_MCP_TOKEN;
// --only=latency,capacity,e2e,journal,motion,cold,firmware runs just those parts (the README table and
// bench/results.json are then left alone: the partial run goes to bench/results.partial.json).
export const onlyArg = process.argv.find((a) => a.startsWith('--only='));
export const only = onlyArg ? new Set(onlyArg.slice(7).split(',')) : undefined;
export const part = (name: string) => !only || only.has(name);

export interface Row {
  group: string;
  what: string;
  value: number;
  unit: string;
  baseline: string;
  base: number;
  /** value / base */
  ratio: number;
  target?: string;
  ok?: boolean;
}
export const rows: Row[] = [];
export const notes: string[] = [];
export function row(r: Omit<Row, 'ratio'>): void {
  const full = { ...r, ratio: r.base ? r.value / r.base : NaN };
  rows.push(full);
  process.stderr.write(`  ${r.what}: ${fmt(r.value)} ${r.unit} vs ${r.baseline} ${fmt(r.base)}${r.ok === undefined ? '' : r.ok ? '  [target met]' : '  [target MISSED]'}\n`);
}
export const fmt = (n: number) => (Number.isNaN(n) ? '—' : Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export async function until(f: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`bench: ${what} not within ${ms} ms`);
    await sleep(5);
  }
}
export const tmpDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-bench-')), 'journal.db');
export const children: ChildProcess[] = [];
export function killAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
}
process.on('exit', killAll);

// ---- helpers: hosts, device processes, clients ---------------------------------------------------

export async function startHost(db = tmpDb()): Promise<{ running: Running; db: string; ws: string; mcp: string }> {
  // Caps raised for the load: every bench device and MCP client comes from 127.0.0.1.
  const running = await serve({ db, port: 0, logger: pino({ level: 'silent' }), heartbeatMs: 2000, maxConnections: 5000, maxConnectionsPerAddress: 5000, maxSessions: 1000 });
  return { running, db, ws: `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}`, mcp: `${running.url}/mcp` };
}

export function rigsProcess(args: string[]): ChildProcess {
  const c = spawn(process.execPath, [CLI, 'rigs', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(c);
  return c;
}

export function loadgen(spec: object): { child: ChildProcess; online: () => number } {
  let online = 0;
  const child = fork(join(DIST, 'loadgen.js'), [JSON.stringify(spec)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  child.on('message', (m: { online?: number }) => {
    if (m.online !== undefined) online = m.online;
  });
  children.push(child);
  return { child, online: () => online };
}

export function stop(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null) return Promise.resolve();
  return new Promise((r) => {
    c.once('exit', () => r());
    c.kill('SIGTERM');
    setTimeout(() => c.kill('SIGKILL'), 3000).unref();
  });
}

/** The agent bearer token of a host whose journal is `db` (null while it has not written one yet). */
export const tokenOf = (db: string) => MCP_TOKEN ?? findToken({ db }).token;

export async function mcpClient(url: string, token?: string): Promise<Client> {
  const c = new Client({ name: 'bench', version: '1' });
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return c;
}
/** Raw WebSocket round trips on loopback (one socket, one message each way), ms. */
export async function wsRtt(n: number): Promise<number[]> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  wss.on('connection', (s) => s.on('message', (m) => s.send(m as Buffer)));
  await new Promise((r) => wss.once('listening', r));
  const ws = new WebSocket(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`);
  await new Promise((r) => ws.once('open', r));
  const out: number[] = [];
  const msg = JSON.stringify({ t: 'cmd', rid: 'req_0123456789ab', a: 'relay.set', p: { ch: 3, on: true } });
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await new Promise<void>((r) => {
      ws.once('message', () => r());
      ws.send(msg);
    });
    out.push(performance.now() - t);
  }
  ws.close();
  wss.close();
  return out;
}

/**
 * The device's share of each command on a host: from the host's write of its `cmd` frame to the host's
 * read of its `res` frame (the link, the device and the physical time; the rest of a command's time is
 * the host's). Wraps the sessions' `send` and the core's result handler; returns that time (ms) of a
 * request id, once its result has been read.
 */
export function deviceShare(running: Running, deviceIds: string[]): (requestId: string) => number {
  const written = new Map<string, number>();
  const read = new Map<string, number>();
  for (const id of deviceIds) {
    const session = running.core.devices.session(id) as unknown as { send(f: { t: string; rid?: string }): void } | undefined;
    if (!session) throw new Error(`bench: ${id} is not online`);
    const send = session.send.bind(session);
    session.send = (f) => {
      if (f.t === 'cmd' && f.rid !== undefined && !written.has(f.rid)) written.set(f.rid, performance.now());
      send(f);
    };
  }
  const cmds = running.core.commands as unknown as { result(s: unknown, f: { rid: string }): void };
  const result = cmds.result.bind(cmds);
  cmds.result = (s, f) => {
    if (!read.has(f.rid)) read.set(f.rid, performance.now());
    result(s, f);
  };
  return (rid) => {
    const w = written.get(rid);
    const r = read.get(rid);
    written.delete(rid);
    read.delete(rid);
    if (w === undefined || r === undefined) throw new Error(`bench: request ${rid}: ${w === undefined ? 'no cmd frame written on a timed session' : 'no res frame read'}`);
    return r - w;
  };
}
