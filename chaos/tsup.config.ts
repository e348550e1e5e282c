import { defineConfig } from 'tsup';

// The chaos tool: host core, simulator and firmware codec bundled from source; native/npm deps stay external.
export default defineConfig({
  entry: { cli: 'chaos/src/cli.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  outDir: 'chaos/dist',
  clean: true,
  noExternal: ['@proofrig/protocol', '@proofrig/sim', '@proofrig/host'],
  external: ['commander', 'pino', 'better-sqlite3'],
});
