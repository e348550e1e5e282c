// The bounded mutation check CI runs (`npm run mutate:ci`, from .ci/run): the lines that decide
// "completed" and request_id dedupe, and the timeout formula, in incremental mode against the
// committed test/mutation/stryker-incremental.json, so only mutants whose code or tests changed
// are run again. `npm run mutate` runs the whole truth path (stryker.config.json).
import { readFileSync } from 'node:fs';

const base = JSON.parse(readFileSync(new URL('./stryker.config.json', import.meta.url), 'utf8'));

export default {
  ...base,
  mutate: [
    'shared-protocol/src/to-host.ts:139-147',
    'shared-protocol/src/timeout.ts',
    'host/src/core/commands.ts:87-100',
    'host/src/core/commands.ts:322-368',
    'host/src/core/commands.ts:609-611',
  ],
  // The type checker costs a project-wide tsc per batch of mutants; CI's budget is a few minutes,
  // and a mutant that would not compile still has to be killed by a test here.
  checkers: [],
  reporters: ['clear-text', 'json'],
  jsonReporter: { fileName: 'reports/mutation/ci.json' },
};
