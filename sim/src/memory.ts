// process.memory() in the vm: an estimate of the JsVars the firmware would use on an ESP32
// (14-byte JsVars), calibrated against Espruino 2v29 built with the ESP32's JsVar format
// (sim/README.md "Memory" has the figures and the error measured). Two parts:
// - a fixed part for the firmware's code and Espruino's own objects, from the source length;
// - the firmware's live data: everything reachable from its globals and from the closures its pending timers hold (the
//   whole bundle shares one scope, so its module state: config, dedupe ring, buffers, sockets),
//   priced value by value the way Espruino stores it. The closures are read through V8's inspector
//   (synchronous in-process session), so the walk never runs firmware code and changes nothing.
import { Session } from 'node:inspector';

/** Characters a JsVar holds: a string's first JsVar 9, each further one 10; a property name 4 in its name JsVar. */
const STR_FIRST = 9;
const STR_NEXT = 10;
const NAME_INLINE = 4;
/** Code, Espruino's own objects and the pin layer: fitted at one point (the relay rig idle after boot, 2,444 JsVars on the ESP32-format interpreter; sim/README.md). */
export const CODE_CHARS_PER_JSVAR = 23.7;
export const EMPTY_USAGE = 0;
/** Walk limits: deeper or larger state than this is not the firmware's (and is not priced). */
const MAX_DEPTH = 16;
const MAX_NODES = 50_000;

/** JsVars of a string value of n characters. */
export function stringVars(n: number): number {
  return n <= STR_FIRST ? 1 : 1 + Math.ceil((n - STR_FIRST) / STR_NEXT);
}

/** JsVars of a property name (the name JsVar also holds an integer or the reference to its value). */
export function nameVars(k: string): number {
  return k.length <= NAME_INLINE ? 1 : 1 + Math.ceil((k.length - NAME_INLINE) / STR_NEXT);
}

/** JsVars a value takes besides the name that holds it; objects met before cost nothing again. */
export function valueVars(v: unknown, seen: WeakSet<object>, budget: { n: number }, depth = 0): number {
  if (typeof v === 'string') return stringVars(v.length);
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? 0 : 1;
  if (typeof v === 'boolean' || v === null) return 1;
  if (typeof v !== 'object' || v === undefined) return 0; // functions are code (the fixed part); undefined holds nothing
  if (seen.has(v) || depth > MAX_DEPTH || --budget.n < 0) return 0;
  seen.add(v);
  if (ArrayBuffer.isView(v)) return 2 + Math.ceil(v.byteLength / 12);
  if (Object.prototype.toString.call(v) === '[object ArrayBuffer]') return 1 + Math.ceil((v as ArrayBuffer).byteLength / 12);
  let n = 1;
  for (const k of Object.keys(v)) {
    let x: unknown;
    try {
      x = (v as Record<string, unknown>)[k];
    } catch {
      continue;
    }
    n += nameVars(k) + valueVars(x, seen, budget, depth + 1);
  }
  return n;
}

let session: Session | undefined;
/** Where the inspector finds the two arrays once, to learn their ids. */
const HOLD = Symbol.for('proofrig.sim.memory.hold');
const ROOTS = Symbol.for('proofrig.sim.memory.roots');

function post<T>(method: string, params: object): T {
  if (!session) {
    session = new Session();
    session.connect();
  }
  let out: T | undefined;
  let err: Error | null = null;
  session.post(method, params, (e, r) => {
    err = e;
    out = r as T;
  });
  if (err) throw err;
  if (out === undefined) throw new Error(`inspector ${method} did not answer synchronously`);
  return out;
}

interface RemoteObject {
  type: string;
  subtype?: string;
  objectId?: string;
  description?: string;
}
interface PropertyDescriptor {
  name: string;
  value?: RemoteObject;
}

