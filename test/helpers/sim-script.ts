// Small Espruino-style scripts as the "firmware" of simulator tests: written to a file, because
// the simulator only ever runs a file (as it runs the real firmware/dist/proofrig.js).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function firmware(src: string): string {
  const p = join(mkdtempSync(join(tmpdir(), 'proofrig-sim-')), 'proofrig.js');
  writeFileSync(p, src);
  return p;
}
