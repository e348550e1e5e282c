#!/usr/bin/env node
// Reads the mutation reports (Stryker's reports/mutation/mutation.json for the protocol and the
// host core, scripts/mutate-firmware.mjs's reports/mutation/firmware.json for the firmware),
// checks every surviving mutant against test/mutation/allowed-survivors.json, prints the scores
// and, with --readme, writes them into docs/mutation-testing.md between the mutation-scores markers.
// Exit 1 when a score is under 90 % or a survivor is neither killed nor allowed with a reason.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { functionsOf, linesOf } from './mutation-functions.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// The scoped full runs' reports (stryker.scope.config.mjs: full-<scope>.json) merged with a
// whole-path run's mutation.json when there is one; else the CI subset's (then the table says so).
// A file measured by more than one report counts once, from the newest report.
// --ci: only the CI subset's report (what .ci/run checks after `npm run mutate:ci`).
const CI = process.argv.includes('--ci');
const DIR = join(ROOT, 'reports/mutation');
const fullReports = CI ? [] : existsSync(DIR)
  ? readdirSync(DIR).filter((n) => n === 'mutation.json' || /^full-.*\.json$/.test(n)).map((n) => join(DIR, n))
  : [];
const SUBSET = fullReports.length === 0;
const reports = (SUBSET ? [join(DIR, 'ci.json')] : fullReports).filter((p) => existsSync(p)).map((p) => ({ p, rep: JSON.parse(readFileSync(p, 'utf8')), at: statSync(p).mtimeMs }));
reports.sort((a, b) => a.at - b.at);
const merged = reports.length
  ? {
      files: Object.assign({}, ...reports.map((r) => Object.fromEntries(Object.entries(r.rep.files).map(([k, f]) => [k, { ...f, at: r.at }])))),
      at: Math.max(...reports.map((r) => r.at)),
    }
  : null;
const FIRMWARE = join(ROOT, 'reports/mutation/firmware.json');
const ALLOWED = join(ROOT, 'test/mutation/allowed-survivors.json');
const MIN = 90;

const allowed = existsSync(ALLOWED) ? JSON.parse(readFileSync(ALLOWED, 'utf8')).survivors : [];
// An entry names the mutant by the function it is in and a part of its source line (`code`), so it
// stays valid when lines move; `occurrence` picks the n-th such line in that function where `code`
// is not unique there. An entry whose function or code is no longer in its file is stale: refused.
const indexes = new Map();
const indexOf = (file, source) => {
  let i = indexes.get(file);
  if (!i || i.source !== source) indexes.set(file, (i = { source, fns: functionsOf(source, file) }));
  return i.fns;
};
const isAllowed = (file, m, source) => {
  const line = m.location.start.line;
  const text = source.split('\n')[line - 1] ?? '';
  const fns = indexOf(file, source);
  return allowed.some((a) => {
    if (a.file !== file || a.mutator !== m.mutatorName || (a.replacement !== undefined && a.replacement !== m.replacement)) return false;
    if (!text.includes(a.code) || fns.at(line, text.indexOf(a.code) + 1) !== a.function) return false;
    if (a.column !== undefined && a.column !== m.location.start.column) return false;
    return a.occurrence === undefined || linesOf(source, a.function, a.code, fns)[a.occurrence - 1] === line;
  });
};
const staleEntries = allowed.filter((a) => {
  const p = join(ROOT, a.file);
  if (!a.function || !a.code || !existsSync(p)) return true;
  const source = readFileSync(p, 'utf8');
  return linesOf(source, a.function, a.code, indexOf(a.file, source)).length < (a.occurrence ?? 1);
});

