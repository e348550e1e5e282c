// Hoisting: a name used before its definition runs (Espruino hoists neither `function` nor `var`).
// Methods of the checker (scripts/espruino-compat.js copies them onto its prototype): `this` is the Checker.
import { memberName } from './ast.js';

/** @typedef {import('../espruino-compat.js').Node} Node */

export class HoistingRules {
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
