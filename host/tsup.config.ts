import { defineConfig } from 'tsup';

// The host runs on Node 20; @proofrig/protocol and @proofrig/sim are TypeScript source, so they are bundled in.
export default defineConfig({
  entry: { cli: 'src/cli/main.ts', index: 'src/index.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  outDir: 'dist',
  clean: true,
  splitting: true,
  sourcemap: true,
  noExternal: ['@proofrig/protocol', '@proofrig/sim'],
});
