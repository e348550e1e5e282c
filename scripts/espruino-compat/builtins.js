// Built-ins, modules and process: missing globals, statics and methods, require() and its allow-list,
// process members, and the helpers the es5 lowering leaves for constructs Espruino cannot run.
// Methods of the checker (scripts/espruino-compat.js copies them onto its prototype): `this` is the Checker.
import { MISSING_GLOBALS, MISSING_STATICS, MISSING_METHODS, ALLOWED_PROCESS_MEMBERS, LOWERED_HELPERS, NODE_BUILTINS } from './tables.js';
import { isFunction, memberName, stringValue } from './ast.js';

/** @typedef {import('../espruino-compat.js').Node} Node */

export class BuiltinRules {
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
}
