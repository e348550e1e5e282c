// Builds the firmware into ONE Espruino-compatible file: dist/proofrig.js (ES5, minified).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { defineConfig } from 'tsup';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')) as { version: string };

export default defineConfig({
  entry: { proofrig: join(here, 'src/main.ts') },
  outDir: join(here, 'dist'),
  tsconfig: join(here, 'tsconfig.json'),
  format: ['iife'],
  // tsup lowers es5 with @swc/core after esbuild bundles at es2020.
  target: 'es5',
  platform: 'neutral',
  minify: true,
  sourcemap: false,
  dts: false,
  splitting: false,
  clean: true,
  noExternal: ['@proofrig/protocol'],
  // require('Storage'|'net'|'Wifi'|'crypto') are Espruino built-ins. esbuild would route every `require`
  // through a shim that probes for Proxy, so the source's `require` is renamed to a global the
  // banner binds to the interpreter's own require before the bundle runs.
  external: ['Storage', 'net', 'Wifi', 'crypto'],
  banner: { js: 'var __proofrigRequire=require;' },
  define: { __FW_VERSION__: JSON.stringify(pkg.version), require: '__proofrigRequire' },
  outExtension: () => ({ js: '.js' }),
  // The last minifier (swc, for the es5 target) may name something `of`, which Espruino's lexer
  // reads as its for...of keyword ("Got of expected ID" at boot): every such name is renamed to one
  // the bundle does not use (scripts/check-espruino.js refuses a bundle with one as keyword-name).
  onSuccess: async () => {
    const file = join(here, 'dist/proofrig.js');
    writeFileSync(file, renameOf(readFileSync(file, 'utf8')));
  },
});

/** Every identifier `of` (bindings and references; not property names) renamed to a name nowhere in the code. */
function renameOf(code: string): string {
  const ast = acorn.parse(code, { ecmaVersion: 5, ranges: false });
  const at: number[] = [];
  walk.fullAncestor(ast, (node, _s, anc) => {
    if (node.type !== 'Identifier' || (node as acorn.Identifier).name !== 'of') return;
    const p = anc[anc.length - 2] as acorn.Node & { computed?: boolean; property?: acorn.Node; key?: acorn.Node };
    if (p && !p.computed && (p.property === node || (p.type === 'Property' && p.key === node))) return;
    at.push(node.start);
  });
  if (!at.length) return code;
  let name = 'of_';
  while (new RegExp('\\b' + name + '\\b').test(code)) name += '_';
  let out = code;
  for (const i of at.sort((a, b) => b - a)) out = out.slice(0, i) + name + out.slice(i + 2);
  return out;
}
