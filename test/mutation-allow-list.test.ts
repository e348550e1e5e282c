// The mutation allow-list names each accepted survivor by its function and code, not its line, so
// edits above it do not break it, and an entry whose code is gone is refused, not kept quietly.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
// @ts-expect-error: a plain .mjs script without types
import { functionsOf, linesOf } from '../scripts/mutation-functions.mjs';

const ROOT = new URL('../', import.meta.url).pathname;
interface Entry {
  file: string;
  function: string;
  code: string;
  occurrence?: number;
}
const allowed: Entry[] = JSON.parse(readFileSync(ROOT + 'test/mutation/allowed-survivors.json', 'utf8')).survivors;

describe('the mutation allow-list', () => {
  it('names the innermost named function of a line: Class.method, a named arrow, or <module>', () => {
    const src = ['const top = 1;', 'class A {', '  m() {', '    const inner = () => {', '      return 2;', '    };', '    return [1].map((x) => x + 1);', '  }', '}', 'function f() {', '  return 3;', '}'].join('\n');
    const fns = functionsOf(src);
    expect(fns.at(1, 1)).toBe('<module>');
    expect(fns.at(5, 7)).toBe('inner');
    expect(fns.at(7, 5)).toBe('A.m');
    expect(fns.at(11, 3)).toBe('f');
    expect(linesOf(src, 'A.m', 'return')).toEqual([7]);
  });

  it(`every one of its ${allowed.length} entries names code that is still in its file, inside the function it names`, () => {
    const stale = allowed.filter((a) => {
      if (!existsSync(ROOT + a.file)) return true;
      return linesOf(readFileSync(ROOT + a.file, 'utf8'), a.function, a.code).length < (a.occurrence ?? 1);
    });
    expect(stale.map((a) => `${a.file} ${a.function}: ${a.code}`)).toEqual([]);
  });
});