/**
 * The innermost closure (or block) scope of the first pending callback that has one: the bundle's
 * module state when that callback is a top-level function of the bundle. The inspector hands each
 * scope over as a mirror `{description, object}`; the earlier walk pushed every scope and kept one
 * per key set, and since every mirror has the same two keys it kept only this first one. Stopping
 * there prices exactly the same and saves most of the inspector round trips (a chaos run asks for
 * an estimate every 10 s of clock per rig).
 */
function firstClosureScope(fns: Function[]): object | undefined {
  const k = keep();
  k.roots.push(...fns);
  const group = 'proofrig-memory';
  try {
    const items = post<{ result: PropertyDescriptor[] }>('Runtime.getProperties', { objectId: k.rootsId, ownProperties: true, objectGroup: group }).result;
    for (const it of items) {
      if (it.value?.type !== 'function' || !it.value.objectId) continue;
      const fp = post<{ internalProperties?: PropertyDescriptor[] }>('Runtime.getProperties', { objectId: it.value.objectId, ownProperties: true, objectGroup: group });
      const scopes = fp.internalProperties?.find((p) => p.name === '[[Scopes]]')?.value?.objectId;
      if (!scopes) continue;
      const list = post<{ result: PropertyDescriptor[] }>('Runtime.getProperties', { objectId: scopes, ownProperties: true, objectGroup: group }).result;
      const sc = list.find((x) => !!x.value?.objectId && /^(Closure|Block)/.test(x.value.description ?? ''));
      if (!sc) continue;
      post('Runtime.callFunctionOn', { objectId: sc.value!.objectId, functionDeclaration: 'function (h) { h.push(this); }', arguments: [{ objectId: k.holdId }], objectGroup: group });
      return k.hold[0];
    }
    return undefined;
  } finally {
    k.roots.length = 0;
    k.hold.length = 0;
    // A connected inspector session keeps every vm context it has seen alive (each rig boot is a new
    // context): a long chaos run grew with every seed until it ran out of memory. So the session lives
    // for one walk only; its object ids, and the two arrays it knows, go with it.
    session!.disconnect();
    session = undefined;
    kept = undefined;
  }
}

/** Two host-side arrays the inspector knows by id for the session (the roots handed in, the scope pushed out). */
let kept: { roots: Function[]; hold: object[]; rootsId: string; holdId: string } | undefined;
function keep(): NonNullable<typeof kept> {
  if (kept) return kept;
  const g = globalThis as unknown as Record<symbol, unknown>;
  const roots: Function[] = [];
  const hold: object[] = [];
  g[ROOTS] = roots;
  g[HOLD] = hold;
  try {
    const id = (sym: string) =>
      post<{ result: RemoteObject }>('Runtime.evaluate', { expression: `globalThis[Symbol.for('${sym}')]`, objectGroup: 'proofrig-memory-kept' }).result.objectId!;
    kept = { roots, hold, rootsId: id('proofrig.sim.memory.roots'), holdId: id('proofrig.sim.memory.hold') };
  } finally {
    delete g[HOLD];
    delete g[ROOTS];
  }
  return kept;
}

/** JsVars the firmware's code and Espruino's own objects take (no data). */
export function codeVars(sourceLength: number): number {
  return EMPTY_USAGE + Math.ceil(sourceLength / CODE_CHARS_PER_JSVAR);
}

/** The estimate: code plus the data reachable from the globals and from what the pending timers hold. */
export function estimateUsage(sourceLength: number, global: object, held: unknown[]): number {
  const seen = new WeakSet<object>();
  const budget = { n: MAX_NODES };
  let n = codeVars(sourceLength) + valueVars(global, seen, budget);
  const fns = held.filter((x): x is Function => typeof x === 'function');
  for (const x of held) if (typeof x !== 'function') n += valueVars(x, seen, budget);
  const scope = fns.length ? firstClosureScope(fns) : undefined;
  if (scope) n += valueVars(scope, seen, budget);
  return n;
}
