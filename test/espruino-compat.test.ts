// Behaviour of the static Espruino compatibility check (scripts/espruino-compat.js and
// its CLI scripts/check-espruino.js) that fails the firmware build. The facts it
// enforces are its rule files, scripts/espruino-compat/ (each checked on Espruino v2v29).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { build } from 'tsup';
// @ts-ignore -- plain ESM JavaScript that node runs without a build step; it has no declaration file
import * as compat from '../scripts/espruino-compat.js';

type Violation = {
  rule: string;
  message: string;
  line: number;
  column: number;
  excerpt: string;
  severity: 'error' | 'warning';
};
type Options = { maxBytes?: number; allowModules?: string[] };

const checkEspruino = compat.checkEspruino as (source: string, options?: Options) => Violation[];
const formatViolation = compat.formatViolation as (file: string, v: Violation) => string;
const RULES = compat.RULES as Record<string, string>;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'scripts/check-espruino.js');
const fixtures = join(root, 'test/fixtures/espruino');
const firmwareBundle = join(root, 'firmware/dist/proofrig.js');

const rulesOf = (source: string, options?: Options) => checkEspruino(source, options).map((v) => v.rule);
const show = (vs: Violation[]) => vs.map((v) => formatViolation('snippet.js', v));

// One minimal snippet per rule. Line 1 is always clean so the reported line is checked.
const PRELUDE = 'var ok = [1, 2].slice(0);\n';
const CASES: { rule: string; code: string; line?: number }[] = [
  { rule: 'parse-error', code: 'var = 1;' },
  { rule: 'destructuring', code: 'var { a } = ok;' },
  { rule: 'destructuring', code: 'for (const [k, v] of ok) {}' },
  { rule: 'destructuring', code: 'function f({ a }) { return a; }' },
  { rule: 'destructuring', code: 'var a; [a] = ok;' },
  { rule: 'default-param', code: 'function f(a = 1) { return a; }' },
  { rule: 'spread-rest', code: 'Math.max(...ok);' },
  { rule: 'spread-rest', code: 'function f(...rest) { return rest; }' },
  { rule: 'tagged-template', code: 'var t = String(ok)`x`;' },
  { rule: 'optional-chaining', code: 'var b = ok?.length;' },
  { rule: 'logical-assignment', code: 'var c; c ??= 1;' },
  { rule: 'keyword-name', code: 'var of = 1000; ok(of / 1e3);' },
  { rule: 'computed-key', code: 'var k = "a", o = { [k]: 1 };' },
  { rule: 'label', code: 'outer: for (;;) { break outer; }' },
  { rule: 'async-await', code: 'async function f() { return 1; }' },
  { rule: 'generator', code: 'function* g() { yield 1; }' },
  { rule: 'exponent-operator', code: 'var sq = 2 ** 8;' },
  { rule: 'exponent-operator', code: 'var sq = 2; sq **= 8;' },
  { rule: 'length-assignment', code: 'var list = [1, 2]; list.length = 0;' },
  { rule: 'private-member', code: 'class P { #x = 1; get() { return this.#x; } }' },
  { rule: 'class-extends', code: 'class A {}\nclass B extends A {}', line: 3 },
  { rule: 'esm-syntax', code: 'import x from "y";' },
  { rule: 'esm-syntax', code: 'export var e = 1;' },
  { rule: 'esm-syntax', code: 'import("./chunk.js");' },
  { rule: 'new-target', code: 'function F() { return new.target; }' },
  { rule: 'bigint-literal', code: 'var big = 10n;' },
  { rule: 'regex-flags', code: 'var re = /a.b/s;' },
  { rule: 'regex-flags', code: 'var re = new RegExp("a", "u");' },
  { rule: 'regex-syntax', code: 'var re = /(?<=a)b/;' },
  { rule: 'regex-syntax', code: 'var re = /(?<year>\\d{4})/;' },
  { rule: 'missing-builtin', code: 'var m = new Map();' },
  { rule: 'missing-builtin', code: 'var e = new TextEncoder();' },
  { rule: 'missing-builtin', code: 'setImmediate(function () {});' },
  { rule: 'missing-builtin', code: 'var g = globalThis;' },
  { rule: 'iterator-protocol', code: 'var it = ok[Symbol.iterator]();' },
  { rule: 'missing-static', code: 'var a = Array.from(ok);' },
  { rule: 'missing-static', code: 'Object.freeze(ok);' },
  { rule: 'missing-static', code: 'Promise.allSettled([]);' },
  { rule: 'array-prototype', code: 'function f() { return Array.prototype.slice.call(arguments); }' },
  { rule: 'missing-method', code: 'var f = ok.flat();' },
  { rule: 'missing-method', code: 'var last = ok.at(-1);' },
  { rule: 'missing-method', code: 'var s = " x".trimStart();' },
  { rule: 'missing-method', code: 'var ks = ok.keys();' },
  { rule: 'missing-method', code: 'Promise.resolve(1).finally(function () {});' },
  { rule: 'array-lastindexof', code: 'var i = ok.lastIndexOf(2);' },
  { rule: 'require-module', code: 'var fs = require("fs");' },
  { rule: 'require-module', code: 'var name = "Storage"; var s = require(name);' },
  { rule: 'require-module', code: 'var ws = require("ws");' },
  { rule: 'process-member', code: 'process.nextTick(function () {});' },
  { rule: 'use-before-define', code: 'f();\nfunction f() {}', line: 2 },
  { rule: 'regex-count', code: 'var hex = /^[0-9a-f]{64}$/;' },
  { rule: 'keyword-name', code: 'function of(a) { return a; }' },
  { rule: 'keyword-name', code: 'var of = 1;' },
];

