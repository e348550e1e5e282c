import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

// host/src/version.ts reads ../package.json next to its output file, which from bench/dist is not
// the host's: bundle the host's version in as a constant instead.
const hostVersion = (JSON.parse(readFileSync('host/package.json', 'utf8')) as { version: string }).version;

// The bench and its helper processes; the host and protocol are TypeScript source, bundled in.
export default defineConfig({
  entry: { run: 'bench/src/run.ts', loadgen: 'bench/src/loadgen.ts', 'mcp-load': 'bench/src/mcp-load.ts', probe: 'bench/src/probe.ts', latprobe: 'bench/src/latprobe.ts', mcplat: 'bench/src/mcplat.ts', 'espruino-memory': 'bench/src/espruino-memory.ts', 'journal-pg': 'bench/src/journal-pg.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  outDir: 'bench/dist',
  clean: true,
  splitting: true,
  noExternal: ['@proofrig/protocol', '@proofrig/sim', '@proofrig/host'],
  skipNodeModulesBundle: true,
  esbuildPlugins: [
    {
      name: 'host-version',
      setup(b) {
        b.onLoad({ filter: /host[\\/]src[\\/]version\.ts$/ }, () => ({ contents: `export const VERSION: string = ${JSON.stringify(hostVersion)};`, loader: 'ts' }));
      },
    },
  ],
});
