// Count the instructions of the chip-speed calibration workload (sim/src/chip-speed.ts) with valgrind
// callgrind: work(WORKLOAD_N) minus work(0), on the interpreter named by PROOFRIG_ESPRUINO. Paste
// the number into WORKLOAD_INSTRUCTIONS when the workload or the interpreter's version changes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';

const bin = process.env.PROOFRIG_ESPRUINO;
if (!bin) throw new Error('set PROOFRIG_ESPRUINO to the interpreter (scripts/build-espruino.sh prints it)');
const dir = mkdtempSync(join(tmpdir(), 'proofrig-chip-count-'));
buildSync({ entryPoints: [new URL('../sim/src/chip-speed.ts', import.meta.url).pathname], outfile: join(dir, 'chip-speed.mjs'), format: 'esm', platform: 'node' });
const { WORKLOAD, WORKLOAD_N, WORKLOAD_INSTRUCTIONS } = await import(join(dir, 'chip-speed.mjs'));
const count = (n) => {
  const f = join(dir, `w${n}.js`);
  writeFileSync(f, `${WORKLOAD}\nprint(work(${n}));\n`);
  const out = execFileSync('bash', ['-c', `valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B" "$F" </dev/null 2>&1 >/dev/null`], {
    cwd: dir,
    env: { ...process.env, B: bin, F: f },
    encoding: 'utf8',
  });
  const m = /Collected : (\d+)/.exec(out);
  if (!m) throw new Error(`no callgrind total in: ${out}`);
  return Number(m[1]);
};
try {
  const n = count(WORKLOAD_N) - count(0);
  console.log(`work(${WORKLOAD_N}) costs ${n} instructions (committed: ${WORKLOAD_INSTRUCTIONS})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
