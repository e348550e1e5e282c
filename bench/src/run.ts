// npm run bench: one run on loopback, every figure next to a baseline measured in the same run and their
// ratio. Writes bench/results.json, prints a markdown table and puts it in docs/performance.md between markers.
// `--quick` for a short run. Devices live in other processes: a protocol-level load generator
// (bench/src/loadgen.ts) for host capacity, `proofrig rigs` (the built firmware in vm contexts) for
// latency and end-to-end figures.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type BoardDef } from '@proofrig/protocol';
import { consoleMemoryReading } from './memory-load.js';
import { ROOT, CLI, RELAY_BOARD, quick, N_LAT, N_ESP, CAP_MS, only, part, rows, notes, row, fmt, pct, until, children, killAll, startHost, rigsProcess, stop, wsRtt, deviceShare } from './harness.js';
import { latency } from './latency.js';
import { rawWs, capacity, capacityMcp, idleRss } from './capacity.js';
import { endToEnd } from './end-to-end.js';
import { JOURNAL_BATCH, journalBench } from './journal-bench.js';
import { move } from './motion.js';
import { coldStart } from './cold-start.js';
import { firmwareSize, espruino } from './firmware.js';
import { firmwareCostRows } from './firmware-cost.js';

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
      await firmwareCostRows(row, notes);
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