describe('checkEspruino: one minimal snippet per rule', () => {
  it.each(CASES)('$rule: $code', ({ rule, code, line = 2 }) => {
    const violations = checkEspruino(PRELUDE + code);
    const hit = violations.find((v) => v.rule === rule);
    expect(hit, `expected ${rule} in ${JSON.stringify(show(violations))}`).toBeDefined();
    expect(hit!.line).toBe(line);
    expect(hit!.column).toBeGreaterThanOrEqual(1);
    expect(hit!.message.length).toBeGreaterThan(20);
    expect(hit!.excerpt.length).toBeGreaterThan(0);
  });

  it('has a case for every rule id', () => {
    const covered = new Set(CASES.map((c) => c.rule).concat('max-size'));
    expect(Object.keys(RULES).filter((id) => !covered.has(id))).toEqual([]);
  });

  it('max-size: flags a file over maxBytes (default 64 KiB), measured in UTF-8 bytes', () => {
    expect(rulesOf('var a = 1;', { maxBytes: 5 })).toEqual(['max-size']);
    expect(rulesOf('var a = 1;\n'.repeat(6000))).toEqual(['max-size']); // 66,000 > 65,536 bytes
    expect(rulesOf('var a = 1;\n'.repeat(5900))).toEqual([]); // 64,900 bytes
    expect(rulesOf('var s = "éé";', { maxBytes: 14 })).toEqual(['max-size']); // 13 chars, 15 bytes
  });

  it('reports the line and 1-based column of each violation, in source order', () => {
    const vs = checkEspruino('var a = 1;\nvar b = a?.c;\n  var m = new Map();\n');
    expect(vs.map((v) => [v.rule, v.line, v.column])).toEqual([
      ['optional-chaining', 2, 9],
      ['missing-builtin', 3, 15],
    ]);
    expect(formatViolation('proofrig.js', vs[1])).toMatch(
      /^proofrig\.js:3:15 missing-builtin: Map does not exist on Espruino .+ \(Map\)$/,
    );
  });

  it('marks .lastIndexOf( as warning-level but still reports it', () => {
    const [v] = checkEspruino('var i = "abc".lastIndexOf("c");');
    expect(v).toMatchObject({ rule: 'array-lastindexof', severity: 'warning' });
    expect(v.message).toMatch(/indexOf/);
  });
});

