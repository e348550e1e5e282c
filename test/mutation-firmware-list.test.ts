// The firmware mutation list (scripts/mutate-firmware.mjs) quotes the code each mutant changes; a
// rename or a rewrite must take the list along, or `npm run mutate:firmware` stops at the first mutant
// whose code is gone. Checked here on the list's text (the script runs the mutation on import).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';

const ROOT = new URL('../', import.meta.url).pathname;
const script = readFileSync(ROOT + 'scripts/mutate-firmware.mjs', 'utf8');
const list = script.match(/const MUTANTS = (\[[\s\S]*?\n\]);/)?.[1];
// The list is plain literals (strings and arrays): evaluated as such, nothing else in the script runs.
const MUTANTS = (list ? new Function(`return ${list};`)() : []) as [string, string, string, string, string][];
const TESTS = script.match(/const TESTS = (\{[\s\S]*?\n\});/)?.[1];
const suites = (TESTS ? new Function(`return ${TESTS};`)() : {}) as Record<string, string[]>;

describe('the firmware mutation list', () => {
  it('is found in the script', () => {
    expect(MUTANTS.length).toBeGreaterThan(20);
  });

  it('every mutant quotes code that occurs exactly once in its firmware file, and the file has its suites', () => {
    const bad = MUTANTS.flatMap(([id, file, from]) => {
      const p = ROOT + 'firmware/src/' + file;
      if (!existsSync(p)) return [`${id}: firmware/src/${file} does not exist`];
      const n = readFileSync(p, 'utf8').split(from).length - 1;
      const out = n === 1 ? [] : [`${id}: its code occurs ${n} times in firmware/src/${file}`];
      if (!suites[file]?.every((t) => existsSync(ROOT + t))) out.push(`${id}: no existing suites listed for ${file}`);
      return out;
    });
    expect(bad).toEqual([]);
  });
});
