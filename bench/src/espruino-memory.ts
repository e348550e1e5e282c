// npm run bench:memory: the firmware's memory on the real Espruino interpreter, as process.memory()
// JsVar counts, on the Linux build (PROOFRIG_ESPRUINO) and on its ESP32-format variant (16,383
// JsVars of 14 bytes, ESPRUINO_ESP32_MEM=1 scripts/build-espruino.sh; found through
// PROOFRIG_ESPRUINO_ESP32MEM or its default cache folder; where the kernel refuses 32-bit programs
// it runs under qemu-i386, which changes no JsVar count). The 4-channel relay rig boots from
// Storage, then takes a mixed load through the host core (bench/src/memory-load.ts): readings
// after boot, once the dedupe ring has filled, the highest during bursts, after more load and after
// reconnects. Then each other example board (stepper rig, climate rig) boots and does rounds of
// every kind of command it has (bench/src/memory-boards.ts): after boot, the highest reading during
// the work (the low-water mark of free JsVars) and after it. Writes bench/espruino-memory.json and
// the block between its markers in docs/simulator.md and docs/performance.md.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { DEDUPE_RING_SIZE } from '@proofrig/protocol';
import { serve } from '@proofrig/host/tools';
import { memoryNow, memoryReading, mixedCommands, reconnects, type Mem } from './memory-load.js';
import { BOARD_WORK, boardWork } from './memory-boards.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BOARD = join(ROOT, 'boards', 'relay-rig-4ch.json');
const RIG = 'relay-rig-4ch';
const FIRMWARE = join(ROOT, 'firmware', 'dist', 'proofrig.js');
const ESP32MEM_DEFAULT = join(homedir(), '.cache/proofrig/espruino-c5ff787b-esp32mem/espruino-c5ff787b/bin/espruino');
const LOAD_FRAMES = Number(process.env.MEMORY_FRAMES ?? 300);
const RECONNECTS = Number(process.env.MEMORY_RECONNECTS ?? 10);
const BURSTS = 3;
const BURST_FRAMES = 20;
/** Rounds of each board's work (bench/src/memory-boards.ts says how many by default). */
const ROUNDS = process.env.MEMORY_ROUNDS ? Number(process.env.MEMORY_ROUNDS) : undefined;
const OTHER_BOARDS = ['stepper-rig', 'climate-rig'];

interface Figures {
  build: string;
  binary: string;
  blocksize: number;
  total: number;
  boot: number;
  ringFull: number;
  peak: number;
  afterLoad: number;
  afterReconnects: number;
  frames: number;
  reconnects: number;
}

/** One example board booted and put to work: JsVars in use after boot, at the highest reading during the work, after it. */
interface BoardFigures {
  build: string;
  board: string;
  blocksize: number;
  total: number;
  boot: number;
  peak: number;
  after: number;
  commands: number;
  /** Commands that ended failed, by error code. */
  failed: Record<string, number>;
  rounds: number;
}

/**
 * A command line for the interpreter: the binary itself, or, for a 32-bit binary the kernel refuses
 * to run ("Exec format error"), a script that runs it under qemu-i386 (JsVar counts do not depend on
 * the CPU; timings from it mean nothing).
 */