describe('checkEspruino: what it lets through', () => {
  it('passes clean ES5 that uses what Espruino has', () => {
    const source = `"use strict";
var storage = require("Storage"), net = require("net"), wifi = require("Wifi");
function Queue(limit) { this.items = []; this.limit = limit; }
Queue.prototype.push = function (item) {
  if (this.items.length >= this.limit) this.items.shift();
  this.items.push(item);
  return this.items.indexOf(item) !== -1;
};
function later(fn) { setTimeout(fn, 0); }
function toArray() { return [].slice.call(arguments); }
var q = new Queue(4);
var flags = { a: true };
Object.keys(flags).forEach(function (k) { q.push(k); });
var parts = "a,b".split(",").map(function (s) { return s.trim(); });
var found = parts.find(function (s) { return s === "b"; });
var re = /^p(\\d+)$/gim;
var mem = process.memory(), ver = process.version, env = process.env;
var iter = typeof Symbol !== "undefined" && Symbol.iterator;
var maybe = Array.from ? Array.from(parts) : toArray.apply(null, parts);
later(function () { storage.write("q", JSON.stringify(q.items) + tick()); });
function tick() { return found + mem.free + parts.length; }
E.on("init", function () { later(tick); });
(function () { var Map = function () {}; new Map(); })();
`;
    expect(show(checkEspruino(source))).toEqual([]);
  });

  it('does not flag property names or own declarations named like missing built-ins', () => {
    expect(rulesOf('var o = { Map: 1, at: 2 }; o.Map = o.at; o.flat = 1; function Set() {} new Set();')).toEqual([]);
    expect(rulesOf('function f(Symbol) { return Symbol.iterator; }')).toEqual([]);
    expect(rulesOf('var lbl = { label: 1 }; var x = Object.keys(lbl);')).toEqual([]);
  });

  it('allows references guarded by typeof, as swc and esbuild helpers write them', () => {
    const guarded = [
      // swc _type_of
      'function v(r){"@swc/helpers - typeof";return r&&typeof Symbol!=="undefined"&&r.constructor===Symbol?"symbol":typeof r}',
      // swc _iterable_to_array: Array.from only behind the Symbol test
      'function a(r){if(typeof Symbol!=="undefined"&&r[Symbol.iterator]!=null||r["@@iterator"]!=null){return Array.from(r)}}',
      // swc _unsupported_iterable_to_array: only reached for values Espruino cannot create
      'function m(e){var n=Object.prototype.toString.call(e).slice(8,-1);if(n==="Map"||n==="Set")return Array.from(e)}',
      // the "function" == typeof X form
      'var s="function"==typeof Symbol&&"symbol"==typeof Symbol.iterator?1:2;',
      'var r="undefined"!=typeof Reflect?Reflect.get:null;',
      // esbuild's __require shim after swc lowering
      'var r=function(r){return(typeof require==="undefined"?"undefined":typeof require)<"u"?require:(typeof Proxy==="undefined"?"undefined":typeof Proxy)<"u"?new Proxy(r,{get:function(r,n){return((typeof require==="undefined"?"undefined":typeof require)<"u"?require:r)[n]}}):r}(function(r){if(typeof require<"u")return require.apply(this,arguments);throw Error(\'Dynamic require of "\'+r+\'" is not supported\')});var s=r("Storage");',
    ];
    for (const code of guarded) expect(show(checkEspruino(code)), code).toEqual([]);
  });

  it('still checks modules loaded through esbuild\'s __require shim', () => {
    const shim = 'var r=function(r){return typeof require<"u"?require:r}(function(r){throw Error("no")});';
    expect(rulesOf(shim + 'var s=r("Storage");')).toEqual([]);
    expect(rulesOf(shim + 'var f=r("fs");')).toEqual(['require-module']);
  });

  it('does not treat an unrelated typeof test as a guard', () => {
    expect(rulesOf('function f(x){ return typeof x === "object" && new Map(); }')).toEqual(['missing-builtin']);
  });

  it('honours allowModules', () => {
    expect(rulesOf('require("Storage");', { allowModules: ['Wifi'] })).toEqual(['require-module']);
    expect(rulesOf('require("ws");', { allowModules: ['ws'] })).toEqual([]);
  });
});

