// One area of the truth path per Stryker run (`MUTATE_SCOPE=protocol|plan-devices|journal|commands
// npx stryker run stryker.scope.config.mjs`): on a shared 2-core machine the whole path (~1900
// mutants) does not finish in one sitting, and a run that is stopped writes nothing. Each scope
// writes its own report (reports/mutation/full-<scope>.json, merged by
// scripts/mutation-scores.mjs) and its own incremental file, so a rerun after a merge only tests
// the mutants whose code or tests changed. `npm run mutate` runs the scopes one after another.
import { readFileSync } from 'node:fs';

const base = JSON.parse(readFileSync(new URL('./stryker.config.json', import.meta.url), 'utf8'));

export const SCOPES = {
  protocol: base.mutate.filter((f) => f.startsWith('shared-protocol/')),
  'plan-devices': ['host/src/core/plan.ts', 'host/src/core/devices.ts'],
  journal: [...base.mutate.filter((f) => f.startsWith('host/src/core/journal/')), 'host/src/core/checkpointer.ts'],
  commands: ['host/src/core/commands.ts', 'host/src/core/deadline-watch.ts', 'host/src/core/admission.ts', 'host/src/core/command-view.ts'],
};

// The journal's mutants are covered by nearly every host-core test, and a surviving mutant runs
// all of its covering tests: on 2 shared cores that scope did not finish in an hour. It is judged
// by the journal's own specs, its group commit included (a mutant they miss counts as survived even
// if host-core would kill it).
export const SCOPE_TESTS = {
  journal: ['test/host-journal.test.ts', 'test/host-journal-file.test.ts', 'test/journal-retention.test.ts', 'test/host-device-events.test.ts', 'test/journal-group-commit.test.ts', 'test/journal-fsync.test.ts', 'test/journal-commit-order.test.ts', 'test/journal-checkpoint.test.ts'],
};

const scope = process.env.MUTATE_SCOPE ?? '';
if (!SCOPES[scope]) throw new Error(`MUTATE_SCOPE must be one of ${Object.keys(SCOPES).join(', ')}`);
// Read by vitest.mutate.config.ts in Stryker's test runner processes (they inherit the environment).
if (SCOPE_TESTS[scope]) process.env.MUTATE_TESTS = SCOPE_TESTS[scope].join(',');

export default {
  ...base,
  mutate: SCOPES[scope],
  incrementalFile: `test/mutation/incremental/${scope}.json`,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: `reports/mutation/full-${scope}.json` },
};
