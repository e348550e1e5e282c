// The tests Stryker runs against each mutant of the truth path: the specs that import the
// protocol and the host core from source (the firmware suites run the built bundle and are
// mutated by scripts/mutate-firmware.mjs instead). The workspace packages are aliased to the
// sources next to this file: in Stryker's sandbox, node_modules/@proofrig/* would otherwise
// resolve to the original, unmutated folders.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@proofrig\/protocol\/clock$/, replacement: here('./shared-protocol/src/clock.ts') },
      { find: /^@proofrig\/protocol$/, replacement: here('./shared-protocol/src/index.ts') },
      { find: /^@proofrig\/sim$/, replacement: here('./sim/src/index.ts') },
    ],
  },
  test: {
    // A scope may narrow this (stryker.scope.config.mjs sets MUTATE_TESTS).
    include: process.env.MUTATE_TESTS ? process.env.MUTATE_TESTS.split(',') : [
      'test/host-core.test.ts',
      'test/host-core-retry-deadline.test.ts',
      'test/host-core-motion.test.ts',
      'test/host-commands.test.ts',
      'test/host-commands-resync.test.ts',
      'test/host-commands-restart.test.ts',
      'test/host-axis-busy.test.ts',
      'test/host-plan.test.ts',
      'test/host-devices.test.ts',
      'test/host-journal.test.ts',
      'test/host-journal-file.test.ts',
      'test/host-device-events.test.ts',
      'test/host-log-flood.test.ts',
      'test/journal-retention.test.ts',
      'test/journal-group-commit.test.ts',
      'test/journal-fsync.test.ts',
      'test/journal-commit-order.test.ts',
      'test/protocol-*.test.ts',
      'test/mcp-tools.test.ts',
      'test/link-contract.test.ts',
      'test/boards.test.ts',
      'test/readme.test.ts',
    ],
    testTimeout: 30000,
    hookTimeout: 30000,
    pool: 'forks',
    // One worker, modules shared between files: a mutant run is mostly start-up time otherwise.
    isolate: false,
    maxWorkers: 1,
  },
});