describe('checkEspruino: no hoisting on Espruino', () => {
  it('flags a call before the function declaration', () => {
    const vs = checkEspruino('var a = 1;\nf();\nfunction f() {}');
    expect(vs.map((v) => [v.rule, v.line])).toEqual([['use-before-define', 2]]);
    expect(vs[0].message).toMatch(/f is used before its definition at line 3/);
  });

  it('passes definitions that precede their use at run time', () => {
    expect(rulesOf('function f() {}\nf();')).toEqual([]);
    expect(rulesOf('function g() { h(); }\nfunction h() {}\ng();')).toEqual([]);
    expect(rulesOf('var x = 1;\nfunction f() { return x + y; }\nvar y = 2;\nf();')).toEqual([]);
  });

  it('flags what an IIFE runs before the definition', () => {
    const vs = checkEspruino('var x = 1;\n(function () { y(); })();\nfunction y() {}');
    expect(vs.map((v) => [v.rule, v.line])).toEqual([['use-before-define', 2]]);
    expect(rulesOf('!function () { y(); }();\nfunction y() {}')).toEqual(['use-before-define']);
    expect(rulesOf('var v = function () { return w; }();\nvar w = 1;')).toEqual(['use-before-define']);
  });

  it('flags calls that run a function whose body needs a later definition', () => {
    const vs = checkEspruino('function g() { h(); }\ng();\nfunction h() {}');
    expect(vs.map((v) => [v.rule, v.line])).toEqual([['use-before-define', 2]]);
    expect(vs[0].message).toMatch(/g\(\) runs here, before h is defined at line 3/);
  });

  it('flags var reads before the var statement, but not reads in callbacks that run later', () => {
    expect(rulesOf('console.log(cfg);\nvar cfg = {};')).toEqual(['use-before-define']);
    expect(rulesOf('setTimeout(function () { cfg.a = 1; }, 0);\nvar cfg = {};')).toEqual([]);
    expect(rulesOf('[1].forEach(function () { cfg.a = 1; });\nvar cfg = {};')).toEqual(['use-before-define']);
  });

  it('resolves scopes: an inner binding of the same name is not the later one', () => {
    expect(rulesOf('(function () { function y() {} y(); })();\nfunction y() {}')).toEqual([]);
    expect(rulesOf('(function (y) { y(); })(function () {});\nfunction y() {}')).toEqual([]);
    expect(rulesOf('var e = function e(e) { return e(1); };\ne(function () {});')).toEqual([]);
  });
});

describe('checkEspruino: lowered inheritance written by tsc', () => {
  it('flags __extends(Derived, _super), which runs before the un-hoisted function Derived', () => {
    const tscOutput = `var __extends = (this && this.__extends) || (function () {
  var extendStatics = function (d, b) {
    extendStatics = Object.setPrototypeOf || function (d, b) { for (var p in b) d[p] = b[p]; };
    return extendStatics(d, b);
  };
  return function (d, b) {
    if (typeof b !== "function" && b !== null) throw new TypeError("Class extends value " + String(b) + " is not a constructor or null");
    extendStatics(d, b);
    function __() { this.constructor = d; }
    d.prototype = b === null ? Object.create(b) : (__.prototype = b.prototype, new __());
  };
})();
var A = (function () { function A() {} return A; }());
var B = (function (_super) { __extends(B, _super); function B() { return _super.call(this) || this; } return B; }(A));
`;
    expect(checkEspruino(tscOutput).map((v) => [v.rule, v.line])).toEqual([
      ['class-extends', 14],
      ['use-before-define', 14],
    ]);
  });
});

