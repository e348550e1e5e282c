// Packages meet by their front doors (issue 30 item 5): no source file of a package imports a file
// of another package by relative path. What one package offers the others is its package.json
// "exports" (e.g. @proofrig/host/core, @proofrig/sim/prng, @proofrig/bench/memory-load), imported
// by package name. Checked on the source itself: every .ts/.js/.mjs under each package's folder
// (node_modules and dist left out) and under scripts/ (the root's tooling, which counts as its own
// package here). A relative import (static, dynamic, re-export, require or a JSDoc import() type)
// that resolves outside the folder it is written in is listed.
//
// The rule for the root test/ folder: it is the repo's specification of every package's
// internals, so it may import any package by name or reach into a package's src/ by relative path;
// it is not scanned. The reverse is not allowed: no package imports test/ (what a package and the
// tests both need lives in a package, as the memory load lives in bench).
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['shared-protocol', 'firmware', 'sim', 'host', 'chaos', 'bench', 'scripts'];

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((f) => {
    if (f === 'node_modules' || f === 'dist') return [];
    const p = join(dir, f);
    return statSync(join(ROOT, p)).isDirectory() ? files(p) : /\.(ts|js|mjs)$/.test(p) ? [p] : [];
  });
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"])(\.{1,2}\/[^'"]*)\1/g;

/** Each relative import in `file` that leaves its package, as 'file -> target' (both from the repo root). */
function leaving(pkg: string, file: string): string[] {
  const out: string[] = [];
  for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(IMPORT)) {
    const target = relative(ROOT, join(ROOT, dirname(file), m[2]!)).split(sep).join('/');
    if (target !== pkg && !target.startsWith(pkg + '/')) out.push(`${file.split(sep).join('/')} -> ${target}`);
  }
  return out;
}

describe('package boundaries', () => {
  const found = PACKAGES.flatMap((pkg) => files(pkg).flatMap((f) => leaving(pkg, f)));

  it('no package imports another package (or test/) by relative path', () => {
    expect(found).toEqual([]);
  });

  it('the scan sees a relative import that leaves its folder (test/ may, a package may not)', () => {
    expect(leaving('test', 'test/fixtures/espruino-probes/crypto-probe.ts')).toEqual([
      'test/fixtures/espruino-probes/crypto-probe.ts -> firmware/src/sha256',
      'test/fixtures/espruino-probes/crypto-probe.ts -> firmware/src/utf8',
      'test/fixtures/espruino-probes/crypto-probe.ts -> shared-protocol/src/wscodec',
      'test/fixtures/espruino-probes/crypto-probe.ts -> firmware/src/mask',
    ]);
  });
});
