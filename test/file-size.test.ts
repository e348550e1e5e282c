// No source file over 600 lines (issue 30 item 7): a file that long does more than one job, and is
// split by job (bench/src/run.ts into its sections, a spec along its describe() blocks, shared
// setup into test/helpers/). Every .ts/.js/.mjs in the repo counts; node_modules, build output
// (dist), git's own folder, Stryker's sandboxes (.stryker-tmp), coverage reports and generated data
// (JSON, which is not scanned) do not.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAX_LINES = 600;
const SKIP = new Set(['node_modules', 'dist', '.git', '.stryker-tmp', 'coverage']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.isFile() && /\.(ts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

const lines = (p: string) => {
  const text = readFileSync(p, 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
};

describe('source file size', () => {
  const files = sources(ROOT);

  it(`no .ts/.js/.mjs source file is over ${MAX_LINES} lines`, () => {
    const over = files.map((p) => ({ file: relative(ROOT, p), lines: lines(p) })).filter((f) => f.lines > MAX_LINES);
    expect(over.map((f) => `${f.file}: ${f.lines} lines`)).toEqual([]);
  });

  it('the scan sees the sources of every package, the scripts and the specs', () => {
    const seen = files.map((p) => relative(ROOT, p));
    for (const f of ['host/src/core/host.ts', 'sim/src/rig.ts', 'shared-protocol/src/index.ts', 'firmware/src/stepper.ts', 'chaos/src/run.ts', 'bench/src/run.ts', 'scripts/espruino-compat.js', 'test/file-size.test.ts'])
      expect(seen).toContain(f);
  });
});
