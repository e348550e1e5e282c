// Static Espruino compatibility check for the built firmware bundle.
//
// Espruino (v2v29, the ESP32 build's interpreter) parses code as it runs it, so a
// syntax error inside a function body only shows up when that function is first
// called, and loading the file on a device proves nothing. This module parses the
// final JavaScript with acorn and reports everything /work/shared/espruino.md lists as
// rejected or missing: modern syntax, missing built-ins and methods, modules, use
// before definition (Espruino hoists neither `function` nor `var`) and file size.
//
// Plain ESM JavaScript, no build step: `node scripts/check-espruino.js FILE` uses it.

import * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { builtinModules } from 'node:module';

/**
 * @typedef {{
 *   rule: string,
 *   message: string,
 *   line: number,
 *   column: number,
 *   excerpt: string,
 *   severity: 'error' | 'warning',
 * }} Violation
 * `line` is 1-based, `column` is 1-based (editor convention for FILE:LINE:COL).
 * Every violation fails the check, `severity: 'warning'` only marks rules that may be
 * false alarms because the check cannot know the receiver's type.
 *
 * @typedef {{ maxBytes?: number, allowModules?: string[] }} CheckOptions
 *
 * @typedef {{ type: string, start: number, end: number, loc?: any, [key: string]: any }} Node
 *
 * @typedef {{
 *   name: string,
 *   kind: 'var' | 'let' | 'const' | 'function' | 'class' | 'param' | 'catch' | 'import' | 'self',
 *   scope: Node,
 *   scopeAncestors: Node[],
 *   declPoint: number,
 *   declLine: number,
 *   fn: Node | null,
 *   fnCount: number,
 *   ctx?: Node,
 * }} Binding
 *
 * @typedef {{ node: Node, ancestors: Node[], binding: Binding | null, ctx?: Node }} Ref
 */

export const DEFAULT_MAX_BYTES = 48 * 1024;
export const DEFAULT_ALLOW_MODULES = Object.freeze(['Storage', 'net', 'Wifi', 'crypto']);

/** Rule ids and what they catch (also the documentation of the check). */
export const RULES = Object.freeze({
  'parse-error': 'the file does not parse as JavaScript at all',
  'max-size': 'file larger than maxBytes (the ESP32 keeps the source text in JsVars)',
  destructuring: 'object/array destructuring patterns',
  'default-param': 'default parameter values',
  'spread-rest': 'spread elements and rest elements/parameters',
  'tagged-template': 'tagged template literals',
  'optional-chaining': 'optional chaining ?.',
  'logical-assignment': '??= ||= &&=',
  'computed-key': 'computed keys in object literals (and classes)',
  label: 'labelled statements (labelled break/continue)',
  'async-await': 'async functions, await, for await',
  generator: 'generator functions, and the lowered async/generator state machine (swc _ts_generator, tslib __generator)',
  'exponent-operator': '** and **=',
  'private-member': '#private class members',
  'class-extends': 'class extends, and calls of lowered inheritance helpers (swc _inherits, tsc __extends)',
  'esm-syntax': 'import / export / import() / import.meta',
  'new-target': 'new.target',
  'bigint-literal': 'BigInt literals (10n)',
  'regex-flags': 'regular expression flags other than g, i, m',
  'regex-count': 'counted regex quantifiers ({n}, {n,m}), which never match',
  'regex-syntax': 'regular expression lookbehind and named groups',
  'missing-builtin': 'references to globals Espruino does not have (Map, Set, Symbol, ...)',
  'iterator-protocol': 'x[Symbol.iterator]: swc lowers for...of over non-literal arrays to this',
  'missing-static': 'static members Espruino lacks (Array.from, Object.freeze, ...)',
  'array-prototype': 'member access on Array.prototype (undefined as properties, Espruino#159)',
  'missing-method': 'calls of methods Espruino lacks (flat, at, findLast, .keys(), .finally(), ...)',
  'array-lastindexof': 'calls of .lastIndexOf( (missing on arrays; strings have it)',
  'require-module': 'require() of a non-literal, a Node built-in or a module outside the allow-list',
  'process-member': 'process members other than memory, version, env',
  'use-before-define': 'a name used before its definition runs (no hoisting on Espruino)',
});

const MISSING_GLOBALS = /** @type {Record<string, string>} */ ({
  Map: 'use a plain object keyed by string (Object.keys, `in`) or parallel arrays',
  Set: 'use an object of `key: true` flags or an array with indexOf',
  WeakMap: 'store the data on the object itself or in a plain object keyed by an id',
  WeakSet: 'mark the object with a property or keep an array of ids',
  Symbol: 'use string property names',
  Proxy: 'call accessor functions explicitly',
  Reflect: 'use the Object.* functions and direct call/apply',
  WeakRef: 'hold a normal reference and clear it explicitly',
  BigInt: 'use Number (53-bit integers) or two 32-bit halves',
  TextEncoder: 'use E.toUint8Array(str)',
  TextDecoder: 'use E.toString(bytes)',
  RangeError: 'throw new Error(...) carrying a `code` field',
  Intl: 'format numbers and dates by hand',
  queueMicrotask: 'use setTimeout(fn, 0)',
  structuredClone: 'use JSON.parse(JSON.stringify(x)) or a hand-written copy',
  setImmediate: 'use setTimeout(fn, 0)',
  Buffer: 'use Uint8Array with E.toString / E.toUint8Array',
  fetch: 'use require("net") sockets',
  globalThis: 'use `global` (Espruino\'s global object)',
});

const MISSING_STATICS = /** @type {Record<string, string>} */ ({
  'Array.from': 'use [].slice.call(arrayLike) or a for loop',
  'Array.of': 'use an array literal',
  'Object.freeze': 'drop it (or copy the object) - nothing enforces it on the device',
  'Object.is': 'use === (and x !== x for NaN)',
  'Date.UTC': 'compute the epoch value arithmetically',
  'Promise.race': 'resolve a new Promise from whichever then() fires first',
  'Promise.allSettled': 'map each promise through then(ok, fail) to a value and use Promise.all',
  'Promise.any': 'resolve a new Promise from the first then() that succeeds',
  'String.raw': 'write the string with escapes',
});