function runnable(bin: string): string {
  // (Node runs a file the kernel refuses through /bin/sh instead of failing: ask the interpreter to answer.)
  const probe = (cmd: string, args: string[]) => String(spawnSync(cmd, [...args, '-e', "print('proofrig-probe')"], { input: '', timeout: 30000 }).stdout).includes('proofrig-probe');
  if (probe(bin, [])) return bin;
  if (!probe('qemu-i386', [bin])) throw new Error(`${bin} does not run here, nor under qemu-i386 (a 32-bit build needs a kernel that runs 32-bit programs, or apt-get install -y qemu-user)`);
  const wrapper = join(mkdtempSync(join(tmpdir(), 'proofrig-esp32mem-')), 'espruino');
  writeFileSync(wrapper, `#!/bin/sh\nexec qemu-i386 '${bin}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  process.stderr.write(`  ${bin}: 32-bit, run under qemu-i386\n`);
  return wrapper;
}

async function online(running: Awaited<ReturnType<typeof serve>>, rig: string, build: string): Promise<void> {
  const end = Date.now() + 120000;
  while (!running.core.devices.view(rig)?.online) {
    if (Date.now() > end) throw new Error(`${build}: ${rig} did not come online`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function measureBoard(build: string, binary: string, rig: string): Promise<BoardFigures> {
  process.env.PROOFRIG_ESPRUINO = binary;
  const running = await serve({
    db: ':memory:', port: 0, sims: [{ boardFile: join(ROOT, 'boards', rig + '.json') }], firmwareFile: FIRMWARE, logger: pino({ level: 'silent' }),
    heartbeatMs: 1000, offlineGraceMs: 8000, seed: 7, engine: 'espruino',
  });
  try {
    await online(running, rig, build);
    const boot = await memoryReading(running, rig);
    let peak = boot;
    const rounds = ROUNDS ?? BOARD_WORK[rig]!.rounds;
    const w = await boardWork(running, rig, rounds, (m) => {
      if (m.usage > peak.usage) peak = m;
    });
    const after = await memoryReading(running, rig);
    const f: BoardFigures = {
      build, board: rig, blocksize: boot.blocksize ?? 0, total: boot.total, boot: boot.usage, peak: peak.usage, after: after.usage,
      commands: w.commands, failed: w.failed, rounds,
    };
    process.stderr.write(`  ${JSON.stringify(f)}\n`);
    return f;
  } finally {
    await running.close();
  }
}

async function measure(build: string, binary: string): Promise<Figures> {
  process.env.PROOFRIG_ESPRUINO = binary;
  const running = await serve({
    db: ':memory:', port: 0, sims: [{ boardFile: BOARD }], firmwareFile: FIRMWARE, logger: pino({ level: 'silent' }),
    heartbeatMs: 1000, offlineGraceMs: 8000, seed: 7, engine: 'espruino',
  });
  try {
    await online(running, RIG, build);
    const boot = await memoryReading(running, RIG);
    const load = mixedCommands(running, RIG);
    await load.run(4 * DEDUPE_RING_SIZE);
    const ringFull = await memoryReading(running, RIG);
    let peak: Mem = ringFull;
    const top = (m: Mem) => {
      if (m.usage > peak.usage) peak = m;
    };
    for (let i = 0; i < BURSTS; i++) top(await load.burst(BURST_FRAMES));
    await load.run(Math.max(0, LOAD_FRAMES - load.totals().frames), { peek: top, peekEvery: 10 });
    const afterLoad = await memoryReading(running, RIG);
    await reconnects(running, RIG, RECONNECTS);
    const afterReconnects = await memoryReading(running, RIG);
    top(await memoryNow(running, RIG));
    const f: Figures = {
      build, binary, blocksize: boot.blocksize ?? 0, total: afterReconnects.total, boot: boot.usage, ringFull: ringFull.usage, peak: peak.usage,
      afterLoad: afterLoad.usage, afterReconnects: afterReconnects.usage, frames: load.totals().frames, reconnects: RECONNECTS,
    };
    process.stderr.write(`  ${JSON.stringify(f)}\n`);
    return f;
  } finally {
    await running.close();
  }
}

const kb = (n: number) => (n / 1024).toFixed(1);
const roundsOf = (b: BoardFigures[], rig: string) => b.find((x) => x.board === rig)?.rounds ?? 0;
const failures = (f: Record<string, number>) => {
  const k = Object.keys(f);
  return k.length ? ' (' + k.map((c) => `${f[c]} failed ${c}`).join(', ') + ')' : '';
};

function markdown(started: Date, fw: { raw: number; gzip: number }, rows: Figures[], notes: string[], boards: BoardFigures[] = []): string {
  const lines = [
    `Measured ${started.toISOString().slice(0, 10)} by \`npm run bench:memory\` (firmware file ${fw.raw.toLocaleString('en-US')} B minified, ${fw.gzip.toLocaleString('en-US')} B gzip -9; ` +
      `4-channel relay rig; ${rows[0]?.frames ?? 0} command and query frames, ${BURSTS} bursts of ${BURST_FRAMES} frames, ${RECONNECTS} reconnects). ` +
      'JsVars in use (`process.memory().usage`, after Espruino\'s garbage collection), with the rig idle except for "peak":',
    '',
    '| interpreter | JsVar size, store | after boot | dedupe ring full | peak during load and bursts | after the load | after reconnects | peak in bytes | free at peak |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const n = (x: number) => x.toLocaleString('en-US');
  for (const r of rows)
    lines.push(
      `| ${r.build} | ${r.blocksize} B, ${n(r.total)} | ${n(r.boot)} | ${n(r.ringFull)} | ${n(r.peak)} | ${n(r.afterLoad)} | ${n(r.afterReconnects)} | ${kb(r.peak * r.blocksize)} KB | ${n(r.total - r.peak)} |`,
    );
  const esp = rows.find((r) => r.blocksize === 14);
  if (esp) {
    lines.push(
      '',
      `On an ESP32 without PSRAM, Espruino sizes its JsVar store once at boot to (free heap − 40,000 B) / 14, at most 16,383 ` +
        `(\`targets/esp32/main.c\`). The firmware's peak of ${esp.peak.toLocaleString('en-US')} JsVars is ${kb(esp.peak * 14)} KB of that store: ` +
        `the chip must have at least ${kb(40000 + esp.peak * 14)} KB of free heap when Espruino starts just to hold it, and every byte above that is headroom ` +
        `(the 16,383-JsVar maximum, ${kb(16383 * 14)} KB, needs ${kb(40000 + 16383 * 14)} KB free; Wi-Fi and sockets take their buffers from the 40,000 B left outside the store).`,
    );
  }
  if (boards.length) {
    const relay = rows.map((r) => ({ build: r.build, board: RIG, blocksize: r.blocksize, total: r.total, boot: r.boot, peak: r.peak, after: r.afterReconnects, commands: r.frames, failed: {}, rounds: 0 }));
    const order = [RIG, ...OTHER_BOARDS];
    const all = [...relay, ...boards].sort((x, y) => order.indexOf(x.board) - order.indexOf(y.board));
    const bytes = (x: number, b: number) => (b === 14 ? ` (${kb(x * b)} KB)` : '');
    lines.push(
      '',
      'Each example board booted from Storage on the same interpreters, then put to work through the host core, one command at a time, each outcome checked ' +
        '(a reading after every command and every 100 ms while one runs, each after garbage collection); "free" is what is left of the store, "lowest free" the store minus the highest reading (the low-water mark); ' +
        'the store is the full 16,383 JsVars on the 14-byte format, which an ESP32 allocates only with at least 263 KB of free heap at boot (see above). ' +
        `Stepper rig, ${roundsOf(boards, 'stepper-rig')} rounds, ${BOARD_WORK['stepper-rig']!.what}; climate rig, ${roundsOf(boards, 'climate-rig')} rounds, ${BOARD_WORK['climate-rig']!.what}; ` +
        "the relay rig's row is the load above (its commands are the frames). Bytes for the 14-byte format:",
      '',
      '| board | interpreter | after boot | free at boot | peak during work | lowest free | after the work | commands |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const b of all)
      lines.push(
        `| ${b.board} | ${b.build} | ${n(b.boot)}${bytes(b.boot, b.blocksize)} | ${n(b.total - b.boot)}${bytes(b.total - b.boot, b.blocksize)} | ${n(b.peak)}${bytes(b.peak, b.blocksize)} | ` +
          `${n(b.total - b.peak)}${bytes(b.total - b.peak, b.blocksize)} | ${n(b.after)} | ${n(b.commands)}${failures(b.failed)} |`,
      );
  }
  for (const n of notes) lines.push('', n);
  return lines.join('\n') + '\n';
}

function writeReadme(md: string): void {
  for (const doc of ['simulator.md', 'performance.md']) {
    const readme = join(ROOT, 'docs', doc);
    const text = readFileSync(readme, 'utf8');
    const a = '<!-- espruino-memory:start -->';
    const b = '<!-- espruino-memory:end -->';
    if (text.includes(a) && text.includes(b)) writeFileSync(readme, text.slice(0, text.indexOf(a) + a.length) + '\n' + md + text.slice(text.indexOf(b)));
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--render')) {
    // Render the docs/simulator.md block again from the last run's bench/espruino-memory.json (no new measurement).
    const last = JSON.parse(readFileSync(join(ROOT, 'bench', 'espruino-memory.json'), 'utf8')) as {
      started: string; firmware: { raw: number; gzip: number }; rows: Figures[]; notes: string[]; boards?: BoardFigures[];
    };
    const md = markdown(new Date(last.started), last.firmware, last.rows, last.notes, last.boards);
    process.stdout.write(md);
    writeReadme(md);
    process.exit(0);
  }
  const started = new Date();
  const src = readFileSync(FIRMWARE);
  const fw = { raw: src.length, gzip: gzipSync(src, { level: 9 }).length };
  const builds: [string, string | undefined][] = [
    ['Linux build (64-bit)', process.env.PROOFRIG_ESPRUINO],
    ['ESP32 JsVar format (`ESPRUINO_ESP32_MEM=1`)', process.env.PROOFRIG_ESPRUINO_ESP32MEM ?? ESP32MEM_DEFAULT],
  ];
  const rows: Figures[] = [];
  const boards: BoardFigures[] = [];
  const notes: string[] = [];
  for (const [name, bin] of builds) {
    if (!bin || !existsSync(bin)) {
      notes.push(`${name}: no interpreter (${bin ?? 'PROOFRIG_ESPRUINO unset'}); not measured.`);
      continue;
    }
    process.stderr.write(`${name}: ${bin}\n`);
    const run = runnable(bin);
    rows.push({ ...(await measure(name, run)), binary: bin });
    for (const b of OTHER_BOARDS) boards.push(await measureBoard(name, run, b));
  }
  const md = markdown(started, fw, rows, notes, boards);
  process.stdout.write(md);
  writeFileSync(join(ROOT, 'bench', 'espruino-memory.json'), JSON.stringify({ started: started.toISOString(), firmware: fw, rows, boards, notes }, null, 2) + '\n');
  if (rows.length) writeReadme(md);
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`bench:memory failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
