// Builds the firmware into ONE Espruino-compatible file: dist/proofrig.js (ES5, minified).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
});
