#!/usr/bin/env node
// Renames variables the minifier named `of` in a built bundle (in place). Espruino lexes `of` as a
// keyword wherever it appears, so a variable called `of` is a syntax error on the interpreter ("Got
// of expected EOF", or "Got EOF expected '}'" when a `/` after it starts a regex that swallows the
// rest of the file); the minifier (swc's mangler, run by tsup) does not know that and may pick the
// name. Seen on the firmware bundle when a module was added. Usage: node scripts/espruino-unkeyword.js FILE
import { readFileSync, writeFileSync } from 'node:fs';
import * as acorn from 'acorn';
import * as walk from 'acorn-walk';

const file = process.argv[2];
if (!file) throw new Error('usage: node scripts/espruino-unkeyword.js FILE');
const src = readFileSync(file, 'utf8');
const ast = acorn.parse(src, { ecmaVersion: 'latest', sourceType: 'script' });
/** Start offsets of every identifier `of` that names a variable (not a property key or member name). */
const at = [];
walk.fullAncestor(ast, (node, _st, anc) => {
  if (node.type !== 'Identifier' || node.name !== 'of') return;
  const parent = anc[anc.length - 2];
  if (parent && parent.type === 'MemberExpression' && parent.property === node && !parent.computed) return;
  if (parent && parent.type === 'Property' && parent.key === node && !parent.computed && !parent.shorthand) return;
  at.push(node.start);
});
if (at.length) {
  let name = 'of_';
  while (new RegExp('\\b' + name.replace('$', '\\$') + '\\b').test(src)) name += '_';
  let out = '';
  let from = 0;
  for (const s of [...new Set(at)].sort((a, b) => a - b)) {
    out += src.slice(from, s) + name;
    from = s + 2;
  }
  writeFileSync(file, out + src.slice(from));
  console.log(`${file}: renamed ${at.length} use(s) of the variable \`of\` to \`${name}\` (a keyword to Espruino)`);
}
