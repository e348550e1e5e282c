// Where a mutant is, in words that survive edits: the innermost named function (or method, as
// Class.method) around a line of a TypeScript source, from the TypeScript parser. The mutation
// allow-list keys its entries by function and code text, not by line number.
import ts from 'typescript';

/** The named functions of a source and a lookup from a 1-based line and column to the innermost one. */
export function functionsOf(source, fileName = 'x.ts') {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const spans = [];
  const isFn = (n) => ts.isArrowFunction(n) || ts.isFunctionExpression(n);
  const nameOf = (n) => {
    if (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n)) return n.name ? n.name.getText(sf) : null;
    if (ts.isConstructorDeclaration(n)) return 'constructor';
    if (isFn(n) && (ts.isVariableDeclaration(n.parent) || ts.isPropertyAssignment(n.parent) || ts.isPropertyDeclaration(n.parent))) return n.parent.name.getText(sf);
    return null;
  };
  const visit = (n, cls) => {
    if (ts.isClassDeclaration(n) && n.name) cls = n.name.getText(sf);
    const name = nameOf(n);
    if (name) {
      const member = ts.isMethodDeclaration(n) || ts.isConstructorDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n) || ts.isPropertyDeclaration(n.parent);
      spans.push({ name: member && cls ? cls + '.' + name : name, start: n.getStart(sf), end: n.getEnd() });
    }
    ts.forEachChild(n, (c) => visit(c, cls));
  };
  visit(sf, null);
  const starts = sf.getLineStarts();
  return {
    /** The innermost named function containing line:column (both 1-based), or '<module>'. */
    at(line, column) {
      const pos = starts[line - 1] + (column - 1);
      let best = null;
      for (const s of spans) if (s.start <= pos && pos < s.end && (!best || s.end - s.start < best.end - best.start)) best = s;
      return best ? best.name : '<module>';
    },
  };
}

/**
 * The 1-based lines of `source` holding `code` inside function `fn`, in order (the function is taken
 * where the code starts on the line).
 */
export function linesOf(source, fn, code, index = functionsOf(source)) {
  const out = [];
  source.split('\n').forEach((l, i) => {
    const c = l.indexOf(code);
    if (c >= 0 && index.at(i + 1, c + 1) === fn) out.push(i + 1);
  });
  return out;
}
