#!/usr/bin/env node
// Mutation check of the firmware's verdict code. The firmware's tests run the built bundle, so
// Stryker's in-process mutation cannot reach it: this script applies a fixed list of mutations
// (one at a time, to a private copy of firmware/ and test/), rebuilds inside the tests, runs the
// firmware suites and counts which mutants the tests kill. Writes reports/mutation/firmware.json.
//   node scripts/mutate-firmware.mjs [--only ID,ID]
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The suites that judge each firmware file (each builds the bundle from the mutated source). */
const TESTS = {
  'relay.ts': ['test/firmware-bundle.test.ts'],
  'exec.ts': ['test/firmware-bundle.test.ts', 'test/firmware-stepper.test.ts', 'test/firmware-stepper-stop.test.ts'],
  'session.ts': ['test/firmware-bundle.test.ts'],
  'dedupe.ts': ['test/firmware-dedupe.test.ts', 'test/firmware-bundle.test.ts'],
  'stepper.ts': ['test/firmware-stepper.test.ts', 'test/firmware-stepper-stop.test.ts'],
};
const ALL_TESTS = [...new Set(Object.values(TESTS).flat())];

// id, file, exact source text, replacement, what the mutant breaks.
const MUTANTS = [
  ['relay-none', 'relay.ts', "if (fb.kind === 'none') return unobserved(", 'if (false) return unobserved(', 'a channel with no feedback is judged by read-back'],
  ['relay-readback', 'relay.ts', 'if (got !== LV[i]) return mismatch(', 'if (false) return mismatch(', 'a pin that reads back wrong is not READBACK_MISMATCH'],
  ['relay-aux', 'relay.ts', 'if (closed !== on) {', 'if (false) {', 'an aux contact that did not follow is not NO_FEEDBACK'],
  ['relay-on', 'relay.ts', 'return auxVerdict(slot, r, fb, CMD[i] === true);', 'return auxVerdict(slot, r, fb, true);', 'switching off expects the contact closed'],
  ['relay-level', 'relay.ts', 'const lv = on ? onLevel(r) : onLevel(r) ^ 1;', 'const lv = onLevel(r);', 'off writes the on level'],
  ['relay-busy', 'relay.ts', 'return SLOT[i] >= 0 ?', 'return SLOT[i] > 0 ?', 'a busy channel in ring slot 0 is not refused'],
  ['relay-settle', 'relay.ts', 'setTimeout(SETTLE[i], r.settle_ms);', 'setTimeout(SETTLE[i], 0);', 'feedback read before the settle time'],
  ['exec-replay', 'exec.ts', 'if (ringState(i) === DONE) sessionSendJson(ringResult(i));', 'if (false) sessionSendJson(ringResult(i));', 'a repeated rid does not replay the stored result'],
  ['exec-stop-dedupe', 'exec.ts', 'if (!a || !a.al || AN[i] !== a.n) {', 'if (!a || AN[i] !== a.n) {', 'a repeated stop is deduplicated away'],
  ['exec-args', 'exec.ts', "if (why) return reject(i, 'INVALID_ARGS', why);", '', 'invalid arguments are executed'],
  ['exec-nothomed', 'exec.ts', "if (a.nh && (why = a.nh(p))) return reject(i, 'NOT_HOMED', why);", '', 'a move on an unhomed axis runs'],
  ['exec-busy', 'exec.ts', "if ((why = a.busy(p))) return reject(i, 'BUSY', why);", '', 'a busy actuator takes a second command'],
  ['exec-rst', 'exec.ts', "o.rst = i < 0 ? 'unknown' : ringState(i) === DONE ? 'done' : 'running';", "o.rst = i < 0 ? 'unknown' : 'done';", 'a running command is reported done to a query'],
  ['dedupe-evict-pending', 'dedupe.ts', 'if (st[i] === DONE && !pend[i]) {', 'if (st[i] === DONE) {', 'an unconfirmed result is evicted'],
  ['dedupe-evict-newest', 'dedupe.ts', 'for (let k = 0; k < ord.length; k++) {', 'for (let k = ord.length - 1; k >= 0; k--) {', 'the newest, not the oldest, confirmed slot is recycled'],
  ['dedupe-rack', 'dedupe.ts', '  pend[i] = false;\n  return true;', '  return true;', 'a confirmed result is never released'],
  ['dedupe-order', 'dedupe.ts', 'fin[o[j - 1]] > fin[i]', 'fin[o[j - 1]] < fin[i]', 'unconfirmed results are re-sent out of order'],
  ['step-tolerance', 'stepper.ts', 'if (err <= s.tolerance_mm + 1e-9)', 'if (err <= s.tolerance_mm * 10)', 'a position off by up to 10x the tolerance completes'],
  ['step-dead-encoder', 'stepper.ts', 'if (n > -2 && n < 2 && stepsIssued[i] >= s.steps_per_mm) {', 'if (false) {', 'a dead encoder ends POSITION_ERROR instead of NO_FEEDBACK'],
  ['step-stall-code', 'stepper.ts', "end(i, 'failed', 'encoder', false, 'MOTOR_STALL',\n    s.axis + ': driver FAULT at '", "end(i, 'failed', 'encoder', false, 'POSITION_ERROR',\n    s.axis + ': driver FAULT at '", 'a stall is reported as a position error'],
  ['step-fault-home', 'stepper.ts', 'if (m !== MOVE && m !== HOME) return;', 'if (m !== MOVE) return;', 'a FAULT while homing is ignored'],
  ['step-limit-dir', 'stepper.ts', 'if (m !== MOVE || (DIR[i] > 0) !== max) return;', 'if (m !== MOVE) return;', 'a switch behind the direction of travel stops the move'],
  ['step-limit-target', 'stepper.ts', 'if (Math.abs(pos(i) - TGT[i]) <= s.tolerance_mm) return awaitVerdict(i);', '', 'a move to the end of travel fails LIMIT_HIT'],
  ['step-fault-first', 'stepper.ts', 'if (!closed(s.driver.fault)) return false;\n  enable(i, false);', 'return false;\n  enable(i, false);', 'a move starts with FAULT already asserted'],
  ['step-cancel-state', 'stepper.ts', "end(i, 'cancelled', 'encoder', false, 'CANCELLED',", "end(i, 'failed', 'encoder', false, 'CANCELLED',", 'a stopped move ends failed, not cancelled'],
  ['step-stop-check', 'stepper.ts', "if (bad) done(stopSlots[k], 'failed', 'encoder', false, 'NO_FEEDBACK',", "if (false) done(stopSlots[k], 'failed', 'encoder', false, 'NO_FEEDBACK',", 'an axis still moving after stop is confirmed stopped'],
  ['session-jitter', 'session.ts', 'Math.round(backoff * (0.8 + 0.4 * (r32() / 4294967296)))', 'Math.round(backoff)', 'reconnect back-off without jitter'],
];