describe('CLI scripts/check-espruino.js', () => {
  const dir = mkdtempSync(join(tmpdir(), 'espruino-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

  it('prints the size and 0 violations, exit 0, for a clean file', () => {
    const file = join(dir, 'clean.js');
    writeFileSync(file, 'var a = [1, 2];\n');
    const r = run(file);
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(`${file}: 16 bytes, 0 violations (Espruino compatibility check)`);
  });

  it('prints FILE:LINE:COL rule-id: message (excerpt) per violation, exit 1', () => {
    const file = join(dir, 'bad.js');
    writeFileSync(file, 'var a = 1;\nvar { b } = a;\nvar m = new Map();\n');
    const r = run(file);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2:5 destructuring: .+ \\(\\{ b \\}\\)$`));
    expect(lines[1]).toMatch(/:3:13 missing-builtin: Map does not exist on Espruino .+ \(Map\)$/);
    expect(lines[2]).toMatch(/2 violations/);
  });

  it('honours --max-bytes', () => {
    const file = join(dir, 'size.js');
    writeFileSync(file, 'var a = 1;\n');
    expect(run(file, '--max-bytes', '5').status).toBe(1);
    expect(run(file, '--max-bytes=5').stderr).toMatch(/:1:1 max-size: file is 11 bytes, over the 5-byte limit/);
  });

  it('exits 2 with a clear message when the file is missing', () => {
    const r = run(join(dir, 'nope.js'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/nope\.js does not exist: build the firmware first with npm run build -w firmware/);
  });
});

describe('real tsup builds (iife, target es5, minify: the firmware build path)', () => {
  const out = mkdtempSync(join(tmpdir(), 'espruino-build-'));
  const built: Record<string, string> = {};
  beforeAll(async () => {
    // One build, three entries; tsup lowers to es5 with @swc/core.
    await build({
      entry: {
        clean: join(fixtures, 'es5-clean-sample.ts'),
        extends: join(fixtures, 'extends-sample.ts'),
        forOfVariable: join(fixtures, 'for-of-variable-sample.ts'),
        async: join(fixtures, 'async-sample.ts'),
      },
      format: ['iife'],
      target: 'es5',
      minify: true,
      outDir: out,
      silent: true,
      config: false,
      dts: false,
      sourcemap: false,
      splitting: false,
      clean: false,
    });
    for (const name of ['clean', 'extends', 'forOfVariable', 'async']) {
      built[name] = readFileSync(join(out, `${name}.global.js`), 'utf8');
    }
  }, 30_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('passes TypeScript with destructuring, defaults, spread, ?., ??, for-of over an array literal and a class', () => {
    expect(built.clean).toContain('Array.from'); // the swc helpers are in, behind their guards
    expect(show(checkEspruino(built.clean))).toEqual([]);
  });

  it('flags the build of `class B extends A`', () => {
    const rules = rulesOf(built.extends);
    expect(rules).toContain('class-extends');
    // and the un-hoisted constructor that the lowered inheritance reads too early
    expect(rules).toContain('use-before-define');
  });

  it('flags for-of over an array variable: swc lowers it to x[Symbol.iterator]()', () => {
    expect(rulesOf(built.forOfVariable)).toEqual(['iterator-protocol']);
  });

  it('flags the build of async/await (the lowered state machine)', () => {
    expect(rulesOf(built.async)).toContain('generator');
  });
});

describe('the real firmware bundle', () => {
  it.skipIf(!existsSync(firmwareBundle))(
    'firmware/dist/proofrig.js has 0 violations (skipped only when the file is missing: npm run build -w firmware)',
    () => {
      const source = readFileSync(firmwareBundle, 'utf8');
      expect(checkEspruino(source).map((v) => formatViolation('firmware/dist/proofrig.js', v))).toEqual([]);
    },
  );
});

describe('scripts/espruino-unkeyword.js (run by the firmware build after tsup)', () => {
  it('renames a variable the minifier named `of`, and leaves the property `of` alone', () => {
    const dir = mkdtempSync(join(tmpdir(), 'unkeyword-'));
    try {
      const f = join(dir, 'b.js');
      writeFileSync(f, 'var of=5,x={of:1};function f(of){return of/2+x.of}f(of/1e3);');
      const r = spawnSync(process.execPath, [fileURLToPath(new URL('../scripts/espruino-unkeyword.js', import.meta.url)), f], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(f, 'utf8')).toBe('var of_=5,x={of:1};function f(of_){return of_/2+x.of}f(of_/1e3);');
      expect(checkEspruino(readFileSync(f, 'utf8')).map((v) => v.rule)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scripts/espruino-scope.js (run by the firmware build after espruino-unkeyword.js)', () => {
  const run = (src: string): string => {
    const dir = mkdtempSync(join(tmpdir(), 'scope-'));
    try {
      const f = join(dir, 'b.js');
      writeFileSync(f, src);
      const r = spawnSync(process.execPath, [fileURLToPath(new URL('../scripts/espruino-scope.js', import.meta.url)), f], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return readFileSync(f, 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const bundle =
    'var h=function(v){return v};(function(){var a=1,b=2;function c(x){return Math.max(x,b)+JSON.stringify([b,b,b]).length+h(b)}' +
    'function d(){z=c(a)+c(b);return String(z)}var z;out=d()+typeof Missing})();';

  it('passes the globals the functions read as the bundle function\'s parameters and declares its most used names first', () => {
    const out = run(bundle);
    // b (5 uses in functions) before c (2); a, d and z are used fewer than 3 times: not declared first
    expect(out).toBe(
      'var h=function(v){return v};(function(JSON,Math,String,h){var b;var a=1,b=2;function c(x){return Math.max(x,b)+JSON.stringify([b,b,b]).length+h(b)}' +
        'function d(){z=c(a)+c(b);return String(z)}var z;out=d()+typeof Missing})(JSON,Math,String,h);',
    );
    expect(checkEspruino(out).map((v) => v.rule)).toEqual([]);
  });

  it('changes nothing the code computes, and a second run changes nothing', () => {
    const g = (src: string) => {
      const ctx = vm.createContext({});
      vm.runInContext(src, ctx);
      return (ctx as { out: unknown }).out;
    };
    const out = run(bundle);
    expect(g(out)).toBe(g(bundle));
    expect(run(out)).toBe(out);
  });
});
