#!/usr/bin/env node
// Shapes a built bundle's one big scope for Espruino's name lookup (in place). Espruino finds a
// variable by walking the children of each scope in the order they were created: no hash, and no
// hoisting (a `var` or `function` child is created when its statement runs). The bundle is one
// function holding ~400 names, so every use of a name declared late walks hundreds of entries, and
// every use of a global (E, String, Math, JSON, getTime…) walks all of them before it reaches the
// interpreter's root (jsvFindChildFromString was ~20 % of a relay command's instructions;
// docs/performance.md). Two changes, neither of which changes what the code means:
// 1. the globals the code reads (of those that exist wherever the bundle runs) become parameters of
//    the bundle's function, called with the globals of the same name: parameters are the scope's first
//    children. Globals the code assigns are left alone.
// 2. a `var` statement first in the function declares its names most-referenced first, so their
//    children are created in that order; a later `var x = …` or `function x(){}` reuses the child.
// Names are ranked by their references inside functions (code that runs at boot only is not counted);
// where the list would take the file over check-espruino's size limit, the least used are left out.
// Usage: node scripts/espruino-scope.js FILE
import { readFileSync, writeFileSync } from 'node:fs';
import * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { DEFAULT_MAX_BYTES } from './espruino-compat.js';

const file = process.argv[2];
if (!file) throw new Error('usage: node scripts/espruino-scope.js FILE');
const src = readFileSync(file, 'utf8');
const ast = acorn.parse(src, { ecmaVersion: 'latest', sourceType: 'script' });
const call = ast.body.find(
  (s) => s.type === 'ExpressionStatement' && s.expression.type === 'CallExpression' && s.expression.callee.type === 'FunctionExpression',
);
if (!call) throw new Error(`${file}: no (function(){…})() in the bundle`);
const iife = call.expression.callee;
if (iife.params.length || call.expression.arguments.length) {
  console.log(`${file}: scope already shaped`);
  process.exit(0);
}

const isFn = (n) => n.type === 'FunctionDeclaration' || n.type === 'FunctionExpression';

/** Names a function declares: parameters, its own name (an expression's), vars and function declarations in its body, catch parameters. */
function declared(fn) {
  const names = new Set();
  for (const p of fn.params) walk.fullAncestor(p, (n) => n.type === 'Identifier' && names.add(n.name));
  if (fn.type === 'FunctionExpression' && fn.id) names.add(fn.id.name);
  walk.recursive(fn.body, null, {
    Function(n) {
      if (n.type === 'FunctionDeclaration' && n.id) names.add(n.id.name);
    },
    VariableDeclaration(n, st, c) {
      for (const d of n.declarations) {
        walk.fullAncestor(d.id, (x) => x.type === 'Identifier' && names.add(x.name));
        if (d.init) c(d.init, st);
      }
    },
    CatchClause(n, st, c) {
      if (n.param) walk.fullAncestor(n.param, (x) => x.type === 'Identifier' && names.add(x.name));
      c(n.body, st);
    },
  });
  return names;
}

const top = declared(iife);
const decls = new Map();
/** References inside functions: top-level names and globals, and the globals the code assigns. */
const topRefs = new Map();
const globalRefs = new Map();
const assigned = new Set();
walk.fullAncestor(iife.body, (node, _st, anc) => {
  if (node.type !== 'Identifier') return;
  const parent = anc[anc.length - 2];
  if (parent && parent.type === 'MemberExpression' && parent.property === node && !parent.computed) return;
  if (parent && parent.type === 'Property' && parent.key === node && !parent.computed) return;
  if (parent && isFn(parent) && parent.id === node) return;
  if (parent && (parent.type === 'LabeledStatement' || parent.type === 'BreakStatement' || parent.type === 'ContinueStatement')) return;
  let inFunction = false;
  for (let i = anc.length - 2; i >= 0; i--) {
    const a = anc[i];
    if (a === iife) break;
    if (isFn(a)) {
      inFunction = true;
      if (!decls.has(a)) decls.set(a, declared(a));
      if (decls.get(a).has(node.name)) return;
    }
    if (a.type === 'CatchClause' && a.param && a.param.type === 'Identifier' && a.param.name === node.name) return;
  }
  if (top.has(node.name)) {
    if (inFunction) topRefs.set(node.name, (topRefs.get(node.name) ?? 0) + 1);
    return;
  }
  const write =
    (parent.type === 'AssignmentExpression' && parent.left === node) ||
    (parent.type === 'UpdateExpression' && parent.argument === node) ||
    (parent.type === 'ForInStatement' && parent.left === node);
  if (write) assigned.add(node.name);
  // `typeof X` of a global that may not exist must keep meaning "undefined": a guarded parameter does.
  globalRefs.set(node.name, (globalRefs.get(node.name) ?? 0) + (inFunction ? 1 : 0));
});

/**
 * Globals that exist wherever the bundle runs (the interpreter, the simulator's vm realm, the unit
 * tests' fake), so passing them cannot throw; the bundle's own declarations before its function
 * (the minifier's helpers) are added below.
 */
const ALWAYS = new Set([
  'E', 'String', 'Math', 'JSON', 'Array', 'Number', 'Object', 'getTime', 'btoa', 'setTimeout', 'clearTimeout',
  'setInterval', 'clearInterval', 'Int32Array', 'Uint32Array', 'Uint8Array', 'isFinite', 'parseInt', 'console',
  'digitalRead', 'digitalWrite',
]);
for (const s of ast.body) {
  if (s.type === 'FunctionDeclaration') ALWAYS.add(s.id.name);
  if (s.type === 'VariableDeclaration') for (const d of s.declarations) if (d.id.type === 'Identifier') ALWAYS.add(d.id.name);
}
/** A name referenced fewer times than this is not worth the bytes of declaring it first (the file has a size limit). */
const MIN_REFS = 3;
const rank = (m) => [...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([n]) => n);
const globals = rank(globalRefs).filter((n) => ALWAYS.has(n) && !assigned.has(n) && globalRefs.get(n) > 0);
const hot = rank(topRefs).filter((n) => topRefs.get(n) >= MIN_REFS);

const shaped = (g, h) =>
  src.slice(0, iife.start) +
  `function(${g.join(',')}){` +
  (h.length ? `var ${h.join(',')};` : '') +
  src.slice(iife.body.start + 1, call.expression.end - 1) +
  g.join(',') +
  src.slice(call.expression.end - 1);
// The file must stay within the size check-espruino allows (the ESP32 keeps the source in JsVars):
// the least used names are left out of the list first, then the least used globals.
let out = shaped(globals, hot);
while (Buffer.byteLength(out) > DEFAULT_MAX_BYTES && hot.length) out = shaped(globals, (hot.length = Math.max(0, hot.length - 8), hot));
while (Buffer.byteLength(out) > DEFAULT_MAX_BYTES && globals.length) out = shaped((globals.length -= 1, globals), hot);
if (Buffer.byteLength(out) > DEFAULT_MAX_BYTES) out = src;
writeFileSync(file, out);
console.log(`${file}: ${globals.length} globals as parameters, ${hot.length} of ${top.size} names declared first by use`);
