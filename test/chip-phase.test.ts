// The chip-speed specs run in a phase of their own after the rest of the suite (vitest.config.ts);
// a file with a chip-speed tier missing from that phase's list would lose its chip-speed specs
// silently (the first phase leaves them out), so the list is checked against the files.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { CHIP_PHASE_FILES } from './helpers/chip-phase-files.js';

const here = new URL('.', import.meta.url).pathname;
const usesTier = (src: string) => /\b(tiersUnderTest|interpreterTiers)\(\)/.test(src) || /\.each\([^)]*chipSpeedTier\(\)/.test(src);

describe('the chip-speed phase', () => {
  it('lists exactly the test files that run specs on the chip-speed tier', () => {
    const files = readdirSync(here)
      .filter((f) => f.endsWith('.test.ts'))
      .filter((f) => usesTier(readFileSync(here + f, 'utf8')))
      .map((f) => `test/${f}`)
      .sort();
    expect(files).toEqual([...CHIP_PHASE_FILES].sort());
  });
});
