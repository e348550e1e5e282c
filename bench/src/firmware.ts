// Bench section 7: firmware size, and the real interpreter when available.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ROOT, children } from './harness.js';

export function firmwareSize(): { raw: number; gzip: number } {
  const src = readFileSync(join(ROOT, 'firmware', 'dist', 'proofrig.js'));
  return { raw: src.length, gzip: gzipSync(src, { level: 9 }).length };
}

export async function espruino(bin: string): Promise<{ loadMs: number; free: number; usage: number; total: number } | string> {
  if (!existsSync(bin)) return `PROOFRIG_ESPRUINO=${bin} does not exist`;
  const fw = readFileSync(join(ROOT, 'firmware', 'dist', 'proofrig.js'), 'latin1');
  // Load the firmware with no stored config (it stops before dialling), then print process.memory().
  const code = `var __t=getTime();${fw}\n;setTimeout(function(){var m=process.memory();console.log("BENCH "+JSON.stringify({loadMs:(getTime()-__t)*1000,free:m.free,usage:m.usage,total:m.total}));},50);`;
  const file = join(mkdtempSync(join(tmpdir(), 'proofrig-bench-')), 'fw.js');
  writeFileSync(file, code, 'latin1');
  return new Promise((resolve) => {
    // In the temp folder: the interpreter keeps its Storage as ./espruino.flash where it runs.
    const k = spawn(bin, [file], { cwd: dirname(file), stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(k);
    let out = '';
    const done = (r: Awaited<ReturnType<typeof espruino>>) => {
      k.kill('SIGKILL');
      resolve(r);
    };
    k.stdout.on('data', (b) => {
      out += b;
      const m = /BENCH (\{.*\})/.exec(out);
      if (m) done(JSON.parse(m[1]));
    });
    setTimeout(() => done(`no answer from the interpreter: ${out.slice(-300)}`), 10000);
  });
}
