// Builds the firmware into Espruino-compatible files (ES5, minified), one per device link:
// dist/proofrig.js dials the host over WebSocket (src/ws.ts), dist/proofrig-mqtt.js reaches it
// through an MQTT broker (src/mqtt.ts stands in for src/ws.ts; __LINK_MQTT__ picks the URL check in
// main.ts). Everything else is the same source; the WebSocket bundle is what it was before the MQTT
// one existed (the define folds away and the MQTT modules are never reached from it).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Options } from 'tsup';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')) as { version: string };

function bundle(name: string, mqtt: boolean): Options {
  return {
    entry: { [name]: join(here, 'src/main.ts') },
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
    // The two bundles build side by side into one folder: neither may empty it under the other.
    clean: false,
    noExternal: ['@proofrig/protocol'],
    // require('Storage'|'net'|'Wifi'|'crypto') are Espruino built-ins. esbuild would route every `require`
    // through a shim that probes for Proxy, so the source's `require` is renamed to a global the
    // banner binds to the interpreter's own require before the bundle runs.
    external: ['Storage', 'net', 'Wifi', 'crypto'],
    banner: { js: 'var __proofrigRequire=require;' },
    define: { __FW_VERSION__: JSON.stringify(pkg.version), __LINK_MQTT__: String(mqtt), require: '__proofrigRequire' },
    esbuildPlugins: mqtt
      ? [
          {
            name: 'proofrig-link-mqtt',
            setup(b) {
              // session.ts imports its transport as './ws': the MQTT bundle gets mqtt.ts there.
              b.onResolve({ filter: /^\.\/ws$/ }, () => ({ path: join(here, 'src/mqtt.ts') }));
            },
          },
        ]
      : [],
    outExtension: () => ({ js: '.js' }),
  };
}

export default defineConfig([bundle('proofrig', false), bundle('proofrig-mqtt', true)]);
