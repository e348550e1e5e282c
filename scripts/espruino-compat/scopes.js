// Scopes and bindings: what each name refers to (Espruino hoists neither `function` nor `var`, so
// where a binding is declared matters).
// Methods of the checker (scripts/espruino-compat.js copies them onto its prototype): `this` is the Checker.
import * as walk from 'acorn-walk';
import { isFunction, patternIdentifiers } from './ast.js';

/** @typedef {import('../espruino-compat.js').Node} Node */

export class ScopeRules {
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
}
