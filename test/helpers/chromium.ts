// The headless Chromium the dashboard specs drive (Debian's package; PROOFRIG_CHROMIUM names another).
// In CI a missing Chromium fails the run; elsewhere the page specs are skipped with a notice.
import { afterAll, beforeAll } from 'vitest';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.PROOFRIG_CHROMIUM ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

if (!CHROMIUM) {
  if (process.env.CI) throw new Error('the dashboard tests need Chromium in CI: apt-get install -y chromium (or set PROOFRIG_CHROMIUM)');
  console.warn('dashboard tests skipped: no Chromium found; install it with `apt-get install -y chromium` or set PROOFRIG_CHROMIUM');
}

/** One browser for the spec file, launched before its specs and closed after them; the getter gives it. */
export function useBrowser(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (CHROMIUM) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => browser!;
}