const rows = [];
const unexplained = [];
const stale = new Set();
if (merged) {
  const rep = merged;
  // The two areas the 90 % threshold applies to, then each host-core scope of stryker.scope.config.mjs.
  const areas = [
    { name: 'protocol (validators, timeout formula, states)', has: (f) => f.startsWith('shared-protocol/src/'), strip: 'shared-protocol/src/', gate: true },
    { name: 'host core (commands, journal, devices, plan)', has: (f) => f.startsWith('host/src/core/'), strip: 'host/src/core/', gate: true },
    { name: '· host core: plan, devices', has: (f) => /^host\/src\/core\/(plan|devices)\.ts$/.test(f), strip: 'host/src/core/' },
    { name: '· host core: journal and its checkpointer (judged by the journal specs only)', has: (f) => /^host\/src\/core\/(journal|checkpointer)\.ts$/.test(f), strip: 'host/src/core/' },
    { name: '· host core: commands (admission, deadline watch, status view)', has: (f) => /^host\/src\/core\/(commands|deadline-watch|admission|command-view)\.ts$/.test(f), strip: 'host/src/core/' },
  ];
  for (const area of areas) {
    const c = { killed: 0, survived: 0, allowed: 0, timeout: 0, noCoverage: 0, files: [], at: 0 };
    for (const [file, f] of Object.entries(rep.files)) {
      if (!area.has(file)) continue;
      // A file whose code changed after its run is marked: its score is for the code it ran on.
      const now = existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), 'utf8') : null;
      if (now !== f.source) stale.add(file);
      c.files.push(file.slice(area.strip.length) + (now !== f.source ? ' †' : ''));
      c.at = Math.max(c.at, f.at);
      for (const m of f.mutants) {
        // An allow-listed mutant is equivalent (or unreachable): no test can kill it, so its
        // timeout can only be the machine's load, and it counts as the survivor it is.
        const status = m.status === 'Timeout' && isAllowed(file, m, f.source) ? 'Survived' : m.status;
        if (status === 'Killed') c.killed++;
        else if (status === 'Timeout') c.timeout++;
        else if (status === 'Survived' || status === 'NoCoverage') {
          if (status === 'Survived') c.survived++;
          else c.noCoverage++;
          if (isAllowed(file, m, f.source)) c.allowed++;
          else if (area.gate) unexplained.push(`${file}:${m.location.start.line} ${m.mutatorName} → ${JSON.stringify(m.replacement ?? '')} (${m.status})`);
        }
      }
    }
    const valid = c.killed + c.timeout + c.survived + c.noCoverage;
    if (valid) rows.push({ name: area.name + (SUBSET ? ', CI subset' : ''), files: c.files.join(', '), killed: c.killed + c.timeout, timeouts: c.timeout, total: valid, allowed: c.allowed, score: (100 * (c.killed + c.timeout)) / valid, gate: !!area.gate, date: new Date(c.at).toISOString().slice(0, 10) });
  }
}
let fwDate = null;
if (!CI && existsSync(FIRMWARE)) {
  const fw = JSON.parse(readFileSync(FIRMWARE, 'utf8'));
  fwDate = fw.date;
  rows.push({ name: 'firmware verdicts (fixed mutant list, rebuilt per mutant)', files: [...new Set(fw.results.map((r) => r.file))].join(', '), killed: fw.killed, timeouts: 0, total: fw.total, allowed: 0, score: fw.score, gate: false, date: fw.date.slice(0, 10) });
  for (const r of fw.results) if (r.status === 'survived') unexplained.push(`firmware/src/${r.file} mutant ${r.id}: ${r.what}`);
}
const date = new Date(merged ? merged.at : Date.now()).toISOString().slice(0, 10);

const table = [
  `Last run: ${date}${fwDate ? ` (firmware: ${fwDate.slice(0, 10)})` : ''}, written by \`node scripts/mutation-scores.mjs --readme\`. A mutant that made the tests run past Stryker's time limit counts as killed (its own column: on a loaded machine that can be the load, not the mutant); allowed survivors still count against the score.`,
  '',
  '| area | files mutated | run | killed / mutants | of them timed out | score | survivors allowed with a reason |',
  '|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${r.files} | ${r.date} | ${r.killed} / ${r.total} | ${r.timeouts} | ${r.score.toFixed(1)} % | ${r.allowed} |`),
  ...(stale.size ? ['', `† changed since its run (${[...stale].join(', ')}): the score is for the code as it was then; \`npm run mutate\` re-runs only what changed.`] : []),
].join('\n');
console.log(table);
if (unexplained.length) console.log('\nSurvivors neither killed nor allowed:\n  ' + unexplained.join('\n  '));

if (process.argv.includes('--readme')) {
  const p = join(ROOT, 'docs', 'mutation-testing.md');
  const s = readFileSync(p, 'utf8');
  const a = '<!-- mutation-scores:start -->';
  const b = '<!-- mutation-scores:end -->';
  if (!s.includes(a) || !s.includes(b)) throw new Error('docs/mutation-testing.md lacks the mutation-scores markers');
  writeFileSync(p, s.slice(0, s.indexOf(a) + a.length) + '\n' + table + '\n' + s.slice(s.indexOf(b)));
}
if (staleEntries.length) {
  console.log('\nAllowed survivors whose function or code is no longer in their file (remove or update them in test/mutation/allowed-survivors.json):\n  ' + staleEntries.map((a) => `${a.file} ${a.function ?? '(no function)'}: ${JSON.stringify(a.code)}`).join('\n  '));
  process.exitCode = 1;
}
if (rows.length === 0) {
  console.log('No mutation report found in reports/mutation/.');
  process.exitCode = 1;
}
if (rows.some((r) => r.gate && r.score < MIN) || unexplained.length) process.exitCode = 1;
