// Static Espruino compatibility check for the built firmware bundle.
//
// Espruino (v2v29, the ESP32 build's interpreter) parses code as it runs it, so a
// syntax error inside a function body only shows up when that function is first
// called, and loading the file on a device proves nothing. This module parses the
// final JavaScript with acorn and reports what Espruino 2v29 rejects or lacks (each rule
// checked on the interpreter): modern syntax, missing built-ins and methods, modules, use
// before definition (Espruino hoists neither `function` nor `var`) and file size.
//
// Plain ESM JavaScript, no build step: `node scripts/check-espruino.js FILE` uses it.
// The checker's core (options, reporting, parsing) is here; its rules, by group, are in
// scripts/espruino-compat/ (syntax, scopes, guards, builtins, hoisting; the tables of what is
// missing in tables.js, shared node helpers in ast.js).

import * as acorn from 'acorn';
import { SyntaxRules } from './espruino-compat/syntax.js';
import { ScopeRules } from './espruino-compat/scopes.js';
import { GuardRules } from './espruino-compat/guards.js';
import { BuiltinRules } from './espruino-compat/builtins.js';
import { HoistingRules } from './espruino-compat/hoisting.js';

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

// Not the chip's Storage (896 KB on the ESP32 port): the firmware runs from memory-mapped flash and its
// RAM is measured on the ESP32-shaped interpreter (test/espruino-memory*.test.ts, npm run bench:memory).
// A bound on what an upload sends through the console (64 KiB: ~6 s at 115200 baud) and a tripwire
// for a bundle that pulled in something it does not need.
export const DEFAULT_MAX_BYTES = 64 * 1024;
export const DEFAULT_ALLOW_MODULES = Object.freeze(['Storage', 'net', 'Wifi', 'crypto']);

/** Rule ids and what they catch (also the documentation of the check). */
export const RULES = Object.freeze({
  'parse-error': 'the file does not parse as JavaScript at all',
  'max-size': 'file larger than maxBytes (64 KiB: an upload through the console, and a bundle that pulled in more than it needs)',
  destructuring: 'object/array destructuring patterns',
  'default-param': 'default parameter values',
  'spread-rest': 'spread elements and rest elements/parameters',
  'tagged-template': 'tagged template literals',
  'optional-chaining': 'optional chaining ?.',
  'logical-assignment': '??= ||= &&=',
  'keyword-name': 'a variable named `of` (Espruino lexes it as a keyword; a minifier may pick the name)',
  'computed-key': 'computed keys in object literals (and classes)',
  label: 'labelled statements (labelled break/continue)',
  'async-await': 'async functions, await, for await',
  generator: 'generator functions, and the lowered async/generator state machine (swc _ts_generator, tslib __generator)',
  'exponent-operator': '** and **=',
  'length-assignment': 'assignments to .length (Espruino throws "Assignment to a constant" on an array\'s length)',
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
    /** @type {{node: Node, ancestors: Node[], helper: typeof import('./espruino-compat/tables.js').LOWERED_HELPERS[number]}[]} */
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
}

// The rules, by group, each a file under scripts/espruino-compat/: their methods join the Checker.
for (const part of [SyntaxRules, ScopeRules, GuardRules, BuiltinRules, HoistingRules])
  for (const key of Object.getOwnPropertyNames(part.prototype))
    if (key !== 'constructor') Object.defineProperty(Checker.prototype, key, /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(part.prototype, key)));
