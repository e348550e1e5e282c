// Run JavaScript on the real Espruino interpreter (PROOFRIG_ESPRUINO) in a given folder (its
// Storage lives there as ./espruino.flash), and collect the console until a line matches.
import { spawn } from 'node:child_process';
import { build } from 'tsup';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ESPRUINO = process.env.PROOFRIG_ESPRUINO || '';
export const ESPRUINO_NOTICE =
  'Espruino tier skipped: set PROOFRIG_ESPRUINO to the interpreter (ESPRUINO=$(scripts/build-espruino.sh | tail -n 1)) to run it';

/** Run file on the interpreter in cwd until a console line matches `until`, then kill it (SIGKILL). */
export function runEspruino(file: string, cwd: string, until: RegExp, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    // stdin stays an open pipe: at EOF the interpreter would spin or exit early.
    const p = spawn(ESPRUINO, [file], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`Espruino did not print ${until} within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const seen = (d: Buffer) => {
      out += d.toString('latin1');
      if (until.test(out)) {
        clearTimeout(timer);
        p.kill('SIGKILL');
        resolve(out);
      }
    };
    p.stdout.on('data', seen);
    p.stderr.on('data', seen);
    p.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** Bundle a TypeScript entry the way the firmware is built (iife, es5, Espruino's own require). */
export async function bundleForEspruino(entry: string): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'proofrig-esp-'));
  await build({
    entry: { probe: entry },
    format: ['iife'],
    target: 'es5',
    platform: 'neutral',
    minify: true,
    outDir: out,
    silent: true,
    config: false,
    dts: false,
    sourcemap: false,
    splitting: false,
    clean: false,
    noExternal: ['@proofrig/protocol'],
    external: ['Storage', 'net', 'Wifi', 'crypto'],
    banner: { js: 'var __proofrigRequire=require;' },
    define: { require: '__proofrigRequire', __FW_VERSION__: '"probe"' },
  });
  return readFileSync(join(out, 'probe.global.js'), 'utf8');
}
