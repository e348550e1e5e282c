// JavaScript evaluated inside every fresh firmware context before the firmware: Espruino's object events,
// its timer-driven Promise, a clock-driven Date, Pin objects, and the removal of what Espruino lacks.
//
// Kept as source text (not a compiled function) so coverage instrumentation or transpilation of the
// host code can never leak into the firmware's realm.

/** What the prelude needs from the host. All functions are host-realm functions. */
export interface PreludeHost {
  /** Clock time in ms, as Date.now() inside the firmware. */
  now(): number;
  /** Seeded replacement for Math.random. */
  random(): number;
  /** Run fn later through the boot's callback gate (a 0 ms clock timer, like Espruino's promise jobs). */
  defer(fn: () => void): void;
  /** A rejected promise nobody handled. */
  unhandled(reason: unknown): void;
  /** GPIO numbers that get a global D<n> Pin object. */
  pins: readonly number[];
  /** The output register of a pin (for Pin.toggle). */
  outputValue(pin: number): number;
}

/** What the prelude hands back to the host. All functions are context-realm functions. */
export interface PreludeHelpers {
  /** obj.emit(event, ...args) without trusting obj.emit. Listener exceptions propagate. */
  emit(obj: object, event: string, args: unknown[]): void;
  /** Number of listeners obj has for event. */
  count(obj: object, event: string): number;
  /** obj.on(event, fn) without trusting obj.on. */
  on(obj: object, event: string, fn: Function): void;
}

/** Globals Espruino 2v29 does not have (each checked on the interpreter). */
export const REMOVED_GLOBALS: readonly string[] = [
  'Map',
  'Set',
  'WeakMap',
  'WeakSet',
  'Symbol',
  'Proxy',
  'Reflect',
  'WeakRef',
  'FinalizationRegistry',
  'BigInt',
  'BigInt64Array',
  'BigUint64Array',
  'queueMicrotask',
  'structuredClone',
  'TextEncoder',
  'TextDecoder',
  'Buffer',
  'fetch',
  'setImmediate',
  'clearImmediate',
  'Intl',
  'WebAssembly',
  'SharedArrayBuffer',
  'Atomics',
  'AggregateError',
  'RangeError',
];

/** [owner expression, property] pairs removed from the context's intrinsics. */
export const REMOVED_PROPERTIES: readonly (readonly [string, string])[] = [
  ['Array', 'from'],
  ['Array', 'of'],
  ['Object', 'freeze'],
  ['Object', 'is'],
  ['Array.prototype', 'flat'],
  ['Array.prototype', 'at'],
  ['Array.prototype', 'findLast'],
  ['Array.prototype', 'lastIndexOf'],
  ['Array.prototype', 'reduceRight'],
  ['Array.prototype', 'keys'],
  ['String.prototype', 'trimStart'],
  ['String.prototype', 'at'],
  ['String.prototype', 'codePointAt'],
  ['String.prototype', 'search'],
];

