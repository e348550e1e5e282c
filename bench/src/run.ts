// npm run bench: one run on loopback, every figure next to a baseline measured in the same run and their
// ratio. Writes bench/results.json, prints a markdown table and puts it in README.md between markers.
// `--quick` for a short run. Devices live in other processes: a protocol-level load generator
// (bench/src/loadgen.ts) for host capacity, `proofrig rigs` (the built firmware in vm contexts) for
// latency and end-to-end figures.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
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
import { serve, type Running } from '../../host/src/serve.js';
import { Journal, blankCommand, type CommandRecord } from '../../host/src/core/journal.js';
import { newSecret } from '../../host/src/core/ids.js';
import { findToken } from '../../host/src/call.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIST = join(ROOT, 'bench', 'dist');
const CLI = join(ROOT, 'host', 'bin', 'proofrig.js');
const RELAY_BOARD = join(ROOT, 'boards', 'relay-rig-4ch.json');
const STEPPER_BOARD = join(ROOT, 'boards', 'stepper-rig.json');
const quick = process.argv.includes('--quick');
const N_LAT = quick ? 60 : 300;
const CAP_MS = quick ? 1000 : 3000;
const MCP_TOKEN = process.env.PROOFRIG_MCP_TOKEN;
// --only=latency,capacity,e2e,journal,motion,cold,firmware runs just those parts (the README table is then left alone).
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
  let tCmd = 0;
  let tRes = 0;
  const session = h.running.core.devices.session('lat-1') as unknown as { send(f: { t: string }): void };
  const send = session.send.bind(session);
  session.send = (f) => {
    if (f.t === 'cmd') tCmd = performance.now();
    send(f);
  };
  const cmds = h.running.core.commands as unknown as { result(...a: unknown[]): void };
  const result = cmds.result.bind(cmds);
  cmds.result = (...a) => {
    tRes = performance.now();
    result(...a);
  };
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
      atDevice.push(tRes - tCmd);
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
// every commit fsynced) and get the same batching opportunity, measured twice:
// - one at a time (batch size 1): the journal as the host drives it for a single device with one command
//   in flight: submitted+sent commit before the cmd frame, then the ack and the result each in their own
//   turn; the raw side commits every INSERT on its own. The rule (on disk before anyone is told) needs at
//   least two commits per command here, so this ratio is bounded near 0.5× by construction.
// - batched (B commands in flight, as at B devices): every commit of the journal holds B submits
//   (submitted+sent) and the ack and result of the B commands before them, which is what one event-loop
//   turn of the host holds in steady state; the raw side commits B INSERTs per transaction. One commit per
//   B commands on both sides: the ratio is the journal's SQL work per command against one bare row.
// The raw row is the smallest honest record of a command (ids, device, action, args, state, time).

const JOURNAL_BATCH = 100;

function journalBench(): { single: number; rawSingle: number; batched: number; rawBatched: number; sync: string } {
  const n = quick ? 300 : 1000;
  const rounds = quick ? 10 : 30;
  const jdb = tmpDb();
  const j = new Journal(jdb);
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  j.provision('dev', 'secret', board);
  // The settings the journal really runs with, read back from its own connection. Its SQLite runs
  // synchronous=NORMAL and the journal fsyncs the WAL after every COMMIT itself (on the bench's virtual
  // path, no deferral: on this thread, before the step returns), which is what synchronous=FULL does in
  // WAL mode; the raw side gets FULL, the same guarantee.
  const jconn = (j as unknown as { db: Database.Database }).db;
  const mode = jconn.pragma('journal_mode', { simple: true }) as string;
  const jsync = Number(jconn.pragma('synchronous', { simple: true }));
  if (mode !== 'wal' || jsync !== 1) throw new Error(`bench: the journal runs journal_mode=${mode}, synchronous=${jsync}; this comparison assumes wal + NORMAL with its own WAL fsync`);
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
  const rdb = new Database(tmpDb());
  rdb.pragma(`journal_mode = ${mode}`);
  rdb.pragma('synchronous = FULL');
  rdb.exec('CREATE TABLE t (id TEXT PRIMARY KEY, device TEXT, rid TEXT, action TEXT, args TEXT, state TEXT, at INTEGER)');
  const ins = rdb.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)');
  const one = (i: number) => ins.run(`cmd_${i}`, 'dev', `req_${i}`, 'relay.set', '{"ch":3,"on":true}', 'submitted', i);
  const many = rdb.transaction((from: number) => {
    for (let k = 0; k < JOURNAL_BATCH; k++) one(from + k);
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
      for (let k = i; k < i + 50; k++) one(k);
    });
  }
  const single = n / (jMs / 1000);
  const rawSingle = n / (rMs / 1000);
  // Batched: round r commits the submits of its B commands with the ack and result of round r-1's.
  const base = n;
  jMs = 0;
  rMs = 0;
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
    if (r < rounds) rMs += time(() => many(base + r * JOURNAL_BATCH));
  }
  const batched = (rounds * JOURNAL_BATCH) / (jMs / 1000);
  const rawBatched = (rounds * JOURNAL_BATCH) / (rMs / 1000);
  j.close();
  rdb.close();
  return { single, rawSingle, batched, rawBatched, sync: `WAL, every commit fsynced: the journal's own WAL fsync / raw synchronous=${sync}` };
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
    notes.push(
      `Durability bound: every commit waits for an fsync of the WAL on both sides; one fsync'd single-row commit ran ${fmt(jb.rawSingle)}/s on this disk in this run. ` +
        'A command needs two commits in its own chain (submitted+sent before the cmd frame; the result before anyone hears of it), so one at a time the journal is bound near half the raw single-row rate. ' +
        'The host group-commits: every journal write of one event-loop turn (submits and device frames of all devices) shares one COMMIT, so at many devices one fsync carries many commands; ' +
        `the batched journal row compares that with raw inserts given the same batch (${JOURNAL_BATCH} rows per commit), i.e. the journal's SQL work per command against one bare row.`,
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
      notes.push('Espruino per-command time is not measured yet (the interpreter run has no host link).');
    }
  } else notes.push('PROOFRIG_ESPRUINO not set: no real-interpreter figures.');
}

function finish(started: Date): void {
  const load = { start: loadStart, end: loadavg()[0] };
  const results = { started: started.toISOString(), quick, node: process.version, cpus: cpus().length, loadavg: load, rows, notes };
  writeFileSync(join(ROOT, 'bench', 'results.json'), JSON.stringify(results, null, 2) + '\n');
  const md = `Run ${started.toISOString()}${quick ? ' (--quick)' : ''}, Node ${process.version}, loopback, ${cpus().length} CPUs, 1-minute load average ${load.start.toFixed(1)} at the start and ${load.end.toFixed(1)} at the end (the machine was shared). Ratio = value ÷ baseline.\n\n${table()}\n${notes.length ? '\n' + notes.map((n) => `- ${n}`).join('\n') + '\n' : ''}`;
  process.stdout.write(md);
  const readme = join(ROOT, 'README.md');
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
