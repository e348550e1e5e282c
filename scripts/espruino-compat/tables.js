// What Espruino v2v29 lacks, with what to use instead (the built-ins rules of the check), and the
// helpers the es5 lowering emits for constructs it cannot run.
import { builtinModules } from 'node:module';

export const MISSING_GLOBALS = /** @type {Record<string, string>} */ ({
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

export const MISSING_STATICS = /** @type {Record<string, string>} */ ({
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

export const MISSING_METHODS = /** @type {Record<string, string>} */ ({
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

export const ALLOWED_PROCESS_MEMBERS = new Set(['memory', 'version', 'env']);

/** Methods whose function arguments run synchronously, i.e. at the call's position. */
export const SYNC_CALLBACK_METHODS = new Set([
  'forEach', 'map', 'filter', 'reduce', 'some', 'every', 'find', 'findIndex', 'sort',
]);

/**
 * Helpers that the es5 lowering emits for constructs Espruino cannot run. They are found
 * by a string only they contain, or by their unminified name; every call of one is
 * reported (or the helper itself, if it is never called).
 * @type {{rule: string, texts: string[], names: string[], onCall: string, onHelper: string}[]}
 */
export const LOWERED_HELPERS = [
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

export const NODE_BUILTINS = new Set(
  builtinModules.map((m) => m.replace(/^node:/, '')).concat(['node:test', 'test']),
);