export const PRELUDE_SOURCE = `(function (host) {
  'use strict';
  var G = globalThis;
  var OP = Object.prototype;
  var defProp = Object.defineProperty;
  var WM = WeakMap;
  var slice = Array.prototype.slice;

  function method(obj, name, fn) {
    defProp(obj, name, { value: fn, writable: true, configurable: true, enumerable: false });
  }

  // ---- Espruino: every object is an event emitter (Object.prototype.on/emit/...) ----
  var events = new WM();
  function list(o, e, create) {
    var m = events.get(o);
    if (!m) {
      if (!create) return undefined;
      m = Object.create(null);
      events.set(o, m);
    }
    var l = m[e];
    if (!l && create) l = m[e] = [];
    return l;
  }
  function emitImpl(o, e, args) {
    var l = list(o, String(e), false);
    if (!l || !l.length) return;
    var fns = l.slice();
    for (var i = 0; i < fns.length; i++) fns[i].apply(o, args);
  }
  function on(event, listener) {
    if (typeof listener !== 'function') throw new Error('Expecting a function as the listener');
    list(this, String(event), true).push(listener);
  }
  method(OP, 'on', on);
  method(OP, 'addListener', on);
  method(OP, 'prependListener', function prependListener(event, listener) {
    if (typeof listener !== 'function') throw new Error('Expecting a function as the listener');
    list(this, String(event), true).unshift(listener);
  });
  method(OP, 'emit', function emit(event) {
    emitImpl(this, event, slice.call(arguments, 1));
  });
  method(OP, 'removeListener', function removeListener(event, listener) {
    var l = list(this, String(event), false);
    if (!l) return;
    var i = l.indexOf(listener);
    if (i >= 0) l.splice(i, 1);
  });
  method(OP, 'removeAllListeners', function removeAllListeners(event) {
    var m = events.get(this);
    if (!m) return;
    if (event === undefined) events.delete(this);
    else delete m[String(event)];
  });

  // ---- Promise as Espruino runs it: then/catch/all/resolve/reject, jobs on a 0 ms timer ----
  var pstate = new WM();
  function isThenable(v) {
    return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
  }
  function Promise(executor) {
    if (!(this instanceof Promise)) throw new TypeError('Promise must be called with new');
    if (typeof executor !== 'function') throw new TypeError('Promise resolver is not a function');
    var p = this;
    var done = false;
    pstate.set(p, { s: 0, v: undefined, h: [], handled: false });
    function res(v) { if (done) return; done = true; resolveWith(p, v); }
    function rej(e) { if (done) return; done = true; settle(p, 2, e); }
    try { executor(res, rej); } catch (e) { rej(e); }
  }
  function resolveWith(p, v) {
    if (v === p) { settle(p, 2, new TypeError('Promise resolved with itself')); return; }
    if (isThenable(v)) {
      var once = false;
      host.defer(function () {
        try {
          v.then(function (x) { if (!once) { once = true; resolveWith(p, x); } },
                 function (e) { if (!once) { once = true; settle(p, 2, e); } });
        } catch (e) { if (!once) { once = true; settle(p, 2, e); } }
      });
      return;
    }
    settle(p, 1, v);
  }
  function settle(p, s, v) {
    var st = pstate.get(p);
    if (st.s) return;
    st.s = s;
    st.v = v;
    var hs = st.h;
    st.h = [];
    for (var i = 0; i < hs.length; i++) schedule(st, hs[i]);
    if (s === 2 && !st.handled) host.defer(function () { if (!st.handled) host.unhandled(v); });
  }
  function schedule(st, h) {
    host.defer(function () {
      var cb = st.s === 1 ? h.f : h.r;
      if (typeof cb !== 'function') { if (st.s === 1) h.res(st.v); else h.rej(st.v); return; }
      var out;
      try { out = cb(st.v); } catch (e) { h.rej(e); return; }
      h.res(out);
    });
  }
  method(Promise.prototype, 'then', function then(f, r) {
    var st = pstate.get(this);
    if (!st) throw new TypeError('then called on something that is not a Promise');
    var h;
    var p2 = new Promise(function (res, rej) { h = { f: f, r: r, res: res, rej: rej }; });
    st.handled = true;
    if (st.s) schedule(st, h); else st.h.push(h);
    return p2;
  });
  method(Promise.prototype, 'catch', function (r) { return this.then(undefined, r); });
  method(Promise, 'resolve', function resolve(v) {
    if (v instanceof Promise) return v;
    return new Promise(function (res) { res(v); });
  });
  method(Promise, 'reject', function reject(e) {
    return new Promise(function (res, rej) { rej(e); });
  });
  method(Promise, 'all', function all(arr) {
    return new Promise(function (res, rej) {
      var n = arr.length, out = new Array(n), left = n;
      if (n === 0) { res(out); return; }
      for (var i = 0; i < n; i++) (function (i) {
        Promise.resolve(arr[i]).then(function (v) { out[i] = v; if (--left === 0) res(out); }, rej);
      })(i);
    });
  });
  method(G, 'Promise', Promise);

  // ---- Date and Math.random from the simulator (clock, seed) ----
  var NativeDate = G.Date;
  delete NativeDate.UTC;
  var SimDate = class Date extends NativeDate {
    constructor() {
      if (arguments.length === 0) super(host.now());
      else super(...arguments);
    }
    static now() { return host.now(); }
  };
  method(G, 'Date', SimDate);
  method(Math, 'random', function random() { return host.random(); });

  // ---- Math.round and JSON.parse as Espruino's C code does them (measured on 2v29) ----
  // jswrap_math_round: x + 0.5 away from zero, truncated: -0.5 -> -1, -2.5 -> -3 (V8: -0, -2).
  method(Math, 'round', function round(x) {
    x = +x;
    if (!isFinite(x) || (x === 0 && 1 / x < 0)) return x;
    var i = Math.trunc(x + (x < 0 ? -0.5 : 0.5));
    return i === 0 && x < 0 ? -0 : i;
  });
  // Espruino's JSON parser keeps the first of duplicate keys ('{"a":1,"a":2}'.a is 1; V8: 2).
  var nativeParse = JSON.parse;
  function firstKeyWins(t) {
    var i = 0;
    function ws() { while (i < t.length && ' \\t\\n\\r'.indexOf(t[i]) >= 0) i++; }
    function str() {
      var s = i;
      i++;
      while (t[i] !== '"') i += t[i] === '\\\\' ? 2 : 1;
      i++;
      return nativeParse(t.slice(s, i));
    }
    function val() {
      ws();
      var c = t[i];
      if (c === '{') {
        var o = {};
        i++;
        ws();
        if (t[i] === '}') { i++; return o; }
        for (;;) {
          ws();
          var k = str();
          ws();
          i++;
          var v = val();
          if (!OP.hasOwnProperty.call(o, k)) defProp(o, k, { value: v, writable: true, enumerable: true, configurable: true });
          ws();
          if (t[i++] === '}') return o;
        }
      }
      if (c === '[') {
        var a = [];
        i++;
        ws();
        if (t[i] === ']') { i++; return a; }
        for (;;) {
          a.push(val());
          ws();
          if (t[i++] === ']') return a;
        }
      }
      if (c === '"') return str();
      var m = /^(?:true|false|null|-?[0-9][0-9.eE+-]*)/.exec(t.slice(i, i + 400));
      i += m[0].length;
      return nativeParse(m[0]);
    }
    return val();
  }
  // Without a repeated key V8's result is Espruino's. Every key in the text has its own colon outside
  // strings, so when the parsed objects hold as many keys as there are such colons none was repeated
  // and the slow re-parse is skipped (it dominated a frame's cost in the simulator).
  function colons(t) {
    var n = 0, q = false;
    for (var i = 0; i < t.length; i++) {
      var c = t.charCodeAt(i);
      if (q) { if (c === 92) i++; else if (c === 34) q = false; }
      else if (c === 34) q = true;
      else if (c === 58) n++;
    }
    return n;
  }
  function keyCount(v) {
    if (v === null || typeof v !== 'object') return 0;
    var n = 0, i;
    if (Array.isArray(v)) { for (i = 0; i < v.length; i++) n += keyCount(v[i]); return n; }
    var ks = Object.keys(v);
    for (i = 0; i < ks.length; i++) n += 1 + keyCount(v[ks[i]]);
    return n;
  }
  method(JSON, 'parse', function parse(text) {
    var v = nativeParse(text); // V8's errors for invalid text
    var t = String(text);
    if (t.indexOf('{') < 0 || colons(t) === keyCount(v)) return v;
    return firstKeyWins(t);
  });

  // ---- Pins: D0..D39 are numbers (typeof D23 is "number" on Espruino) with Pin methods ----
  // On Espruino a pin is a number that also carries Pin's methods; V8 numbers cannot, so the
  // methods sit on Number.prototype here (the vm's (5).write also exists; Espruino's does not).
  function Pin(n) {
    return Number(n);
  }
  var NP = Number.prototype;
  method(NP, 'read', function () { return !!G.digitalRead(+this); });
  method(NP, 'write', function (v) { G.digitalWrite(+this, v); });
  method(NP, 'set', function () { G.digitalWrite(+this, 1); });
  method(NP, 'reset', function () { G.digitalWrite(+this, 0); });
  method(NP, 'toggle', function () {
    var v = !host.outputValue(+this);
    G.digitalWrite(+this, v);
    return v;
  });
  method(NP, 'mode', function (m) { G.pinMode(+this, m); });
  method(NP, 'getMode', function () { return G.getPinMode(+this); });
  method(G, 'Pin', Pin);
  for (var i = 0; i < host.pins.length; i++) G['D' + host.pins[i]] = host.pins[i];

  G.global = G;

  // ---- what Espruino does not have ----
  var gone = ${JSON.stringify(REMOVED_GLOBALS)};
  for (var g = 0; g < gone.length; g++) delete G[gone[g]];
  var props = ${JSON.stringify(REMOVED_PROPERTIES)};
  var owners = { 'Array': Array, 'Object': Object, 'Array.prototype': Array.prototype, 'String.prototype': String.prototype };
  for (var k = 0; k < props.length; k++) delete owners[props[k][0]][props[k][1]];

  return {
    emit: function (o, e, args) { emitImpl(o, e, args); },
    count: function (o, e) { var l = list(o, String(e), false); return l ? l.length : 0; },
    on: function (o, e, fn) { list(o, String(e), true).push(fn); }
  };
})`;