const only = (() => {
  const i = process.argv.indexOf('--only');
  return i > 0 ? new Set(process.argv[i + 1].split(',')) : null;
})();

function sandbox() {
  const dir = mkdtempSync(join(tmpdir(), 'proofrig-fwmut-'));
  for (const d of ['sim', 'host', 'boards', 'scripts', 'package.json', 'tsconfig.json']) symlinkSync(join(ROOT, d), join(dir, d));
  // Own copies of the sources the bundle is built from (Stryker may be instrumenting the repo's
  // shared-protocol in place), and a node_modules whose @proofrig links point at them.
  for (const d of ['firmware', 'shared-protocol']) cpSync(join(ROOT, d), join(dir, d), { recursive: true, filter: (p) => !p.includes('/dist') });
  mkdirSync(join(dir, 'node_modules', '@proofrig'), { recursive: true });
  for (const e of readdirSync(join(ROOT, 'node_modules'))) if (e !== '@proofrig') symlinkSync(join(ROOT, 'node_modules', e), join(dir, 'node_modules', e));
  for (const [name, d] of [['protocol', 'shared-protocol'], ['firmware', 'firmware'], ['sim', 'sim'], ['host', 'host']]) symlinkSync(join(dir, d), join(dir, 'node_modules', '@proofrig', name));
  cpSync(join(ROOT, 'test'), join(dir, 'test'), { recursive: true });
  cpSync(join(ROOT, 'vitest.config.ts'), join(dir, 'vitest.config.ts'));
  return dir;
}

function runTests(dir, tests) {
  const r = spawnSync('npx', ['vitest', 'run', '--bail', '1', ...tests], { cwd: dir, encoding: 'utf8', timeout: 300000 });
  return { passed: r.status === 0, out: (r.stdout ?? '') + (r.stderr ?? '') };
}

const dir = sandbox();
const results = [];
try {
  const base = runTests(dir, ALL_TESTS);
  if (!base.passed) throw new Error('the firmware suites fail without any mutation:\n' + base.out.slice(-3000));
  for (const [id, file, from, to, what] of MUTANTS) {
    if (only && !only.has(id)) continue;
    const p = join(dir, 'firmware', 'src', file);
    const orig = readFileSync(p, 'utf8');
    const n = orig.split(from).length - 1;
    if (n !== 1) throw new Error(`mutant ${id}: expected the text once in firmware/src/${file}, found it ${n} times; update the list`);
    writeFileSync(p, orig.replace(from, to));
    const t0 = Date.now();
    const r = runTests(dir, TESTS[file]);
    writeFileSync(p, orig);
    const killedBy = r.passed ? null : (r.out.match(/(?:FAIL|×)\s+(.*)/) ?? [])[1]?.replace(/\x1b\[[0-9;]*m/g, '').trim() ?? 'build or test failure';
    results.push({ id, file, what, status: r.passed ? 'survived' : 'killed', killedBy, ms: Date.now() - t0 });
    console.log(`${r.passed ? 'SURVIVED' : 'killed  '}  ${id.padEnd(22)} ${what}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
// --only re-runs some mutants (e.g. after a new test) and updates them in the last full report.
const REPORT = join(ROOT, 'reports', 'mutation', 'firmware.json');
let all = results;
if (only && existsSync(REPORT)) {
  const prev = JSON.parse(readFileSync(REPORT, 'utf8')).results;
  all = prev.map((r) => results.find((n) => n.id === r.id) ?? r);
  for (const n of results) if (!all.some((r) => r.id === n.id)) all.push(n);
}
const killed = all.filter((r) => r.status === 'killed').length;
const score = all.length ? (100 * killed) / all.length : 0;
mkdirSync(join(ROOT, 'reports', 'mutation'), { recursive: true });
writeFileSync(REPORT, JSON.stringify({ date: new Date().toISOString(), killed, total: all.length, score, results: all }, null, 2));
console.log(`firmware verdict mutation score: ${killed}/${all.length} = ${score.toFixed(1)} %`);
if (!only && score < 100) process.exitCode = 1;
