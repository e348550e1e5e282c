// Comments and messages that stay true (issue 30 item 6): no source file cites a file outside the
// repository (a sibling checkout's shared folder, an absolute path of the machine it was written
// on, a design document or brief that is not in the repository). A reader of a clean clone cannot
// open them; what they said
// belongs in the repository (docs/, or the file's own comment), and a tool is named by its path here
// (e.g. scripts/build-espruino.sh builds the Espruino interpreter).
//
// Scanned: every .ts/.js/.mjs/.cjs file of the packages, scripts/ and test/ (node_modules and dist
// left out). scripts/build-espruino.sh is a shell script and not scanned: it may look for a pinned
// source tarball beside the repository, an optional input it names and falls back from.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['shared-protocol', 'firmware', 'sim', 'host', 'chaos', 'bench', 'scripts', 'test'];
/** Built from pieces so this file does not match itself. */
const OUTSIDE = [
  new RegExp('\\.\\./' + 'shared/'),
  new RegExp('/' + 'work/'),
  new RegExp('\\b' + 'DESIGN\\.md'),
  new RegExp('\\bseed ' + '\\d{3} §'),
];

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((f) => {
    if (f === 'node_modules' || f === 'dist') return [];
    const p = join(dir, f);
    return statSync(join(ROOT, p)).isDirectory() ? files(p) : /\.(ts|js|mjs|cjs)$/.test(p) ? [p] : [];
  });
}

/** 'file:line: text' for each line of `text` that cites a file outside the repository. */
function citations(file: string, text: string): string[] {
  return text.split('\n').flatMap((l, i) => (OUTSIDE.some((re) => re.test(l)) ? [`${file}:${i + 1}: ${l.trim()}`] : []));
}

describe('sources cite only what is in the repository', () => {
  it('no source file names a file outside the repository', () => {
    const found = FOLDERS.flatMap((d) => files(d)).flatMap((f) => citations(relative(ROOT, join(ROOT, f)).split(sep).join('/'), readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });

  it('the scan sees such a citation, and not the package shared-protocol', () => {
    const sibling = '..' + '/shared/espruino/build.sh';
    expect(citations('x.ts', `// build it with ${sibling}\nimport { a } from '../shared-protocol/src/a.js';`)).toEqual([`x.ts:1: // build it with ${sibling}`]);
  });
});
