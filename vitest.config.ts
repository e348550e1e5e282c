import { defineConfig } from 'vitest/config';
import { CHIP_PHASE_FILES, CHIP_WANTED } from './test/helpers/chip-phase-files.js';

// The chip-speed tier (test/helpers/engines.ts) runs where PROOFRIG_CHIP_SPEED=1 or in CI: then the
// suite runs in two phases, everything else first and the chip-speed specs after it on an otherwise
// quiet machine (groupOrder), because a CPU quota emulates the chip only while the process gets its share.
const common = { testTimeout: 30000, hookTimeout: 30000, pool: 'forks' as const };

export default defineConfig({
  test: CHIP_WANTED
    ? {
        ...common,
        projects: [
          { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], env: { PROOFRIG_TIER_PHASE: 'suite' }, sequence: { groupOrder: 0 } } },
          // One retry: the quota emulates the chip only while the host gives the interpreter its share,
          // and a run of about ten chip-speed specs saw one of them starved now and then (docs/chip-speed.md).
          // A spec that fails twice fails the run; the first failure is printed (test/helpers/engines.ts).
          { extends: true, test: { name: 'chip-speed', include: CHIP_PHASE_FILES, env: { PROOFRIG_TIER_PHASE: 'chip' }, sequence: { groupOrder: 1 }, retry: 1 } },
        ],
      }
    : { ...common, include: ['test/**/*.test.ts'] },
});
