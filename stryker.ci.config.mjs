// The bounded mutation check CI runs (`npm run mutate:ci`, from .ci/run): the code that decides
// "completed" (the validator's `res` rules, the host core's result handling), request_id dedupe
// (submit, momentRefusal, sameArgs) and the timeout formula, in incremental mode against the committed
// test/mutation/stryker-incremental.json, so only mutants whose code or covering tests changed are
// run again (refresh it with `npm run mutate:ci` and commit it after changing that code or its
// tests). `npm run mutate` runs the whole truth path (stryker.scope.config.mjs).
// The mutated spans are found by the function they are in, not by line numbers, so they follow
// the code when lines above them move.
import { readFileSync } from 'node:fs';

const base = JSON.parse(readFileSync(new URL('./stryker.config.json', import.meta.url), 'utf8'));

/** `file:first-last` for the block that opens on the one line containing `opening` (the first of several alternatives that is there). */
function span(file, ...openings) {
  const lines = readFileSync(new URL('./' + file, import.meta.url), 'utf8').split('\n');
  const opening = openings.find((o) => lines.some((l) => l.includes(o))) ?? openings[0];
  const at = lines.flatMap((l, i) => (l.includes(opening) ? [i] : []));
  if (at.length !== 1) throw new Error(`stryker.ci.config.mjs: expected one line with ${JSON.stringify(opening)} in ${file}, found ${at.length}`);
  const indent = lines[at[0]].match(/^\s*/)[0];
  const end = lines.findIndex((l, i) => i > at[0] && l === indent + '}');
  if (end < 0) throw new Error(`stryker.ci.config.mjs: no closing brace for ${JSON.stringify(opening)} in ${file}`);
  return `${file}:${at[0] + 1}-${end + 1}`;
}

export const CI_MUTATE = [
  span('shared-protocol/src/to-host.ts', "case 'res': {"),
  'shared-protocol/src/timeout.ts',
  // submit's checks and dedupe (in submitNow where submit only waits for the journal's commit).
  span('host/src/core/commands.ts', '  private submitNow(input: SubmitInput)', '  submit(input: SubmitInput)'),
  span('host/src/core/commands.ts', '  private resultNow('),
  // Which refusals leave their request_id free for a retry judged anew (decided before anything was sent).
  span('host/src/core/journal/schema.ts', 'export function momentRefusal('),
  span('host/src/core/admission.ts', 'export function sameArgs('),
];

export default {
  ...base,
  mutate: CI_MUTATE,
  // The type checker costs a project-wide tsc per batch of mutants; CI's budget is a few minutes,
  // and a mutant that would not compile still has to be killed by a test here.
  checkers: [],
  reporters: ['clear-text', 'json'],
  jsonReporter: { fileName: 'reports/mutation/ci.json' },
};
