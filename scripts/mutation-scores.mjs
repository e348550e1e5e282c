#!/usr/bin/env node
// Reads the mutation reports (Stryker's reports/mutation/mutation.json for the protocol and the
// host core, scripts/mutate-firmware.mjs's reports/mutation/firmware.json for the firmware),
// checks every surviving mutant against test/mutation/allowed-survivors.json, prints the scores
// and, with --readme, writes them into README.md between the mutation-scores markers.
// Exit 1 when a score is under 90 % or a survivor is neither killed nor allowed with a reason.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
const merged = reports.length ? { files: Object.assign({}, ...reports.map((r) => r.rep.files)), at: Math.max(...reports.map((r) => r.at)) } : null;
const FIRMWARE = join(ROOT, 'reports/mutation/firmware.json');
const ALLOWED = join(ROOT, 'test/mutation/allowed-survivors.json');
const MIN = 90;

const allowed = existsSync(ALLOWED) ? JSON.parse(readFileSync(ALLOWED, 'utf8')).survivors : [];
const isAllowed = (file, m) =>
  allowed.some((a) => a.file === file && a.line === m.location.start.line && (a.column === undefined || a.column === m.location.start.column) && a.mutator === m.mutatorName && (a.replacement === undefined || a.replacement === m.replacement));

const rows = [];
const unexplained = [];
if (merged) {
  const rep = merged;
  const areas = { 'shared-protocol/src': 'protocol (validators, timeout formula, states)', 'host/src/core': 'host core (commands, journal, devices, plan)' };
  for (const [prefix, name] of Object.entries(areas)) {
    const c = { killed: 0, survived: 0, allowed: 0, timeout: 0, noCoverage: 0, files: [] };
    for (const [file, f] of Object.entries(rep.files)) {
      if (!file.startsWith(prefix)) continue;
      c.files.push(file.slice(prefix.length + 1));
      for (const m of f.mutants) {
        if (m.status === 'Killed') c.killed++;
        else if (m.status === 'Timeout') c.timeout++;
        else if (m.status === 'Survived' || m.status === 'NoCoverage') {
          if (m.status === 'Survived') c.survived++;
          else c.noCoverage++;
          if (isAllowed(file, m)) c.allowed++;
          else unexplained.push(`${file}:${m.location.start.line} ${m.mutatorName} → ${JSON.stringify(m.replacement ?? '')} (${m.status})`);
        }
      }
    }
    const valid = c.killed + c.timeout + c.survived + c.noCoverage;
    if (valid) rows.push({ name: name + (SUBSET ? ', CI subset' : ''), files: c.files.join(', '), killed: c.killed + c.timeout, total: valid, allowed: c.allowed, score: (100 * (c.killed + c.timeout)) / valid });
  }
}
let fwDate = null;
if (!CI && existsSync(FIRMWARE)) {
  const fw = JSON.parse(readFileSync(FIRMWARE, 'utf8'));
  fwDate = fw.date;
  rows.push({ name: 'firmware verdicts (fixed mutant list, rebuilt per mutant)', files: [...new Set(fw.results.map((r) => r.file))].join(', '), killed: fw.killed, total: fw.total, allowed: 0, score: fw.score });
  for (const r of fw.results) if (r.status === 'survived') unexplained.push(`firmware/src/${r.file} mutant ${r.id}: ${r.what}`);
}
const date = new Date(merged ? merged.at : Date.now()).toISOString().slice(0, 10);

const table = [
  `Last run: ${date}${fwDate ? ` (firmware: ${fwDate.slice(0, 10)})` : ''}, written by \`node scripts/mutation-scores.mjs --readme\`.`,
  '',
  '| area | files mutated | killed / mutants | score | survivors allowed with a reason |',
  '|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${r.files} | ${r.killed} / ${r.total} | ${r.score.toFixed(1)} % | ${r.allowed} |`),
].join('\n');
console.log(table);
if (unexplained.length) console.log('\nSurvivors neither killed nor allowed:\n  ' + unexplained.join('\n  '));

if (process.argv.includes('--readme')) {
  const p = join(ROOT, 'README.md');
  const s = readFileSync(p, 'utf8');
  const a = '<!-- mutation-scores:start -->';
  const b = '<!-- mutation-scores:end -->';
  if (!s.includes(a) || !s.includes(b)) throw new Error('README.md lacks the mutation-scores markers');
  writeFileSync(p, s.slice(0, s.indexOf(a) + a.length) + '\n' + table + '\n' + s.slice(s.indexOf(b)));
}
if (rows.length === 0) {
  console.log('No mutation report found in reports/mutation/.');
  process.exitCode = 1;
}
if (rows.some((r) => r.score < MIN) || unexplained.length) process.exitCode = 1;
