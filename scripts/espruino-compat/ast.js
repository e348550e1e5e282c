// Small questions about acorn nodes the rules share, and the regex-pattern scan.

/** @param {Node} node */
export const isFunction = (node) =>
  node.type === 'FunctionDeclaration' || node.type === 'FunctionExpression' || node.type === 'ArrowFunctionExpression';

/** @param {Node | null | undefined} node @returns {string | null} static property name of a MemberExpression */
export function memberName(node) {
  if (!node || node.type !== 'MemberExpression') return null;
  if (!node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.computed && node.property.type === 'Literal' && typeof node.property.value === 'string') return node.property.value;
  return null;
}

/** @param {Node | null | undefined} node */
export function stringValue(node) {
  if (!node) return null;
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

/** Names bound by a declaration pattern. @param {Node | null} pattern @param {Node[]} [out] */
export function patternIdentifiers(pattern, out = []) {
  if (!pattern) return out;
  switch (pattern.type) {
    case 'Identifier': out.push(pattern); break;
    case 'ObjectPattern':
      for (const p of pattern.properties) patternIdentifiers(p.type === 'RestElement' ? p : p.value, out);
      break;
    case 'ArrayPattern': for (const e of pattern.elements) patternIdentifiers(e, out); break;
    case 'AssignmentPattern': patternIdentifiers(pattern.left, out); break;
    case 'RestElement': patternIdentifiers(pattern.argument, out); break;
    default: break; // MemberExpression targets bind nothing
  }
  return out;
}

/**
 * Problems in a regular expression pattern that Espruino's regex engine rejects.
 * @param {string} pattern
 */
export function regexPatternProblems(pattern) {
  const problems = [];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      if (!inClass && pattern[i + 1] === 'k' && pattern[i + 2] === '<') problems.push('named backreference \\k<name>');
      i++;
      continue;
    }
    if (inClass) { if (ch === ']') inClass = false; continue; }
    if (ch === '[') { inClass = true; continue; }
    if (ch === '(' && pattern[i + 1] === '?' && pattern[i + 2] === '<') {
      if (pattern[i + 3] === '=' || pattern[i + 3] === '!') problems.push(`lookbehind (?<${pattern[i + 3]}...)`);
      else problems.push('named group (?<name>...)');
    }
  }
  return problems;
}
