// Build the firmware exactly as `npm run build -w firmware` does, into a private directory, so a
// test always runs the current source and never disturbs a concurrent build of firmware/dist.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'tsup';
import { beforeAll, expect } from 'vitest';
import { parseToHost } from '@proofrig/protocol';
import type { FakeSocket, Rig } from '../../firmware/test/espruino-fake';

export const ROOT = resolve(__dirname, '..', '..');

/** Path of a freshly built firmware file. */
export async function buildFirmwareToTemp(): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'proofrig-fw-'));
  await build({ config: join(ROOT, 'firmware/tsup.config.ts'), outDir: out, clean: false, silent: true });
  return join(out, 'proofrig.js');
}

/**
 * For a test file that runs the built firmware in the vm fake: builds it once before the file's
 * tests and returns a getter for its path.
 */
export function useBuiltFirmware(): () => string {
  let file = '';
  beforeAll(async () => {
    file = await buildFirmwareToTemp();
  }, 60000);
  return () => file;
}

/**
 * The frames the device sent on `s` since the last call, each checked by the host's validator and
 * returned as the host reads them (a snapshot's relay bits decoded with the rig's board).
 */
export function recvValidated(rig: Rig, s: FakeSocket): Record<string, any>[] {
  return rig.recv(s).map((f) => {
    const p = parseToHost(JSON.stringify(f), rig.board?.relays);
    expect(p.ok, JSON.stringify(f) + ' ' + JSON.stringify(p)).toBe(true);
    return p.ok ? p.f : f;
  });
}
