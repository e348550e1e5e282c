// npm run bench: one run on loopback, every figure next to a baseline measured in the same run and their
// ratio. Writes bench/results.json, prints a markdown table and puts it in README.md between markers.
// `--quick` for a short run. Devices live in other processes: a protocol-level load generator
// (bench/src/loadgen.ts) for host capacity, `proofrig rigs` (the built firmware in vm contexts) for
// latency and end-to-end figures.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { driveCore } from './core-load.js';
import pino from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEVICE_PATH, moveDurationS, type BoardDef } from '@proofrig/protocol';
import { serve, findToken, type Running } from '@proofrig/host/tools';
import { Journal, blankCommand, Checkpointer, newSecret, type CommandRecord } from '@proofrig/host/core';
import { consoleMemoryReading } from './memory-load.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIST = join(ROOT, 'bench', 'dist');
const CLI = join(ROOT, 'host', 'bin', 'proofrig.js');
const RELAY_BOARD = join(ROOT, 'boards', 'relay-rig-4ch.json');
const STEPPER_BOARD = join(ROOT, 'boards', 'stepper-rig.json');
const quick = process.argv.includes('--quick');
const N_LAT = quick ? 60 : 300;
/** Commands per relay channel on the real Espruino interpreter (and on its vm baseline). */
const N_ESP = quick ? 40 : 150;
const CAP_MS = quick ? 1000 : 3000;
const MCP_TOKEN = process.env.PROOFRIG_MCP_TOKEN;
// --only=latency,capacity,e2e,journal,motion,cold,firmware runs just those parts (the README table and
// bench/results.json are then left alone: the partial run goes to bench/results.partial.json).
const onlyArg = process.argv.find((a) => a.startsWith('--only='));
const only = onlyArg ? new Set(onlyArg.slice(7).split(',')) : undefined;
const part = (name: string) => !only || only.has(name);

interface Row {
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
const rows: Row[] = [];
const notes: string[] = [];
function row(r: Omit<Row, 'ratio'>): void {
  const full = { ...r, ratio: r.base ? r.value / r.base : NaN };
  rows.push(full);
  process.stderr.write(`  ${r.what}: ${fmt(r.value)} ${r.unit} vs ${r.baseline} ${fmt(r.base)}${r.ok === undefined ? '' : r.ok ? '  [target met]' : '  [target MISSED]'}\n`);
}
const fmt = (n: number) => (Number.isNaN(n) ? '—' : Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(f: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`bench: ${what} not within ${ms} ms`);
    await sleep(5);
  }
}
const tmpDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-bench-')), 'journal.db');
const children: ChildProcess[] = [];
function killAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
}
process.on('exit', killAll);

// ---- helpers: hosts, device processes, clients ---------------------------------------------------

async function startHost(db = tmpDb()): Promise<{ running: Running; db: string; ws: string; mcp: string }> {
  // Caps raised for the load: every bench device and MCP client comes from 127.0.0.1.
  const running = await serve({ db, port: 0, logger: pino({ level: 'silent' }), heartbeatMs: 2000, maxConnections: 5000, maxConnectionsPerAddress: 5000, maxSessions: 1000 });
  return { running, db, ws: `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}`, mcp: `${running.url}/mcp` };
}

