// The first pass: one walk over the tree that collects scopes, references and calls, and reports the
// syntax Espruino rejects (modern syntax, regex features, async and generators).
// Methods of the checker (scripts/espruino-compat.js copies them onto its prototype): `this` is the Checker.
import * as walk from 'acorn-walk';
import { SYNC_CALLBACK_METHODS, LOWERED_HELPERS } from './tables.js';
import { isFunction, memberName, patternIdentifiers, regexPatternProblems } from './ast.js';

/** @typedef {import('../espruino-compat.js').Node} Node */

export class SyntaxRules {
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
          // Espruino lexes `of` as a keyword: a variable the minifier named `of` is a syntax error
          // ("Got of expected ID/EOF"; before a `/`, a regex that swallows the rest of the file: "Got EOF
          // expected '}'"). Seen on the firmware bundle; scripts/espruino-unkeyword.js renames them.
          if (node.name === 'of') this.report('keyword-name', node, 'a variable named `of` is a syntax error on Espruino (it lexes `of` as a keyword): rename it (the firmware build runs scripts/espruino-unkeyword.js)');
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
          // `arr.length = 0` throws TypeError "Assignment to a constant" on Espruino 2v29 (V8 truncates):
          // a stop verdict that emptied its list this way threw after its first result and left the axis busy.
          if (node.left.type === 'MemberExpression' && memberName(node.left) === 'length') {
            this.report('length-assignment', node, 'assigning to `.length` throws "Assignment to a constant" on Espruino: empty an array with arr.splice(0, arr.length)');
          }
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
}