const MISSING_METHODS = /** @type {Record<string, string>} */ ({
  flat: 'Array.prototype.flat is missing: concat in a loop ([].concat.apply([], arrays) for one level)',
  flatMap: 'Array.prototype.flatMap is missing: map, then concat in a loop',
  at: '.at() is missing on arrays and strings: index with x[x.length - 1]',
  findLast: 'Array.prototype.findLast is missing: loop backwards',
  findLastIndex: 'Array.prototype.findLastIndex is missing: loop backwards',
  reduceRight: 'Array.prototype.reduceRight is missing: loop backwards',
  trimStart: 'String.prototype.trimStart is missing: use replace(/^\\s+/, "") or trim()',
  trimEnd: 'String.prototype.trimEnd is missing: use replace(/\\s+$/, "") or trim()',
  codePointAt: 'String.prototype.codePointAt is missing: use charCodeAt',
  search: 'String.prototype.search is missing: use regex.exec(str) and its .index',
  finally: 'Promise.prototype.finally is missing: run the cleanup in both then() and catch()',
  keys: '.keys() is missing on arrays (and there is no Map): use Object.keys(obj) or an index loop',
});

const ALLOWED_PROCESS_MEMBERS = new Set(['memory', 'version', 'env']);

/** Methods whose function arguments run synchronously, i.e. at the call's position. */
const SYNC_CALLBACK_METHODS = new Set([
  'forEach', 'map', 'filter', 'reduce', 'some', 'every', 'find', 'findIndex', 'sort',
]);

/**
 * Helpers that the es5 lowering emits for constructs Espruino cannot run. They are found
 * by a string only they contain, or by their unminified name; every call of one is
 * reported (or the helper itself, if it is never called).
 * @type {{rule: string, texts: string[], names: string[], onCall: string, onHelper: string}[]}
 */
const LOWERED_HELPERS = [
  {
    rule: 'class-extends',
    texts: ['Super expression must either be null or a function', 'Class extends value'], // swc/babel _inherits, tsc __extends
    names: ['__extends', '_inherits', '_inheritsLoose'],
    onCall: 'lowered `class ... extends` (inheritance helper call): Espruino dies at load on it ("Uncaught undefined") - use composition, a plain object that holds the other',
    onHelper: 'inheritance helper for a lowered `class ... extends` is in the bundle: Espruino dies at load on lowered inheritance - use composition',
  },
  {
    rule: 'generator',
    texts: ['Generator is already executing'], // swc _ts_generator, tslib __generator
    names: ['__generator', '_ts_generator', '_async_to_generator', '__awaiter'],
    onCall: 'lowered async function or generator (state-machine helper call): the runtime it needs relies on hoisting and Iterator/Symbol, which Espruino lacks - use Promise .then() chains or an explicit state object',
    onHelper: 'async/generator state-machine helper is in the bundle: Espruino cannot run lowered async functions or generators - use Promise .then() chains',
  },
];

const NODE_BUILTINS = new Set(
  builtinModules.map((m) => m.replace(/^node:/, '')).concat(['node:test', 'test']),
);

const EXCERPT_MAX = 60;

/**
 * Check JavaScript source for constructs Espruino v2v29 rejects or lacks.
 * @param {string} source
 * @param {CheckOptions} [options]
 * @returns {Violation[]} sorted by position; empty when the file is fine
 */
export function checkEspruino(source, { maxBytes = DEFAULT_MAX_BYTES, allowModules = [...DEFAULT_ALLOW_MODULES] } = {}) {
  const checker = new Checker(source, { maxBytes, allowModules });
  checker.run();
  return checker.result();
}

/**
 * One line per violation: `FILE:LINE:COL rule-id: message (excerpt)`.
 * @param {string} file
 * @param {Violation} v
 */
export function formatViolation(file, v) {
  return `${file}:${v.line}:${v.column} ${v.rule}: ${v.message} (${v.excerpt})`;
}

/** @param {Node} node */
const isFunction = (node) =>
  node.type === 'FunctionDeclaration' || node.type === 'FunctionExpression' || node.type === 'ArrowFunctionExpression';

/** @param {Node | null | undefined} node @returns {string | null} static property name of a MemberExpression */
function memberName(node) {
  if (!node || node.type !== 'MemberExpression') return null;
  if (!node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.computed && node.property.type === 'Literal' && typeof node.property.value === 'string') return node.property.value;
  return null;
}

/** @param {Node | null | undefined} node */
function stringValue(node) {
  if (!node) return null;
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

/** Names bound by a declaration pattern. @param {Node | null} pattern @param {Node[]} [out] */
function patternIdentifiers(pattern, out = []) {
  if (!pattern) return out;
  switch (pattern.type) {
    case 'Identifier': out.push(pattern); break;
    case 'ObjectPattern':
      for (const p of pattern.properties) patternIdentifiers(p.type === 'RestElement' ? p : p.value, out);
      break;
    case 'ArrayPattern': for (const e of pattern.elements) patternIdentifiers(e, out); break;
    case 'AssignmentPattern': patternIdentifiers(pattern.left, out); break;
    case 'RestElement': patternIdentifiers(pattern.argument, out); break;
    default: break; // MemberExpression targets bind nothing
  }
  return out;
}

/**
 * Problems in a regular expression pattern that Espruino's regex engine rejects.
 * @param {string} pattern
 */
function regexPatternProblems(pattern) {
  const problems = [];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      if (!inClass && pattern[i + 1] === 'k' && pattern[i + 2] === '<') problems.push('named backreference \\k<name>');
      i++;
      continue;
    }
    if (inClass) { if (ch === ']') inClass = false; continue; }
    if (ch === '[') { inClass = true; continue; }
    if (ch === '(' && pattern[i + 1] === '?' && pattern[i + 2] === '<') {
      if (pattern[i + 3] === '=' || pattern[i + 3] === '!') problems.push(`lookbehind (?<${pattern[i + 3]}...)`);
      else problems.push('named group (?<name>...)');
    }
  }
  return problems;
}

