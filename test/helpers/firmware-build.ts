// Build the firmware exactly as `npm run build -w firmware` does, into a private directory, so a
// test always runs the current source and never disturbs a concurrent build of firmware/dist.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'tsup';

export const ROOT = resolve(__dirname, '..', '..');

/** Path of a freshly built firmware file. */
export async function buildFirmwareToTemp(): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'proofrig-fw-'));
  await build({ config: join(ROOT, 'firmware/tsup.config.ts'), outDir: out, clean: false, silent: true });
  return join(out, 'proofrig.js');
}