function rigsProcess(args: string[]): ChildProcess {
  const c = spawn(process.execPath, [CLI, 'rigs', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(c);
  return c;
}

function loadgen(spec: object): { child: ChildProcess; online: () => number } {
  let online = 0;
  const child = fork(join(DIST, 'loadgen.js'), [JSON.stringify(spec)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  child.on('message', (m: { online?: number }) => {
    if (m.online !== undefined) online = m.online;
  });
  children.push(child);
  return { child, online: () => online };
}

function stop(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null) return Promise.resolve();
  return new Promise((r) => {
    c.once('exit', () => r());
    c.kill('SIGTERM');
    setTimeout(() => c.kill('SIGKILL'), 3000).unref();
  });
}

/** The agent bearer token of a host whose journal is `db` (null while it has not written one yet). */
const tokenOf = (db: string) => MCP_TOKEN ?? findToken({ db }).token;

async function mcpClient(url: string, token?: string): Promise<Client> {
  const c = new Client({ name: 'bench', version: '1' });
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return c;
}
/** Raw WebSocket round trips on loopback (one socket, one message each way), ms. */
async function wsRtt(n: number): Promise<number[]> {
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
function deviceShare(running: Running, deviceIds: string[]): (requestId: string) => number {
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

// ---- 1. verified-completion latency on a simulated rig in another process -----------------------

async function latency(rttP50: number, rttP99: number): Promise<void> {
  process.stderr.write('latency: relay rig (built firmware, proofrig rigs in another process)\n');
  const h = await startHost();
  const rig = rigsProcess(['--board', RELAY_BOARD, '--count', '1', '--id-prefix', 'lat', '--host', h.ws, '--db', h.db, '--seed', '1']);
  await until(() => h.running.core.devices.session('lat-1') !== undefined, 20000, 'rig online');
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  // Where a core-API command's time goes: from the host's write of the cmd frame to its read of the
  // res frame the command is at the device (simulated: the sim's link and the firmware in its vm, plus
  // the physical time); the rest is the host's (journal commits and fdatasyncs, frame handling).
  const atDeviceMs = deviceShare(h.running, ['lat-1']);
  for (const ch of [1, 3, 4]) {
    const r = board.relays.find((x) => x.ch === ch)!;
    // The physical floor: settle (the firmware waits it before reading evidence), or the simulated armature's operate time where longer.
    const physical = Math.max(r.settle_ms, r.feedback.kind === 'aux_contact' ? r.operate_ms : 0);
    const core: number[] = [];
    const atDevice: number[] = [];
    const viaMcp: number[] = [];
    const viaSdk: number[] = [];
    for (let i = 0; i < N_LAT; i++) {
      const t = performance.now();
      const c = await h.running.core.submit({ device_id: 'lat-1', action: 'relay.set', args: { ch, on: i % 2 === 0 } });
      const s = await h.running.core.waitTerminal(c.command_id, 5000);
      if (!s?.terminal) throw new Error(`bench: channel ${ch} command not terminal`);
      core.push(performance.now() - t);
      atDevice.push(atDeviceMs(c.request_id));
    }
    // One tool call each, as an agent would make it (wait_ms returns the verified outcome in the answer),
    // from a client in its own process, as an agent's is: a protocol-level client (the host's time, the
    // target's), then the MCP SDK's client (what an agent built on it sees, its own parsing included).
    viaMcp.push(...(await mcpLatency(h.mcp, h.running.tokens?.agent, 'lat-1', ch, N_LAT, true)));
    viaSdk.push(...(await mcpLatency(h.mcp, h.running.tokens?.agent, 'lat-1', ch, N_LAT, false)));
    for (const [path, xs, targeted] of [['core API', core, true], ['MCP relay_set wait_ms', viaMcp, true], ['MCP relay_set wait_ms, SDK client', viaSdk, false]] as const) {
      const f50 = physical + rttP50;
      const f99 = physical + rttP99;
      const p50 = pct(xs, 50);
      const p99 = pct(xs, 99);
      const target3 = ch === 3 && targeted;
      row({ group: 'latency', what: `ch ${ch} (settle ${r.settle_ms} ms) ${path} → terminal, p50`, value: p50, unit: 'ms', baseline: 'floor p50 (physical + ws RTT p50)', base: f50,
        ...(target3 ? { target: `≤ floor + 1 RTT + 1 ms (${fmt(f50 + rttP50 + 1)} ms)`, ok: p50 <= f50 + rttP50 + 1 } : {}) });
      row({ group: 'latency', what: `ch ${ch} (settle ${r.settle_ms} ms) ${path} → terminal, p99`, value: p99, unit: 'ms', baseline: 'floor p99 (physical + ws RTT p99)', base: f99,
        ...(target3 ? { target: `≤ floor + 5 ms (${fmt(f99 + 5)} ms)`, ok: p99 <= f99 + 5 } : {}) });
    }
    if (ch === 3) {
      // The split of the core-API p50 (each part's own median, so they need not add up exactly).
      const dev50 = pct(atDevice, 50);
      const host50 = pct(core.map((x, i) => x - atDevice[i]), 50);
      row({ group: 'latency', what: `ch 3 core API, of which at the simulated device (cmd written → res read), p50`, value: dev50, unit: 'ms', baseline: 'physical + ws RTT p50', base: physical + rttP50 });
      row({ group: 'latency', what: `ch 3 core API, of which the host's (submit → cmd written, res read → waiter told), p50`, value: host50, unit: 'ms', baseline: '1 RTT + 1 ms (the overhead the target allows)', base: rttP50 + 1 });
    }
  }
  await stop(rig);
  await h.running.close();
}

// ---- 2. host capacity against a protocol-level load generator ------------------------------------

/** Raw ws request/response over n sockets for `ms`: the parent sends, the loadgen process answers. */
async function rawWs(n: number, ms: number): Promise<number> {
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

async function capacity(n: number): Promise<{ rate: number; cpuUs: number }> {
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
async function capacityMcp(n: number, wait: boolean, raw = false): Promise<{ rate: number; hostUs: number; clientUs: number }> {
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
async function mcpLoad<T>(opts: Record<string, unknown>, onGo?: () => void): Promise<T> {
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
async function mcpLatency(url: string, token: string | undefined, device: string, channel: number, n: number, raw: boolean): Promise<number[]> {
  return (await mcpLoad<{ times: number[] }>({ url, token, devices: [device], ms: 0, channel, lat: n, raw })).times;
}

/** RSS of a `proofrig serve` process (its own, nothing of the bench's) per connected idle device. */
async function idleRss(n: number): Promise<{ perDevice: number; base: number }> {
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

// ---- 3. end to end with real simulated rigs in another process ------------------------------------

async function endToEnd(n: number): Promise<number> {
  const h = await startHost();
  const rigs = rigsProcess(['--board', RELAY_BOARD, '--count', String(n), '--id-prefix', 'e2e', '--host', h.ws, '--db', h.db, '--seed', '5']);
  const ids = Array.from({ length: n }, (_, i) => `e2e-${i + 1}`);
  await until(() => ids.every((id) => h.running.core.devices.session(id) !== undefined), 60000, `${n} rigs online`);
  let done = 0;
  const end = Date.now() + CAP_MS;
  const t = performance.now();
  await Promise.all(
    ids.map(async (id) => {
      let on = true;
      while (Date.now() < end) {
        const c = await h.running.core.submit({ device_id: id, action: 'relay.set', args: { ch: 3, on } });
        const s = await h.running.core.waitTerminal(c.command_id, 5000);
        if (s?.state === 'completed') done++;
        on = !on;
      }
    }),
  );
  const rate = done / ((performance.now() - t) / 1000);
  await stop(rigs);
  await h.running.close();
  return rate;
}

// ---- 4. the journal alone against raw better-sqlite3 inserts --------------------------------------
//
// Both sides run with the journal's own settings (read back from its connection: WAL, synchronous=FULL,
// every commit fsynced, checkpoints on a background connection as the host runs them) and get the same
// batching opportunity, measured twice:
// - one at a time (batch size 1): the journal as the host drives it for a single device with one command
//   in flight: submitted+sent commit before the cmd frame, then the ack and the result each in their own
//   turn; the raw side commits every INSERT on its own. The rule (on disk before anyone is told) needs at
//   least two commits per command here, so this ratio is bounded near 0.5× by construction.
// - batched (B commands in flight, as at B devices): every commit of the journal holds B submits
//   (submitted+sent) and the ack and result of the B commands before them, which is what one event-loop
//   turn of the host holds in steady state; the raw side commits B INSERTs per transaction. One commit per
//   B commands on both sides: the ratio is the journal's SQL work per command against one bare row.
// The raw row is the smallest honest record of a command (ids, device, action, args, state, time). A third
// side, batched the same way, writes the journal's own record with plain SQL (the same table, indexes and
// bytes: one INSERT of the sent row, one UPDATE to its end): what that record costs SQLite, so the
// journal's own overhead (staging, copies, views) and the record's size show apart.

const JOURNAL_BATCH = 100;

interface JournalFigures { single: number; rawSingle: number; batched: number; rawBatched: number; recordBatched: number; sync: string; bytes: { journal: number; raw: number } }

function journalBench(): JournalFigures {
  const n = quick ? 300 : 1000;
  const rounds = quick ? 20 : 100;
  const jdb = tmpDb();
  const j = new Journal(jdb, undefined, { checkpoint: 'background' });
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  j.provision('dev', 'secret', board);
  // The settings the journal really runs with, read back from its own connection. Its SQLite runs
  // synchronous=NORMAL and the journal fsyncs the WAL after every COMMIT itself (on the bench's virtual
  // path, no deferral: on this thread, before the step returns), which is what synchronous=FULL does in
  // WAL mode; the raw side gets FULL, the same guarantee. Checkpoints: the journal's connection has
  // wal_autocheckpoint=0 and its worker checkpoints; the raw sides get the same checkpointer.
  const jconn = (j as unknown as { db: Database.Database }).db;
  const mode = jconn.pragma('journal_mode', { simple: true }) as string;
  const jsync = Number(jconn.pragma('synchronous', { simple: true }));
  const jckpt = Number(jconn.pragma('wal_autocheckpoint', { simple: true }));
  if (mode !== 'wal' || jsync !== 1 || jckpt !== 0 || !j.checkpointer)
    throw new Error(`bench: the journal runs journal_mode=${mode}, synchronous=${jsync}, wal_autocheckpoint=${jckpt}; this comparison assumes wal + NORMAL with its own WAL fsync and background checkpoints`);
  const sync = 'FULL';
  const state = { up: 1, relays: [1, 2, 3, 4].map((ch) => ({ ch, cmd: true, pin: true, aux: null })) };
  const fresh = (i: number): CommandRecord => ({ ...blankCommand(), command_id: `cmd_${i}`, device_id: 'dev', request_id: `req_${i}`, action: 'relay.set', args: { ch: 3, on: true }, submitted_at: i, updated_at: i, estimated_ms: 100 });
  const sent = (c: CommandRecord, i: number) => Object.assign(c, { state: 'sent', boot_id: 'b', sends: 1, sent_at: i, deadline_at: i + 1000 });
  const done = (c: CommandRecord, i: number) =>
    Object.assign(c, { state: 'completed', executed: true, verified: true, evidence: 'pin_readback', terminal_at: i + 5, device_state: state, device_state_at: i + 5 });
  // The host's steps for one command (Commands.submit, ack, result), each a group: without a deferral a
  // group commits when it ends; nested in an outer group they join its commit.
  const submit = (i: number) =>
    j.group(() => {
      const c = fresh(i);
      j.byRequest('dev', c.request_id);
      j.insert(sent(c, i), null, [
        { at: i, state: 'submitted', note: null },
        { at: i, state: 'sent', note: 'deadline 1000 ms' },
      ]);
    });
  const ack = (i: number) =>
    j.group(() => {
      const a = j.byRequest('dev', `req_${i}`)!;
      Object.assign(a, { state: 'accepted', accepted: true });
      j.update(a, true);
    });
  const result = (i: number) =>
    j.group(() => {
      const r = j.byRequest('dev', `req_${i}`)!;
      j.update(done(r, i), true);
    });
  /** A raw connection with the journal's settings and the same background checkpointer. */
  const rawDb = (path: string) => {
    const d = new Database(path);
    d.pragma(`journal_mode = ${mode}`);
    d.pragma('synchronous = FULL');
    d.pragma('wal_autocheckpoint = 0');
    const cp = new Checkpointer(path, (why) => {
      throw new Error(`bench: the raw side's checkpointer failed: ${why}`);
    });
    return { d, cp };
  };
  const rdbPath = tmpDb();
  const { d: rdb, cp: rcp } = rawDb(rdbPath);
  rdb.exec('CREATE TABLE t (id TEXT PRIMARY KEY, device TEXT, rid TEXT, action TEXT, args TEXT, state TEXT, at INTEGER)');
  const ins = rdb.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)');
  const one = (i: number) => ins.run(`cmd_${i}`, 'dev', `req_${i}`, 'relay.set', '{"ch":3,"on":true}', 'submitted', i);
  const oneCommitted = (i: number) => {
    one(i);
    rcp.committed(1);
  };
  const many = rdb.transaction((from: number) => {
    for (let k = 0; k < JOURNAL_BATCH; k++) one(from + k);
  });
  // The journal's own record through plain SQL: the table and indexes a Journal creates, the same column
  // values it writes (an INSERT of the sent row with its two history lines, an UPDATE to the end with two).
  const recPath = tmpDb();
  new Journal(recPath).close();
  const { d: rec, cp: reccp } = rawDb(recPath);
  const hist = (at: number, st: string, note: string | null) => JSON.stringify([at, st, note]) + '\n';
  const recIns = rec.prepare(
    'INSERT INTO commands (command_id, device_id, request_id, action, args, state, accepted, executed, verified, boot_id, submitted_at, updated_at, deadline_at, estimated_ms, sends, sent_at, history) ' +
      "VALUES (@id, 'dev', @rid, 'relay.set', @args, 'sent', 0, 0, 0, 'b', @at, @at, @deadline, 100, 1, @at, @history)",
  );
  const recUpd = rec.prepare(
    "UPDATE commands SET state = 'completed', accepted = 1, executed = 1, verified = 1, evidence = 'pin_readback', terminal_at = @end, updated_at = @end, " +
      "device_state = @ds, device_state_at = @end, history = coalesce(history, '') || @history WHERE command_id = @id",
  );
  const ds = JSON.stringify(state);
  const recBatch = rec.transaction((from: number | undefined, prev: number | undefined) => {
    if (from !== undefined)
      for (let k = 0; k < JOURNAL_BATCH; k++) {
        const i = from + k;
        recIns.run({ id: `cmd_${i}`, rid: `req_${i}`, args: JSON.stringify({ ch: 3, on: true }), at: i, deadline: i + 1000, history: hist(i, 'submitted', null) + hist(i, 'sent', 'deadline 1000 ms') });
      }
    if (prev !== undefined)
      for (let k = 0; k < JOURNAL_BATCH; k++) {
        const i = prev + k;
        recUpd.run({ id: `cmd_${i}`, end: i + 5, ds, history: hist(i, 'accepted', null) + hist(i + 5, 'completed', null) });
      }
  });
  // The two sides alternate in slices (50 commands one at a time, or one batch), each slice timed on its
  // own: on a shared machine the disk's fsync time drifts, and both sides then see the same drift.
  const time = (f: () => void) => {
    const t = performance.now();
    f();
    return performance.now() - t;
  };
  let jMs = 0;
  let rMs = 0;
  for (let i = 0; i < n; i += 50) {
    jMs += time(() => {
      for (let k = i; k < i + 50; k++) {
        submit(k);
        ack(k);
        result(k);
      }
    });
    rMs += time(() => {
      for (let k = i; k < i + 50; k++) oneCommitted(k);
    });
  }
  const single = n / (jMs / 1000);
  const rawSingle = n / (rMs / 1000);
  // Batched: round r commits the submits of its B commands with the ack and result of round r-1's.
  const base = n;
  jMs = 0;
  rMs = 0;
  let recMs = 0;
  const walBytes = (p: string) => (existsSync(p + '-wal') ? statSync(p + '-wal').size : 0);
  for (let r = 0; r <= rounds; r++) {
    jMs += time(() =>
      j.group(() => {
        if (r < rounds) for (let k = 0; k < JOURNAL_BATCH; k++) submit(base + r * JOURNAL_BATCH + k);
        if (r > 0)
          for (let k = 0; k < JOURNAL_BATCH; k++) {
            ack(base + (r - 1) * JOURNAL_BATCH + k);
            result(base + (r - 1) * JOURNAL_BATCH + k);
          }
      }),
    );
    if (r < rounds)
      rMs += time(() => {
        many(base + r * JOURNAL_BATCH);
        rcp.committed(JOURNAL_BATCH);
      });
    recMs += time(() => {
      recBatch(r < rounds ? base + r * JOURNAL_BATCH : undefined, r > 0 ? base + (r - 1) * JOURNAL_BATCH : undefined);
      reccp.committed(2 * JOURNAL_BATCH);
    });
  }
  const batched = (rounds * JOURNAL_BATCH) / (jMs / 1000);
  const rawBatched = (rounds * JOURNAL_BATCH) / (rMs / 1000);
  const recordBatched = (rounds * JOURNAL_BATCH) / (recMs / 1000);
  // What a command costs in database bytes: the file (with its WAL checkpointed in) per command written.
  const fileBytes = (d: Database.Database, p: string) => {
    d.pragma('wal_checkpoint(TRUNCATE)');
    return statSync(p).size + walBytes(p);
  };
  const bytes = { journal: fileBytes(jconn, jdb) / (n + rounds * JOURNAL_BATCH), raw: fileBytes(rdb, rdbPath) / (n + rounds * JOURNAL_BATCH) };
  rcp.close();
  reccp.close();
  j.close();
  rdb.close();
  rec.close();
  return { single, rawSingle, batched, rawBatched, recordBatched, bytes, sync: `WAL, every commit fsynced: the journal's own WAL fsync / raw synchronous=${sync}; checkpoints on a background connection` };
}

// ---- 5. a 150 mm move against its motion profile -------------------------------------------------

async function move(): Promise<{ ms: number; profileMs: number }> {
  const h = await startHost();
  const board = JSON.parse(readFileSync(STEPPER_BOARD, 'utf8')) as BoardDef;
  const ax = board.steppers![0];
  const rig = rigsProcess(['--board', STEPPER_BOARD, '--count', '1', '--id-prefix', 'mv', '--host', h.ws, '--db', h.db, '--seed', '2']);
  await until(() => h.running.core.devices.session('mv-1') !== undefined, 20000, 'stepper rig online');
  const home = await h.running.core.submit({ device_id: 'mv-1', action: 'stepper.home', args: { axis: ax.axis } });
  const hs = await h.running.core.waitTerminal(home.command_id, 60000);
  if (hs?.state !== 'completed') throw new Error(`bench: homing ended ${hs?.state}`);
  const t = performance.now();
  const c = await h.running.core.submit({ device_id: 'mv-1', action: 'stepper.move', args: { axis: ax.axis, mm: 150 } });
  const s = await h.running.core.waitTerminal(c.command_id, 60000);
  const ms = performance.now() - t;
  if (s?.state !== 'completed') throw new Error(`bench: the move ended ${s?.state} ${s?.error_code}`);
  await stop(rig);
  await h.running.close();
  return { ms, profileMs: moveDurationS(ax, 150, ax.max_speed_mm_s) * 1000 };
}

// ---- 6. cold start --------------------------------------------------------------------------------

async function freePort(): Promise<number> {
  const s: Server = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return p;
}

async function answering(url: string, body?: string, token?: string): Promise<boolean> {
  try {
    const r = await fetch(url, body ? { method: 'POST', body, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) } } : {});
    await r.arrayBuffer();
    return r.status < 500 && (body ? r.ok : true);
  } catch {
    return false;
  }
}

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });

async function coldStart(): Promise<{ serve: number; online: number; bare: number; sdk: number }> {
  const runs = quick ? 2 : 4;
  const serveMs: number[] = [];
  const onlineMs: number[] = [];
  const bareMs: number[] = [];
  const sdkMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    let port = await freePort();
    let t = performance.now();
    let c = spawn(process.execPath, ['-e', `require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`], { stdio: 'ignore' });
    children.push(c);
    await until(() => answering(`http://127.0.0.1:${port}/`), 20000, 'bare http server');
    bareMs.push(performance.now() - t);
    await stop(c);
    const out = await new Promise<string>((resolve) => {
      const k = spawn(process.execPath, ['--input-type=module', '-e', "const t = performance.now(); await import('@modelcontextprotocol/sdk/server/mcp.js'); await import('@modelcontextprotocol/sdk/server/streamableHttp.js'); console.log(performance.now() - t);"], { cwd: join(ROOT, 'host') });
      let s = '';
      k.stdout.on('data', (b) => (s += b));
      k.on('exit', () => resolve(s));
    });
    sdkMs.push(Number(out.trim()));
    port = await freePort();
    t = performance.now();
    let db = tmpDb();
    c = spawn(process.execPath, [CLI, 'serve', '--http', String(port), '--db', db, '--log-level', 'silent'], { stdio: 'ignore' });
    children.push(c);
    await until(() => answering(`http://127.0.0.1:${port}/mcp`, INIT, tokenOf(db)), 20000, 'proofrig serve answering MCP');
    serveMs.push(performance.now() - t);
    await stop(c);
    port = await freePort();
    t = performance.now();
    db = tmpDb();
    c = spawn(process.execPath, [CLI, 'serve', '--http', String(port), '--db', db, '--log-level', 'silent', '--sim', RELAY_BOARD], { stdio: 'ignore' });
    children.push(c);
    await until(async () => {
      try {
        const m = await mcpClient(`http://127.0.0.1:${port}/mcp`, tokenOf(db));
        const r = (await m.callTool({ name: 'list_devices', arguments: {} })) as { structuredContent?: { devices?: { online?: boolean }[] } };
        await m.close();
        return r.structuredContent?.devices?.[0]?.online === true;
      } catch {
        return false;
      }
    }, 30000, 'simulated device online');
    onlineMs.push(performance.now() - t);
    await stop(c);
  }
  return { serve: pct(serveMs, 50), online: pct(onlineMs, 50), bare: pct(bareMs, 50), sdk: pct(sdkMs, 50) };
}

// ---- 7. firmware size, and the real interpreter when available ------------------------------------

function firmwareSize(): { raw: number; gzip: number } {
  const src = readFileSync(join(ROOT, 'firmware', 'dist', 'proofrig.js'));
  return { raw: src.length, gzip: gzipSync(src, { level: 9 }).length };
}

async function espruino(bin: string): Promise<{ loadMs: number; free: number; usage: number; total: number } | string> {
  if (!existsSync(bin)) return `PROOFRIG_ESPRUINO=${bin} does not exist`;
  const fw = readFileSync(join(ROOT, 'firmware', 'dist', 'proofrig.js'), 'latin1');
  // Load the firmware with no stored config (it stops before dialling), then print process.memory().
  const code = `var __t=getTime();${fw}\n;setTimeout(function(){var m=process.memory();console.log("BENCH "+JSON.stringify({loadMs:(getTime()-__t)*1000,free:m.free,usage:m.usage,total:m.total}));},50);`;
  const file = join(mkdtempSync(join(tmpdir(), 'proofrig-bench-')), 'fw.js');
  writeFileSync(file, code, 'latin1');
  return new Promise((resolve) => {
    // In the temp folder: the interpreter keeps its Storage as ./espruino.flash where it runs.
    const k = spawn(bin, [file], { cwd: dirname(file), stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(k);
    let out = '';
    const done = (r: Awaited<ReturnType<typeof espruino>>) => {
      k.kill('SIGKILL');
      resolve(r);
    };
    k.stdout.on('data', (b) => {
      out += b;
      const m = /BENCH (\{.*\})/.exec(out);
      if (m) done(JSON.parse(m[1]));
    });
    setTimeout(() => done(`no answer from the interpreter: ${out.slice(-300)}`), 10000);
  });
}

// ---- the run ------------------------------------------------------------------------------------

function table(): string {
  const lines = ['| group | measurement | value | baseline (same run) | baseline value | ratio | target |', '|---|---|---|---|---|---|---|'];
  for (const r of rows)
    lines.push(`| ${r.group} | ${r.what} | ${fmt(r.value)} ${r.unit} | ${r.baseline} | ${fmt(r.base)} | ${Number.isNaN(r.ratio) ? '—' : r.ratio.toFixed(2) + '×'} | ${r.target ? `${r.target}: ${r.ok ? 'met' : '**missed**'}` : ''} |`);
  return lines.join('\n');
}

const loadStart = loadavg()[0];

async function main(): Promise<void> {
  const started = new Date();
  process.stderr.write(`proofrig bench${quick ? ' --quick' : ''}\n`);
  const rtt = await wsRtt(N_LAT);
  const rttP50 = pct(rtt, 50);
  const rttP99 = pct(rtt, 99);
  row({ group: 'baseline', what: 'raw ws round trip p50 / p99 (loopback)', value: rttP50, unit: 'ms', baseline: 'p99', base: rttP99 });
  if (part('latency')) await latency(rttP50, rttP99);
  if (part('capacity')) await capacityPart();
  if (part('e2e')) await e2ePart();
  if (part('journal')) {
    process.stderr.write('journal\n');
    const jb = journalBench();
    row({ group: 'journal', what: `commands/s through the journal, one at a time: submitted+sent, ack, result = 3 commits (${jb.sync})`, value: jb.single, unit: '/s', baseline: 'raw better-sqlite3 INSERT/s, one per commit, same settings', base: jb.rawSingle });
    row({ group: 'journal', what: `commands/s through the journal, ${JOURNAL_BATCH} in flight: one commit per turn holds ${JOURNAL_BATCH} submits + the previous ${JOURNAL_BATCH} acks and results (${jb.sync})`, value: jb.batched, unit: '/s', baseline: `raw better-sqlite3 INSERT/s, ${JOURNAL_BATCH} per commit, same settings`, base: jb.rawBatched, target: '≥ 0.5×', ok: jb.batched / jb.rawBatched >= 0.5 });
    row({ group: 'journal', what: `the journal's own record through plain SQL, ${JOURNAL_BATCH} in flight (INSERT of the sent row + UPDATE to its end, the journal's table and indexes, same settings): commands/s`, value: jb.recordBatched, unit: '/s', baseline: `raw better-sqlite3 INSERT/s, ${JOURNAL_BATCH} per commit`, base: jb.rawBatched });
    row({ group: 'journal', what: `commands/s through the journal, ${JOURNAL_BATCH} in flight, against its own record through plain SQL (the journal's overhead over what its record costs SQLite)`, value: jb.batched, unit: '/s', baseline: 'the record through plain SQL, same batches', base: jb.recordBatched });
    row({ group: 'journal', what: 'database bytes per command (file after a checkpoint ÷ commands written): the journal', value: jb.bytes.journal, unit: 'B', baseline: 'the raw row', base: jb.bytes.raw });
    notes.push(
      `Durability bound: every commit waits for an fsync of the WAL on both sides; one fsync'd single-row commit ran ${fmt(jb.rawSingle)}/s on this disk in this run. ` +
        'A command needs two commits in its own chain (submitted+sent before the cmd frame; the result before anyone hears of it), so one at a time the journal is bound near half the raw single-row rate. ' +
        'The host group-commits: every journal write of one event-loop turn (submits and device frames of all devices) shares one COMMIT, so at many devices one fsync carries many commands; ' +
        `the batched journal row compares that with raw inserts given the same batch (${JOURNAL_BATCH} rows per commit), i.e. the journal's SQL work per command against one bare row.`,
    );
    notes.push(
      `What bounds the batched journal row: the journal's record (${fmt(jb.bytes.journal)} B of database per command: ids, args, the evidence, the device's state snapshot, the lifecycle history, and its index entries) ` +
        `against the bare row's ${fmt(jb.bytes.raw)} B. Written with plain SQL and nothing else (one INSERT and one UPDATE per command, same batches and settings) that record runs at ` +
        `${(jb.recordBatched / jb.rawBatched).toFixed(2)}× the bare row's rate, so no journal writing it reaches 0.5× of that row; the journal itself runs at ${(jb.batched / jb.recordBatched).toFixed(2)}× its record's plain SQL (its staging, copies and status views).`,
    );
  }
  if (part('motion')) {
    process.stderr.write('motion\n');
    const mv = await move();
    row({ group: 'motion', what: '150 mm move: submit → completed', value: mv.ms, unit: 'ms', baseline: 'its motion profile (motion.ts)', base: mv.profileMs });
  }
  if (part('cold')) await coldPart();
  if (part('firmware')) await firmwarePart();
  finish(started);
}

async function capacityPart(): Promise<void> {
  process.stderr.write('capacity: protocol-level load generator in another process\n');
  for (const n of quick ? [1, 10, 100] : [1, 10, 100, 1000]) {
    const raw = await rawWs(n, CAP_MS);
    const c = await capacity(n);
    row({ group: 'capacity', what: `verified commands/s, core API, ${n} device(s)`, value: c.rate, unit: '/s', baseline: `raw ws req/resp over ${n} socket(s)`, base: raw,
      ...(n === 100 ? { target: '≥ 10,000/s', ok: c.rate >= 10000 } : {}) });
    const echoUs = 1e6 / raw;
    row({ group: 'capacity', what: `host CPU per command, ${n} device(s)`, value: c.cpuUs, unit: 'µs', baseline: 'raw ws wall µs per req/resp', base: echoUs });
  }
  const rawMcp = await rawWs(100, CAP_MS);
  // What an agent gets from one tool call: relay_set with wait_ms answers with the verified outcome.
  // The host's MCP capacity: protocol-level clients (as the device load generator is for devices), so
  // what the machine's cores spend is the host's. Then the same with the SDK's own client, as agents use it.
  const mcp = await capacityMcp(100, true, true);
  row({ group: 'capacity', what: 'verified commands/s, MCP over HTTP, 100 devices: relay_set with wait_ms (one call each), protocol-level clients', value: mcp.rate, unit: '/s', baseline: 'raw ws req/resp over 100 sockets', base: rawMcp, target: '≥ 2,000/s', ok: mcp.rate >= 2000 });
  row({ group: 'capacity', what: 'host CPU per command, MCP over HTTP (relay_set with wait_ms), 100 devices', value: mcp.hostUs, unit: 'µs', baseline: 'the protocol-level clients\' CPU per command (own process)', base: mcp.clientUs });
  const sdk = await capacityMcp(100, true);
  row({ group: 'capacity', what: 'verified commands/s, MCP over HTTP, 100 devices: relay_set with wait_ms, the MCP SDK\'s client', value: sdk.rate, unit: '/s', baseline: 'raw ws req/resp over 100 sockets', base: rawMcp });
  // On a small machine the SDK's client shares the cores with the host: its CPU per call says how much.
  row({ group: 'capacity', what: 'host CPU per command, MCP over HTTP with the SDK\'s client, 100 devices', value: sdk.hostUs, unit: 'µs', baseline: 'the SDK clients\' CPU per command (own process)', base: sdk.clientUs });
  const mcpPoll = await capacityMcp(100, false, true);
  row({ group: 'capacity', what: 'verified commands/s, MCP over HTTP, 100 devices: relay_set, then get_action_status (two calls each), protocol-level clients', value: mcpPoll.rate, unit: '/s', baseline: 'raw ws req/resp over 100 sockets', base: rawMcp });
  const nIdle = quick ? 200 : 1000;
  const rss = await idleRss(nIdle);
  row({ group: 'capacity', what: `host RSS per connected idle device (${nIdle} devices, \`proofrig serve\` process)`, value: rss.perDevice / 1024, unit: 'KB', baseline: 'the same host with no device', base: rss.base / 1024,
    target: '≤ 64 KB', ok: rss.perDevice / 1024 <= 64 });

}

async function e2ePart(): Promise<void> {
  process.stderr.write('end to end: simulated rigs (vm firmware) in another process\n');
  const nRigs = quick ? 10 : 50;
  const e2e = await endToEnd(nRigs);
  const rawRigs = await rawWs(nRigs, CAP_MS);
  row({ group: 'end to end', what: `verified commands/s, ${nRigs} simulated rigs (ch 3)`, value: e2e, unit: '/s', baseline: `raw ws req/resp over ${nRigs} sockets`, base: rawRigs });

}

async function coldPart(): Promise<void> {
  process.stderr.write('cold start\n');
  const cs = await coldStart();
  row({ group: 'cold start', what: '`proofrig serve` → MCP answering', value: cs.serve, unit: 'ms', baseline: 'bare node http server + MCP SDK import', base: cs.bare + cs.sdk, target: '≤ 1.5×', ok: cs.serve <= 1.5 * (cs.bare + cs.sdk) });
  row({ group: 'cold start', what: '`proofrig serve --sim` → device online', value: cs.online, unit: 'ms', baseline: 'bare node http server + MCP SDK import', base: cs.bare + cs.sdk });

}

async function firmwarePart(): Promise<void> {
  const fw = firmwareSize();
  row({ group: 'firmware', what: 'firmware file (minified), gzip -9', value: fw.gzip, unit: 'B', baseline: 'minified bytes', base: fw.raw });
  const esp = process.env.PROOFRIG_ESPRUINO;
  if (esp) {
    const r = await espruino(esp);
    if (typeof r === 'string') notes.push(`Espruino: ${r}`);
    else {
      row({ group: 'firmware', what: 'real Espruino: firmware load + boot (no config) time', value: r.loadMs, unit: 'ms', baseline: '—', base: NaN });
      row({ group: 'firmware', what: 'real Espruino: JsVars used after load (process.memory().usage)', value: r.usage, unit: 'vars', baseline: 'process.memory().total', base: r.total });
      await espruinoCommands();
    }
  } else notes.push('PROOFRIG_ESPRUINO not set: no real-interpreter figures.');
}

/** CPU time (ms) a process has used so far: utime + stime from /proc (in USER_HZ ticks, 100 per second). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' '); // the fields after the command name: state, ppid, ...
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** The pid of the Espruino interpreter `bin` that the process `parent` started (setpriv execs it), if /proc shows one. */
function interpreterPid(parent: number, bin: string): number | undefined {
  try {
    const kids = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return kids.find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0] === bin);
  } catch {
    return undefined;
  }
}

/**
 * The firmware's per-command time on the real Espruino interpreter (Linux build): one relay rig in
 * `proofrig sim --engine espruino`, and as the baseline the same board on the vm engine (`proofrig
 * rigs`), each in a process of its own, on one host. Commands go one at a time through the core API,
 * alternating between the two rigs, so both see the same load on the machine. Then process.memory()
 * of the interpreter, read on its own console (a TCP port, as an ESP32's telnet console).
 */
async function espruinoCommands(): Promise<void> {
  process.stderr.write(`firmware: relay rig on the real interpreter (proofrig sim --engine espruino) and on the vm (proofrig rigs), ${N_ESP} commands per channel each\n`);
  const h = await startHost();
  // PROOFRIG_ESPRUINO reaches the child with the rest of the environment.
  const espRig = spawn(process.execPath, [CLI, 'sim', '--engine', 'espruino', '--board', RELAY_BOARD, '--device-id', 'esp-1', '--console-port', '0', '--host', h.ws, '--db', h.db, '--quiet'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(espRig);
  let out = '';
  espRig.stdout!.setEncoding('utf8');
  espRig.stdout!.on('data', (d: string) => (out += d));
  const vmRig = rigsProcess(['--board', RELAY_BOARD, '--count', '1', '--id-prefix', 'fwvm', '--host', h.ws, '--db', h.db, '--seed', '3']);
  const ids = { esp: 'esp-1', vm: 'fwvm-1' } as const;
  try {
    const online = (id: string, c: ChildProcess) => () => {
      if (c.exitCode !== null) throw new Error(`bench: the process of ${id} exited (${c.exitCode}) ${out.slice(-300)}`);
      return h.running.core.devices.session(id) !== undefined;
    };
    await until(online(ids.esp, espRig), 30000, 'the rig on the real interpreter online');
    await until(online(ids.vm, vmRig), 20000, 'the vm rig online');
    const port = Number(/Espruino console: tcp:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
    if (!port) throw new Error(`bench: proofrig sim did not say its console port: ${out.slice(-300)}`);
    const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
    const atDeviceMs = deviceShare(h.running, [ids.esp, ids.vm]);
    const interp = interpreterPid(espRig.pid!, process.env.PROOFRIG_ESPRUINO!);
    const cpu0 = interp === undefined ? 0 : cpuMs(interp);
    const wall0 = performance.now();
    // ch 4: settle 0 ms, nothing observes it (ends unverified); ch 3: settle 2 ms, then a pin read-back (completed).
    for (const [ch, expected] of [[4, 'unverified'], [3, 'completed']] as const) {
      const r = board.relays.find((x) => x.ch === ch)!;
      const t = { esp: { core: [] as number[], dev: [] as number[] }, vm: { core: [] as number[], dev: [] as number[] } };
      for (let i = 0; i < N_ESP; i++)
        for (const k of ['esp', 'vm'] as const) {
          const t0 = performance.now();
          const c = await h.running.core.submit({ device_id: ids[k], action: 'relay.set', args: { ch, on: i % 2 === 0 } });
          const s = await h.running.core.waitTerminal(c.command_id, 20000);
          if (s?.state !== expected) throw new Error(`bench: ch ${ch} on ${ids[k]} ended ${s?.state ?? 'not terminal'} ${s?.error_code ?? ''} ${s?.detail ?? ''} (expected ${expected})`);
          t[k].core.push(performance.now() - t0);
          t[k].dev.push(atDeviceMs(c.request_id));
        }
      const what = `ch ${ch} (settle ${r.settle_ms} ms, included; ${r.feedback.kind === 'none' ? 'no feedback, ends unverified' : 'pin read-back, ends completed'})`;
      const base = `the vm rig (same firmware file in a Node vm, own process), same ${N_ESP} commands`;
      row({ group: 'firmware', what: `real Espruino (Linux build): ${what} cmd written → res read, p50`, value: pct(t.esp.dev, 50), unit: 'ms', baseline: `${base}, p50`, base: pct(t.vm.dev, 50) });
      row({ group: 'firmware', what: `real Espruino (Linux build): ${what} cmd written → res read, p99 of ${N_ESP}`, value: pct(t.esp.dev, 99), unit: 'ms', baseline: `${base}, p99`, base: pct(t.vm.dev, 99) });
      row({ group: 'firmware', what: `real Espruino (Linux build): ${what} core API submit → terminal, p50`, value: pct(t.esp.core, 50), unit: 'ms', baseline: `${base}, p50`, base: pct(t.vm.core, 50) });
    }
    const interpCpu = interp === undefined ? undefined : { cpu: cpuMs(interp) - cpu0, wall: performance.now() - wall0 };
    const mem = await consoleMemoryReading(port);
    row({ group: 'firmware', what: `real Espruino: JsVars in use after ${2 * N_ESP} commands (process.memory().usage, lowest of 3 idle readings on its console)`, value: mem.usage, unit: 'vars', baseline: 'process.memory().total', base: mem.total });
    notes.push(
      'Real Espruino per-command rows: the firmware file run by Espruino\'s Linux build (`proofrig sim --engine espruino`) against the same board on the vm engine (`proofrig rigs`), ' +
        'each in its own process on one host, commands one at a time through the core API, alternating between the two rigs; both sides include the physical time the firmware waits (settle). ' +
        'What the interpreter figure is: Espruino\'s parse/run cost of the real firmware file on this machine\'s CPU, plus the `.boot0` pin shim, Espruino\'s own sockets and Linux loopback TCP. ' +
        'What it is not: an ESP32\'s timing. The Linux build has no peripherals: pins go through the `.boot0` JavaScript shim (each `digitalRead`, as in the ch 3 read-back, is a ~1 ms blocking round trip through a named pipe), ' +
        'and it reads code kept in Storage (the firmware) with an fopen/fread per chunk where an ESP32 maps flash (about 3× the CPU per firmware callback, see "The Espruino tier"); no Wi-Fi stack either.' +
        (interpCpu
          ? ` The interpreter process used ${(interpCpu.cpu / 1000).toFixed(1)} s of CPU in the ${(interpCpu.wall / 1000).toFixed(1)} s of the commands (${Math.round((100 * interpCpu.cpu) / interpCpu.wall)} % of one core, from /proc): ` +
            'as the rig runs it, its idle loop polls its sockets instead of sleeping, so it holds a core even between commands, and the host and the vm rig share what is left.'
          : ' (The interpreter process was not found under /proc: its CPU time is not reported.)'),
    );
  } finally {
    await stop(espRig);
    await stop(vmRig);
    await h.running.close();
  }
}

function finish(started: Date): void {
  const load = { start: loadStart, end: loadavg()[0] };
  const results = { started: started.toISOString(), quick, node: process.version, cpus: cpus().length, loadavg: load, rows, notes };
  // A partial run (--only) must not replace the full run's figures.
  writeFileSync(join(ROOT, 'bench', only ? 'results.partial.json' : 'results.json'), JSON.stringify(results, null, 2) + '\n');
  const md = `Run ${started.toISOString()}${quick ? ' (--quick)' : ''}, Node ${process.version}, loopback, ${cpus().length} CPUs, 1-minute load average ${load.start.toFixed(1)} at the start and ${load.end.toFixed(1)} at the end (the machine was shared). Ratio = value ÷ baseline.\n\n${table()}\n${notes.length ? '\n' + notes.map((n) => `- ${n}`).join('\n') + '\n' : ''}`;
  process.stdout.write(md);
  const readme = join(ROOT, 'docs', 'performance.md');
  const text = only ? '' : readFileSync(readme, 'utf8');
  const a = '<!-- bench:start -->';
  const b = '<!-- bench:end -->';
  if (text.includes(a) && text.includes(b)) writeFileSync(readme, text.slice(0, text.indexOf(a) + a.length) + '\n' + md + text.slice(text.indexOf(b)));
  killAll();
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`bench failed: ${(e as Error).stack}\n`);
  killAll();
  process.exit(1);
});
