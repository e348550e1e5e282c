import { defineConfig } from 'vitest/config';
import { CHIP_PHASE_FILES } from './test/helpers/chip-phase-files.js';

// The chip-speed tier (test/helpers/engines.ts) runs where PROOFRIG_CHIP_SPEED=1 or in CI: then the
// suite runs in two phases, everything else first and the chip-speed specs after it on an otherwise
// quiet machine (groupOrder), because a CPU quota emulates the chip only while the process gets its share.
const chipWanted = process.env.PROOFRIG_CHIP_SPEED === '1' || (!!process.env.CI && process.env.PROOFRIG_CHIP_SPEED !== '0');
const common = { testTimeout: 30000, hookTimeout: 30000, pool: 'forks' as const };

export default defineConfig({
  test: chipWanted
    ? {
        ...common,
        projects: [
          { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], env: { PROOFRIG_TIER_PHASE: 'suite' }, sequence: { groupOrder: 0 } } },
          { extends: true, test: { name: 'chip-speed', include: CHIP_PHASE_FILES, env: { PROOFRIG_TIER_PHASE: 'chip' }, sequence: { groupOrder: 1 } } },
        ],
      }
    : { ...common, include: ['test/**/*.test.ts'] },
});
