// Feature guards: a use of a missing built-in behind `typeof X !== "undefined"` (or the like) is not
// reported.
// Methods of the checker (scripts/espruino-compat.js copies them onto its prototype): `this` is the Checker.
import { MISSING_GLOBALS, MISSING_STATICS } from './tables.js';
import { memberName } from './ast.js';

/** @typedef {import('../espruino-compat.js').Node} Node */

export class GuardRules {
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
}
