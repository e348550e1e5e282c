import { defineConfig } from 'tsup';

// The host runs on Node 20; @proofrig/protocol is TypeScript source, so it is bundled in.
export default defineConfig({
  entry: { cli: 'src/cli.ts', index: 'src/index.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  outDir: 'dist',
  clean: true,
  splitting: true,
  sourcemap: true,
  noExternal: ['@proofrig/protocol'],
});
