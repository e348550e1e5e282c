import { defineConfig } from 'tsup';

// The bench and its helper processes; the host and protocol are TypeScript source, bundled in.
export default defineConfig({
  entry: { run: 'bench/src/run.ts', loadgen: 'bench/src/loadgen.ts', 'mcp-load': 'bench/src/mcp-load.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  outDir: 'bench/dist',
  clean: true,
  splitting: true,
  noExternal: ['@proofrig/protocol', '@proofrig/sim'],
  skipNodeModulesBundle: true,
});