class Checker {
  /** @param {string} source @param {{maxBytes: number, allowModules: string[]}} opts */
  constructor(source, opts) {
    this.source = source;
    this.opts = opts;
    this.allowModules = new Set(opts.allowModules);
    /** @type {Violation[]} */
    this.violations = [];
    /** @type {Map<Node, Map<string, Binding>>} */
    this.scopes = new Map();
    /** @type {Ref[]} */
    this.refs = [];
    /** @type {Map<Node, Ref>} identifier node -> its reference record */
    this.refByNode = new Map();
    /** @type {{node: Node, ancestors: Node[]}[]} */
    this.calls = [];
    /** @type {{node: Node, ancestors: Node[], helper: typeof LOWERED_HELPERS[number]}[]} */
    this.helperMarkers = [];
    /** @type {Set<Node>} functions that run where they are written (IIFE, sync callbacks) */
    this.inline = new Set();
    /** @type {Map<Node, boolean>} */
    this.guardCache = new Map();
    /** @type {Set<string>} */
    this.seen = new Set();
    /** @type {Map<Violation, number>} */
    this.positions = new Map();
    /** @type {Set<Binding>} variables holding a require() wrapper (esbuild's __require shim) */
    this.requireAliases = new Set();
  }

  /** @param {string} rule @param {{start: number, end: number, loc?: any}} node @param {string} message @param {'error'|'warning'} [severity] */
  report(rule, node, message, severity = 'error') {
    const key = `${rule}@${node.start}@${message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const { line, column } = node.loc ? node.loc.start : acorn.getLineInfo(this.source, node.start);
    let excerpt = this.source.slice(node.start, Math.min(node.end, node.start + EXCERPT_MAX));
    if (node.end - node.start > EXCERPT_MAX) excerpt += '...';
    excerpt = excerpt.replace(/\s+/g, ' ').trim();
    if (!excerpt) excerpt = `...${this.source.slice(Math.max(0, node.start - 30), node.start).replace(/\s+/g, ' ').trim()}`; // e.g. at end of file
    this.violations.push({ rule, message, line, column: column + 1, excerpt, severity });
    this.positions.set(this.violations[this.violations.length - 1], node.start);
  }

  /** @returns {Violation[]} */
  result() {
    const pos = (/** @type {Violation} */ v) => this.positions.get(v) ?? 0;
    return this.violations.slice().sort((a, b) => pos(a) - pos(b) || a.rule.localeCompare(b.rule));
  }

  run() {
    const bytes = Buffer.byteLength(this.source, 'utf8');
    if (bytes > this.opts.maxBytes) {
      this.report('max-size', { start: 0, end: 0 },
        `file is ${bytes} bytes, over the ${this.opts.maxBytes}-byte limit: the ESP32 keeps the whole source text in JsVars, so it costs heap at run time - minify, or move code out`);
      this.violations[this.violations.length - 1].excerpt = `${bytes} > ${this.opts.maxBytes} bytes`;
    }
    const ast = this.parse();
    if (!ast) return;
    this.collect(ast);
    this.resolveAll();
    this.checkReferences();
    this.checkCalls();
    this.checkLoweredHelpers();
    this.checkHoisting();
  }

  /** @returns {Node | null} */
  parse() {
    /** @type {acorn.Options} */
    const base = { ecmaVersion: 'latest', locations: true, allowHashBang: true };
    try {
      return /** @type {any} */ (acorn.parse(this.source, { ...base, sourceType: 'script' }));
    } catch (err) {
      try {
        // import/export only parse as a module; report them as esm-syntax below.
        return /** @type {any} */ (acorn.parse(this.source, { ...base, sourceType: 'module' }));
      } catch {
        const e = /** @type {any} */ (err);
        const pos = typeof e.pos === 'number' ? e.pos : 0;
        this.report('parse-error', { start: pos, end: Math.min(this.source.length, pos + 40) },
          `${String(e.message).replace(/ \(\d+:\d+\)$/, '')}: Espruino cannot load a file that does not parse`);
        return null;
      }
    }
  }

  // ---------------------------------------------------------------- pass 1

  /** @param {Node} ast */
  collect(ast) {
    // fullAncestor calls back once per node; `type` is the walker's view of it, which
    // tells expression identifiers ('Identifier') from binding and assignment targets
    // ('VariablePattern'). Property keys, member names and labels are not visited.
    walk.fullAncestor(/** @type {any} */ (ast), (/** @type {any} */ node, _st, /** @type {any[]} */ anc, /** @type {string} */ type) => {
      const ancestors = anc.slice(0, -1); // without the node itself
      const parent = ancestors[ancestors.length - 1];
      switch (node.type) {
        case 'Identifier': {
          if (type !== 'Identifier') break;
          const ref = { node, ancestors, binding: null };
          this.refs.push(ref);
          this.refByNode.set(node, ref);
          break;
        }
        case 'AssignmentExpression':
          if (node.operator !== '=' && node.left.type === 'Identifier') {
            // compound assignment reads the name first
            const ref = { node: node.left, ancestors: anc.slice(), binding: null };
            this.refs.push(ref);
            this.refByNode.set(node.left, ref);
          }
          if (['??=', '||=', '&&='].includes(node.operator)) {
            this.report('logical-assignment', node, `\`${node.operator}\` is a syntax error on Espruino: write \`if (x == null) x = ...\` / \`x = x || ...\``);
          }
          if (node.operator === '**=') this.report('exponent-operator', node, '`**=` is a syntax error on Espruino: use x = Math.pow(x, y)');
          break;
        case 'VariableDeclaration': this.declareVariables(node, ancestors); break;
        case 'FunctionDeclaration':
        case 'FunctionExpression':
        case 'ArrowFunctionExpression':
          this.declareFunction(node, ancestors);
          this.checkFunctionSyntax(node);
          break;
        case 'ClassDeclaration':
        case 'ClassExpression':
          this.declareClass(node, ancestors);
          if (node.superClass) {
            this.report('class-extends', node, '`class ... extends` dies on Espruino once built (lowered inheritance runs before the un-hoisted constructor; deeper chains kill the interpreter): use composition - a plain object that holds the other');
          }
          break;
        case 'CatchClause':
          for (const id of patternIdentifiers(node.param)) this.declare(node, [...ancestors, node], id, 'catch', null);
          break;
        case 'ImportDeclaration':
          for (const spec of node.specifiers) this.declare(ancestors[0], [ancestors[0]], spec.local, 'import', null);
          this.report('esm-syntax', node, '`import` declarations do not exist on Espruino: bundle to one iife file, load modules with require("Storage") etc.');
          break;
        case 'ExportNamedDeclaration':
        case 'ExportDefaultDeclaration':
        case 'ExportAllDeclaration':
          this.report('esm-syntax', node, '`export` does not exist on Espruino: the bundle must be one iife script');
          break;
        case 'ImportExpression':
          this.report('esm-syntax', node, '`import()` does not exist on Espruino: bundle everything into the one file');
          break;
        case 'MetaProperty':
          if (node.meta.name === 'new') this.report('new-target', node, '`new.target` is not supported by Espruino: pass a flag explicitly');
          else this.report('esm-syntax', node, '`import.meta` does not exist on Espruino');
          break;
        case 'CallExpression':
        case 'NewExpression':
          this.calls.push({ node, ancestors });
          this.markInline(node);
          break;
        case 'ObjectPattern':
        case 'ArrayPattern':
          if (!parent || (parent.type !== 'ObjectPattern' && parent.type !== 'ArrayPattern' && parent.type !== 'RestElement' &&
              !(parent.type === 'AssignmentPattern' && ['ObjectPattern', 'ArrayPattern'].includes(ancestors[ancestors.length - 2]?.type)))) {
            this.report('destructuring', node, 'destructuring is not supported by Espruino ("x is not defined" or "Got \'{\' expected ID"): read the properties one by one (o.a, arr[0])');
          }
          break;
        case 'AssignmentPattern':
          if (parent && isFunction(parent)) {
            this.report('default-param', node, 'default parameters are a syntax error on Espruino ("Got \'=\' expected \',\'"): write `if (x === undefined) x = ...` in the body');
          }
          break;
        case 'SpreadElement':
          this.report('spread-rest', node, 'spread `...` is a syntax error on Espruino ("Got \'.\' expected ..."): use fn.apply(null, arr), arr.concat(...) or Object.assign');
          break;
        case 'RestElement':
          this.report('spread-rest', node, 'rest `...` is a syntax error on Espruino: use `arguments` / arr.slice(n)');
          break;
        case 'TaggedTemplateExpression':
          this.report('tagged-template', node, 'tagged templates are not supported by Espruino: call the function with a plain string');
          break;
        case 'ChainExpression':
          this.report('optional-chaining', node, 'optional chaining `?.` is a syntax error on Espruino ("Got \'.\' expected EOF"): write `a && a.b`');
          break;
        case 'Property':
          if (node.computed && parent && parent.type === 'ObjectExpression') {
            this.report('computed-key', node, 'computed keys `{[k]: v}` are a syntax error on Espruino ("Got \'[\' expected ID"): create the object, then assign o[k] = v');
          }
          break;
        case 'MethodDefinition':
        case 'PropertyDefinition':
          if (node.computed) this.report('computed-key', node, 'computed class member keys are not accepted by Espruino\'s parser (it expects a name): use a plain name');
          if (node.key.type === 'PrivateIdentifier') this.report('private-member', node, '`#private` class members are a syntax error on Espruino: use a normal (e.g. _underscored) property');
          break;
        case 'MemberExpression':
          if (node.property.type === 'PrivateIdentifier') this.report('private-member', node, '`#private` members are a syntax error on Espruino: use a normal (e.g. _underscored) property');
          break;
        case 'LabeledStatement':
          this.report('label', node, 'labelled statements (labelled break/continue) are not supported by Espruino: use a flag variable or a function with return');
          break;
        case 'AwaitExpression':
          if (!ancestors.some((a) => isFunction(a) && a.async)) {
            this.report('async-await', node, '`await` is not supported by Espruino: chain .then() callbacks');
          }
          break;
        case 'ForOfStatement':
          if (node.await) this.report('async-await', node, '`for await` is not supported by Espruino: chain .then() callbacks');
          break;
        case 'BinaryExpression':
          if (node.operator === '**') this.report('exponent-operator', node, '`**` is a syntax error on Espruino: use Math.pow(a, b)');
          if (node.operator === 'in' && node.left.type === 'PrivateIdentifier') this.report('private-member', node, '`#x in obj` is not supported by Espruino');
          break;
        case 'Literal':
          if (node.bigint !== undefined) this.report('bigint-literal', node, 'BigInt literals are not supported by Espruino: use Number');
          if (node.regex) this.checkRegex(node, node.regex.pattern, node.regex.flags);
          else if (typeof node.value === 'string') {
            const helper = LOWERED_HELPERS.find((h) => h.texts.some((t) => node.value.startsWith(t)));
            if (helper) this.helperMarkers.push({ node, ancestors, helper });
          }
          break;
        default: break;
      }
    });
  }

  /** @param {Node} node */
  checkFunctionSyntax(node) {
    if (node.async) this.report('async-await', node, 'async functions are not supported by Espruino (and swc lowers them to a generator runtime it also lacks): use Promise .then() chains');
    if (node.generator) this.report('generator', node, 'generator functions are not supported by Espruino: write an explicit state object with a next() method');
  }

  /** @param {Node} node @param {string} pattern @param {string} flags */
  checkRegex(node, pattern, flags) {
    const bad = [...flags].filter((f) => !'gim'.includes(f));
    if (bad.length) this.report('regex-flags', node, `regex flag${bad.length > 1 ? 's' : ''} "${bad.join('')}" not supported by Espruino (only g, i, m): rewrite the pattern without it`);
    // Measured on Espruino 2v29: its regex engine has no counted quantifiers, so /^[0-9a-f]{64}$/
    // never matches (a device that refused every welcome). Test the length in code instead.
    if (/(^|[^\\])\{\d+(,\d*)?\}/.test(pattern))
      this.report('regex-count', node, `counted quantifier {n} in /${pattern}/ never matches on Espruino: test the length in code and use + or *`);
    const problems = regexPatternProblems(pattern);
    if (problems.length) {
      this.report('regex-syntax', node, `regex ${[...new Set(problems)].join(' and ')} not supported by Espruino's regex engine: use plain groups and index the match`);
    }
  }

  /** Functions that run where they are written: IIFEs, .call/.apply on a function literal, sync array callbacks, Promise executors. @param {Node} call */
  markInline(call) {
    const callee = call.callee;
    if (isFunction(callee)) this.inline.add(callee);
    const name = memberName(callee);
    if (callee.type === 'MemberExpression' && isFunction(callee.object) && (name === 'call' || name === 'apply')) this.inline.add(callee.object);
    if (name && SYNC_CALLBACK_METHODS.has(name)) {
      for (const arg of call.arguments) if (isFunction(arg)) this.inline.add(arg);
    }
    if (call.type === 'NewExpression' && callee.type === 'Identifier' && callee.name === 'Promise' && call.arguments[0] && isFunction(call.arguments[0])) {
      this.inline.add(call.arguments[0]);
    }
  }

  // ---------------------------------------------------------------- scopes

  /**
   * @param {Node} scope @param {Node[]} scopeAncestors ancestors up to and including scope
   * @param {Node} id @param {Binding['kind']} kind @param {Node | null} fn function value, if known
   * @param {number} [declPoint]
   */
  declare(scope, scopeAncestors, id, kind, fn, declPoint = id.start) {
    let names = this.scopes.get(scope);
    if (!names) { names = new Map(); this.scopes.set(scope, names); }
    const existing = names.get(id.name);
    if (existing) {
      if (declPoint < existing.declPoint) {
        existing.declPoint = declPoint;
        existing.declLine = id.loc.start.line;
      }
      if (fn) { existing.fn = existing.fn || fn; existing.fnCount++; }
      return;
    }
    names.set(id.name, {
      name: id.name, kind, scope, scopeAncestors, declPoint, declLine: id.loc.start.line, fn, fnCount: fn ? 1 : 0,
    });
  }

  /** Nearest function or program: where `var` lives. @param {Node[]} ancestors */
  varScope(ancestors) {
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const a = ancestors[i];
      if (isFunction(a) || a.type === 'Program' || a.type === 'StaticBlock') return ancestors.slice(0, i + 1);
    }
    return ancestors.slice(0, 1);
  }

  /** Nearest block-like scope: where let/const/class/function declarations live. @param {Node[]} ancestors @param {Node} child */
  blockScope(ancestors, child) {
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const a = ancestors[i];
      const next = ancestors[i + 1] || child;
      if ((a.type === 'ForStatement' && a.init === next) || ((a.type === 'ForInStatement' || a.type === 'ForOfStatement') && a.left === next)) {
        return ancestors.slice(0, i + 1);
      }
      if (a.type === 'BlockStatement') {
        const p = ancestors[i - 1];
        if (p && isFunction(p) && p.body === a) return ancestors.slice(0, i); // function body: the function's scope
        return ancestors.slice(0, i + 1);
      }
      if (a.type === 'Program' || a.type === 'StaticBlock' || a.type === 'SwitchStatement' || isFunction(a)) return ancestors.slice(0, i + 1);
    }
    return ancestors.slice(0, 1);
  }

  /** @param {Node} node @param {Node[]} ancestors */
  declareVariables(node, ancestors) {
    const chain = node.kind === 'var' ? this.varScope(ancestors) : this.blockScope(ancestors, node);
    const scope = chain[chain.length - 1];
    for (const d of node.declarations) {
      const fn = d.id.type === 'Identifier' && d.init && isFunction(d.init) ? d.init : null;
      for (const id of patternIdentifiers(d.id)) {
        // the name exists once its declarator has been reached: `var a = a || {}` reads the old a
        this.declare(scope, chain, id, node.kind, fn, d.id.end);
      }
    }
  }

  /** @param {Node} node @param {Node[]} ancestors */
  declareFunction(node, ancestors) {
    const own = [...ancestors, node];
    // The walk is post-order: the body's own declarations are already in place.
    for (const p of node.params) for (const id of patternIdentifiers(p)) this.declare(node, own, id, 'param', null);
    if (node.type === 'FunctionDeclaration' && node.id) {
      const chain = this.blockScope(ancestors, node);
      this.declare(chain[chain.length - 1], chain, node.id, 'function', node, node.start);
    } else if (node.id && !this.scopes.get(node)?.has(node.id.name)) {
      // `function e(e) {...}`: a parameter or var of the same name shadows the expression's own name
      this.declare(node, own, node.id, 'self', node);
    }
  }

  /** @param {Node} node @param {Node[]} ancestors */
  declareClass(node, ancestors) {
    if (!node.id) return;
    if (node.type === 'ClassDeclaration') {
      const chain = this.blockScope(ancestors, node);
      this.declare(chain[chain.length - 1], chain, node.id, 'class', null, node.start);
    } else {
      this.declare(node, [...ancestors, node], node.id, 'self', null);
    }
  }

  /** @param {string} name @param {Node[]} ancestors @returns {Binding | null} */
  resolve(name, ancestors) {
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const b = this.scopes.get(ancestors[i])?.get(name);
      if (b) return b;
    }
    return null;
  }

  resolveAll() {
    for (const ref of this.refs) ref.binding = this.resolve(ref.node.name, ref.ancestors);
  }

  /** @param {Node} id an identifier visited as an expression @returns {boolean} true when it names no declaration of ours */
  isFree(id) {
    const ref = this.refByNode.get(id);
    return !!ref && ref.binding === null;
  }

  /**
   * The function whose call runs this code: the innermost enclosing function that is
   * not run in place (IIFE, sync callback), or the Program.
   * @param {Node[]} chain ancestors, innermost last
   * @param {Node} [leaf] the node below the chain
   */
  contextOf(chain, leaf) {
    for (let i = chain.length - 1; i >= 0; i--) {
      const a = chain[i];
      const next = chain[i + 1] || leaf;
      if (isFunction(a) && !this.inline.has(a)) return a;
      if (a.type === 'PropertyDefinition' && !a.static && next && a.value === next) return a; // instance field initialiser
    }
    return chain[0];
  }

  // ---------------------------------------------------------------- guards

  /** Is this reference inside a branch selected by a feature test? @param {Node} node @param {Node[]} ancestors */
  isGuarded(node, ancestors) {
    let child = node;
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const a = ancestors[i];
      if (a.type === 'LogicalExpression' && a.right === child && this.hasGuard(a.left)) return true;
      if ((a.type === 'ConditionalExpression' || a.type === 'IfStatement') &&
          (a.consequent === child || a.alternate === child) && this.hasGuard(a.test)) return true;
      child = a;
    }
    return false;
  }

  /**
   * Does a test expression perform feature detection? `typeof GLOBAL`, `typeof GLOBAL.member`,
   * a bare probe `GLOBAL.member`, or a comparison with the name of a missing built-in
   * (swc's `n === "Map" || n === "Set"`: only true for values Espruino cannot create).
   * @param {Node} expr
   */
  hasGuard(expr) {
    if (!expr) return false;
    const cached = this.guardCache.get(expr);
    if (cached !== undefined) return cached;
    let found = false;
    switch (expr.type) {
      case 'LogicalExpression':
        found = this.hasGuard(expr.left) || this.hasGuard(expr.right);
        break;
      case 'UnaryExpression':
        if (expr.operator === 'typeof') found = this.isFeatureRef(expr.argument);
        else if (expr.operator === '!') found = this.hasGuard(expr.argument);
        break;
      case 'BinaryExpression':
        for (const side of [expr.left, expr.right]) {
          if (side.type === 'Literal' && typeof side.value === 'string' && Object.hasOwn(MISSING_GLOBALS, side.value) &&
              ['==', '===', '!=', '!=='].includes(expr.operator)) found = true;
        }
        found = found || this.hasGuard(expr.left) || this.hasGuard(expr.right);
        break;
      case 'ConditionalExpression':
        found = this.hasGuard(expr.test) || this.hasGuard(expr.consequent) || this.hasGuard(expr.alternate);
        break;
      case 'SequenceExpression':
        found = expr.expressions.some((e) => this.hasGuard(e));
        break;
      case 'MemberExpression':
        found = this.isFeatureRef(expr);
        break;
      default: break;
    }
    this.guardCache.set(expr, found);
    return found;
  }

  /**
   * A feature that a test may probe: a missing global (`Symbol`, `Reflect.get`), a missing
   * static (`Array.from`), or `require` (esbuild's shim). A test on anything else, such
   * as `typeof E` or `console.log`, guards nothing on this list.
   * @param {Node} node
   */
  isFeatureRef(node) {
    let n = node;
    while (n.type === 'MemberExpression') n = n.object;
    if (n.type !== 'Identifier' || !this.isFree(n)) return false;
    if (Object.hasOwn(MISSING_GLOBALS, n.name) || n.name === 'require') return true;
    const prop = memberName(node);
    return node.type === 'MemberExpression' && node.object === n && prop !== null && Object.hasOwn(MISSING_STATICS, `${n.name}.${prop}`);
  }

  // ---------------------------------------------------------------- built-ins, modules, process

  checkReferences() {
    /** @type {Ref[]} */
    const requireRefs = [];

    for (const ref of this.refs) {
      if (ref.binding) continue;
      const { node, ancestors } = ref;
      const name = node.name;
      const parent = ancestors[ancestors.length - 1];
      const grand = ancestors[ancestors.length - 2];
      const isTypeofArg = parent && parent.type === 'UnaryExpression' && parent.operator === 'typeof';
      const isObjectOf = parent && parent.type === 'MemberExpression' && parent.object === node;

      if (name === 'require') { requireRefs.push(ref); continue; }

      if (Object.hasOwn(MISSING_GLOBALS, name)) {
        if (isTypeofArg || this.isGuarded(node, ancestors)) continue;
        const prop = isObjectOf ? memberName(parent) : null;
        if (name === 'Symbol' && (prop === 'iterator' || prop === 'asyncIterator') &&
            grand && grand.type === 'MemberExpression' && grand.computed && grand.property === parent) {
          this.report('iterator-protocol', grand,
            'x[Symbol.iterator] needs Symbol, which Espruino lacks: swc lowers `for...of` over anything but an array literal (and spread/destructuring of non-arrays) to this - iterate with an index loop or forEach');
        } else {
          this.report('missing-builtin', node, `${name} does not exist on Espruino (ReferenceError): ${MISSING_GLOBALS[name]}`);
        }
        continue;
      }

      if (name === 'process' && isObjectOf) {
        const prop = memberName(parent);
        if (prop === null || !ALLOWED_PROCESS_MEMBERS.has(prop)) {
          this.report('process-member', parent, `process.${prop ?? '[...]'} does not exist on Espruino: only process.memory(), process.version and process.env`);
        }
        continue;
      }

      if (isObjectOf) {
        const prop = memberName(parent);
        const key = `${name}.${prop}`;
        if (prop && Object.hasOwn(MISSING_STATICS, key)) {
          const pp = ancestors[ancestors.length - 2];
          const probe = pp && ((pp.type === 'UnaryExpression' && (pp.operator === 'typeof' || pp.operator === '!')) ||
            ((pp.type === 'IfStatement' || pp.type === 'ConditionalExpression') && pp.test === parent) ||
            (pp.type === 'LogicalExpression' && pp.left === parent));
          if (!probe && !this.isGuarded(parent, ancestors.slice(0, -1))) {
            this.report('missing-static', parent, `${key} does not exist on Espruino: ${MISSING_STATICS[key]}`);
          }
        }
        if (name === 'Array' && prop === 'prototype' && grand && grand.type === 'MemberExpression' && grand.object === parent) {
          const target = ancestors[ancestors.length - 3];
          const isWrite = target && target.type === 'AssignmentExpression' && target.left === grand;
          const isTypeof = target && target.type === 'UnaryExpression' && target.operator === 'typeof';
          if (!isWrite && !isTypeof) {
            const m = memberName(grand) ?? '[...]';
            this.report('array-prototype', grand, `Array.prototype.${m} is undefined as a property on Espruino (espruino/Espruino#159): write [].${m}.call(x) or call it on an array`);
          }
        }
      }
    }

    // require: the free global, and esbuild's __require shim (a variable whose initialiser uses it)
    for (const ref of requireRefs) {
      const parent = ref.ancestors[ref.ancestors.length - 1];
      if (parent && (parent.type === 'CallExpression' || parent.type === 'NewExpression') && parent.callee === ref.node) continue; // checked with calls
      const decl = this.enclosingDeclarator(ref);
      if (decl) { this.requireAliases.add(decl); continue; }
      if (parent && parent.type === 'UnaryExpression' && parent.operator === 'typeof') continue;
      if (this.isGuarded(ref.node, ref.ancestors)) continue;
      this.report('require-module', ref.node, 'require used as a value: the check (and the Espruino IDE\'s module loader) only understands require("Name") with a literal name');
    }
  }

  /** The binding of the variable whose initialiser contains this reference, if any. @param {Ref} ref */
  enclosingDeclarator(ref) {
    const anc = ref.ancestors;
    for (let i = anc.length - 1; i >= 0; i--) {
      const a = anc[i];
      if (a.type === 'VariableDeclarator' && a.init && a.id.type === 'Identifier' && (anc[i + 1] === a.init || (i + 1 === anc.length && a.init === ref.node))) {
        return this.resolve(a.id.name, anc.slice(0, i));
      }
    }
    return null;
  }

  checkCalls() {
    const aliases = this.requireAliases;
    for (const { node } of this.calls) {
      const callee = node.callee;
      // require("X") or shim("X")
      if (node.type === 'CallExpression' && callee.type === 'Identifier') {
        const ref = this.refByNode.get(callee);
        const isRequire = ref && ((ref.binding === null && callee.name === 'require') || (ref.binding && aliases.has(ref.binding)));
        if (isRequire) this.checkRequire(node);
      }
      // RegExp("...", "flags")
      if (callee.type === 'Identifier' && callee.name === 'RegExp' && this.isFree(callee)) {
        const pattern = stringValue(node.arguments[0]);
        const flags = stringValue(node.arguments[1]);
        if (pattern !== null) this.checkRegex(node, pattern, flags ?? '');
        else if (flags !== null) this.checkRegex(node, '', flags);
      }
      // missing methods
      const name = memberName(callee);
      if (!name || node.type !== 'CallExpression') continue;
      if (name === 'lastIndexOf') {
        this.report('array-lastindexof', node, 'Array.prototype.lastIndexOf is missing on Espruino (strings have it; the check cannot tell the receiver\'s type, so this fails either way): use indexOf or a backward loop', 'warning');
      } else if (name === 'keys') {
        const obj = callee.object;
        if (!(obj.type === 'Identifier' && obj.name === 'Object' && this.isFree(obj))) {
          this.report('missing-method', node, MISSING_METHODS.keys);
        }
      } else if (Object.hasOwn(MISSING_METHODS, name)) {
        this.report('missing-method', node, `.${name}() - ${MISSING_METHODS[name]}`);
      }
    }
  }

  /** @param {Node} call */
  checkRequire(call) {
    const arg = call.arguments[0];
    const name = stringValue(arg);
    const allowed = [...this.allowModules].join(', ');
    if (name === null) {
      this.report('require-module', call, `require() with a non-literal name: Espruino modules must be named literally, one of ${allowed}`);
    } else if (this.allowModules.has(name)) {
      // fine
    } else if (NODE_BUILTINS.has(name.replace(/^node:/, ''))) {
      this.report('require-module', call, `require("${name}"): a Node.js built-in module name - Node's modules do not exist on Espruino (files: require("Storage"); sockets: require("net")); add it to allowModules only if Espruino's own module of that name is meant`);
    } else {
      this.report('require-module', call, `require("${name}") is not in the module allow-list (${allowed}): bundle the code into the firmware instead, or add it to allowModules if the device really has it`);
    }
  }

  /** swc `_inherits` / tsc `__extends`, `_ts_generator` / `__generator` in the output mean lowered extends / async / generators. */
  checkLoweredHelpers() {
    for (const helper of LOWERED_HELPERS) {
      /** @type {Map<Binding, Node | null>} helper binding -> its marker string */
      const helpers = new Map();
      for (const { node, ancestors } of this.helperMarkers.filter((m) => m.helper === helper)) {
        // The helper is the outermost named function / variable around the marker (swc's
        // _ts_generator keeps it in an inner function), without leaving the IIFE it sits in.
        let found = null;
        for (let i = ancestors.length - 1; i >= 0; i--) {
          const a = ancestors[i];
          if (found && isFunction(a) && this.inline.has(a)) break;
          let b = null;
          if (a.type === 'FunctionDeclaration' && a.id) b = this.resolve(a.id.name, ancestors.slice(0, i));
          else if (a.type === 'VariableDeclarator' && a.id.type === 'Identifier') b = this.resolve(a.id.name, ancestors.slice(0, i));
          if (b) found = b;
        }
        if (found) helpers.set(found, node);
      }
      for (const names of this.scopes.values()) {
        for (const b of names.values()) if (helper.names.includes(b.name) && b.kind !== 'param' && !helpers.has(b)) helpers.set(b, null);
      }
      if (!helpers.size) continue;
      const used = new Set();
      for (const { node } of this.calls) {
        if (node.callee.type !== 'Identifier') continue;
        const b = this.refByNode.get(node.callee)?.binding;
        if (b && helpers.has(b)) {
          used.add(b);
          this.report(helper.rule, node, helper.onCall);
        }
      }
      for (const [b, marker] of helpers) {
        if (!used.has(b) && marker) this.report(helper.rule, marker, helper.onHelper);
      }
    }
  }

  // ---------------------------------------------------------------- hoisting

  checkHoisting() {
    const HOISTABLE = new Set(['var', 'let', 'const', 'function', 'class']);
    /** @type {Map<Node, Ref[]>} */
    const refsByCtx = new Map();
    /** @type {Map<Node, {node: Node, binding: Binding}[]>} */
    const callsByCtx = new Map();
    const bctx = (/** @type {Binding} */ b) => (b.ctx ??= this.contextOf(b.scopeAncestors));

    for (const ref of this.refs) {
      const parent = ref.ancestors[ref.ancestors.length - 1];
      if (parent && parent.type === 'UnaryExpression' && parent.operator === 'typeof') continue;
      ref.ctx = this.contextOf(ref.ancestors, ref.node);
      if (!ref.binding) continue;
      let list = refsByCtx.get(ref.ctx);
      if (!list) refsByCtx.set(ref.ctx, (list = []));
      list.push(ref);
    }
    for (const { node, ancestors } of this.calls) {
      const target = this.calleeFunctionBinding(node);
      if (!target) continue;
      const ctx = this.contextOf(ancestors, node);
      let list = callsByCtx.get(ctx);
      if (!list) callsByCtx.set(ctx, (list = []));
      list.push({ node, binding: target });
    }

    // 1. direct: a name read, in the code that defines it, before the definition has run
    for (const [ctx, refs] of refsByCtx) {
      for (const ref of refs) {
        const b = /** @type {Binding} */ (ref.binding);
        if (!HOISTABLE.has(b.kind) || bctx(b) !== ctx) continue;
        if (ref.node.start < b.declPoint) {
          this.report('use-before-define', ref.node,
            `${b.name} is used before its definition at line ${b.declLine}: Espruino hoists neither function declarations nor var, so it is undefined here - move the definition above its first use`);
        }
      }
    }

    // 2. through calls: f() runs f's body now, so what f reads must already be defined
    /** @type {Map<Node, number>} the last definition point in each context */
    const lastDecl = new Map();
    for (const names of this.scopes.values()) {
      for (const b of names.values()) {
        if (!HOISTABLE.has(b.kind)) continue;
        const c = bctx(b);
        lastDecl.set(c, Math.max(lastDecl.get(c) ?? -1, b.declPoint));
      }
    }
    /**
     * Everything a call of `root` reads, transitively through the declared functions it
     * calls, that is defined in context `ctx`; with the call path to each reading function.
     * Iterative (no recursion, no per-path arrays) and cached per (ctx, root).
     * @type {Map<Node, Map<Node, {reads: {binding: Binding, fn: Node}[], parent: Map<Node, {from: Node, name: string}>}>>}
     */
    const reachCache = new Map();
    const reach = (/** @type {Node} */ ctx, /** @type {Node} */ root) => {
      let perCtx = reachCache.get(ctx);
      if (!perCtx) reachCache.set(ctx, (perCtx = new Map()));
      const cached = perCtx.get(root);
      if (cached) return cached;
      /** @type {Map<Node, {from: Node, name: string}>} */
      const parent = new Map();
      /** @type {{binding: Binding, fn: Node}[]} */
      const reads = [];
      const seen = new Set([root]);
      const stack = [root];
      while (stack.length) {
        const fn = /** @type {Node} */ (stack.pop());
        for (const ref of refsByCtx.get(fn) || []) {
          const b = /** @type {Binding} */ (ref.binding);
          if (HOISTABLE.has(b.kind) && bctx(b) === ctx) reads.push({ binding: b, fn });
        }
        for (const inner of callsByCtx.get(fn) || []) {
          const next = inner.binding.fn;
          if (next && !seen.has(next)) {
            seen.add(next);
            parent.set(next, { from: fn, name: inner.binding.name });
            stack.push(next);
          }
        }
      }
      const result = { reads, parent };
      perCtx.set(root, result);
      return result;
    };
    for (const [ctx, calls] of callsByCtx) {
      for (const { node: call, binding: target } of calls) {
        if (call.start >= (lastDecl.get(ctx) ?? -1)) continue; // everything in this context is defined by now
        if (bctx(target) === ctx && call.start < target.declPoint) continue; // already reported directly
        const root = /** @type {Node} */ (target.fn);
        const { reads, parent } = reach(ctx, root);
        const reported = new Set();
        for (const { binding: b, fn } of reads) {
          if (b.declPoint <= call.start || reported.has(b)) continue;
          reported.add(b);
          const names = [];
          for (let f = fn; f !== root && names.length < 6; f = /** @type {any} */ (parent.get(f)).from) names.unshift(/** @type {any} */ (parent.get(f)).name);
          const via = names.length ? ` (via ${[target.name, ...names].join(' -> ')}${names.length >= 6 ? ' ...' : ''})` : '';
          this.report('use-before-define', call,
            `${target.name}() runs here, before ${b.name} is defined at line ${b.declLine}, and reads it${via}: Espruino hoists neither function declarations nor var - move the definition of ${b.name} above this call`);
        }
      }
    }
  }

  /** The declared function a call runs: f(), new f(), f.call(), f.apply(). @param {Node} call @returns {Binding | null} */
  calleeFunctionBinding(call) {
    let callee = call.callee;
    const name = memberName(callee);
    if (callee.type === 'MemberExpression' && (name === 'call' || name === 'apply')) callee = callee.object;
    if (callee.type !== 'Identifier') return null;
    const b = this.refByNode.get(callee)?.binding;
    if (!b || !b.fn || b.fnCount !== 1 || this.inline.has(b.fn)) return null;
    return b;
  }
}
