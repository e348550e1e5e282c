// Fixtures for the flash tests: fake Espruino releases on disk and what a chip's flash should
// hold after writing one.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeFakeRelease, writeFakeReleaseDir, fakeReleaseTgz, type FakeRelease, type FakeReleaseSizes } from './flash/fake-release.js';

export const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest();

/** Sizes of a real Espruino ESP32 release (bootloader ~26 KB, table 3 KB, interpreter ~1.4 MB). */
export const RELEASE_SIZES: FakeReleaseSizes = { bootloader: 26 * 1024, partitions: 3072, app: 1_400 * 1024 };
/** A smaller interpreter image for tests about something other than size. */
export const SMALL_SIZES: FakeReleaseSizes = { bootloader: 26 * 1024, partitions: 3072, app: 96 * 1024 };

const dirs: string[] = [];

export function tempDir(prefix = 'proofrig-flash-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

export function cleanupTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

export async function releaseDir(release: FakeRelease, opts: { subdir?: string; omit?: (keyof FakeRelease)[] } = {}): Promise<string> {
  return writeFakeReleaseDir(tempDir(), release, opts);
}

export function releaseTgz(release: FakeRelease): string {
  const file = join(tempDir(), 'espruino_2v25_esp32.tgz');
  writeFileSync(file, fakeReleaseTgz(release));
  return file;
}

export { makeFakeRelease };

/** Offsets at which two byte arrays differ. */
export function diffOffsets(a: Uint8Array, b: Uint8Array): number[] {
  const out: number[] = [];
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) out.push(i);
  return out;
}
