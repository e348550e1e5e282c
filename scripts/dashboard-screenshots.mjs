#!/usr/bin/env node
// The dashboard screenshots in docs/img/: a host with two simulated rigs (a relay whose coil is
// open, a stepper that stalls at 20 mm), driven through the dashboard's own operator endpoint,
// photographed in headless Chromium (playwright-core, as test/dashboard*.test.ts) at 1,024 and
// 1,400 px with the operator controls unlocked, written as JPEG by Chromium.
//
//   npm run build && node scripts/dashboard-screenshots.mjs [--out docs/img] [--chromium /usr/bin/chromium]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const OUT = arg('--out', join(ROOT, 'docs/img'));
const CHROMIUM = arg('--chromium', process.env.PROOFRIG_CHROMIUM ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p)));
if (!CHROMIUM) throw new Error('no Chromium: apt-get install -y chromium, or pass --chromium PATH');
if (!existsSync(join(ROOT, 'host/dist/cli.js'))) throw new Error('build first: npm run build');

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.once('error', reject);
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const dir = mkdtempSync(join(tmpdir(), 'proofrig-shots-'));
const db = join(dir, '.proofrig', 'journal.db');
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const host = spawn(
  process.execPath,
  [join(ROOT, 'host/bin/proofrig.js'), 'serve', '--http', String(port), '--db', db, '--log-level', 'warn',
    '--sim', join(ROOT, 'boards/relay-rig-4ch.json'), '--sim', join(ROOT, 'boards/stepper-rig.json'),
    '--fault', 'relay-rig-4ch:relay2:coil_open', '--fault', 'stepper-rig:x:stall@20'],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
let browser;
try {
  const token = (who) => readFileSync(join(dir, '.proofrig', `${who}-token`), 'utf8').trim();
  // Up once the operator endpoint answers the operator token.
  for (let i = 0; ; i++) {
    const ok = await fetch(url + '/operator', { headers: { authorization: `Bearer ${existsSync(join(dir, '.proofrig', 'operator-token')) ? token('operator') : 'x'}` } }).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 100 || host.exitCode !== null) throw new Error('the host did not start');
    await sleep(200);
  }
  const act = async (tool, args) => {
    const r = await fetch(url + '/operator', { method: 'POST', headers: { authorization: `Bearer ${token('operator')}`, 'content-type': 'application/json' }, body: JSON.stringify({ tool, arguments: { ...args, wait_ms: 20000 } }) });
    const b = await r.json();
    const s = b.result?.structuredContent;
    if (!r.ok || !s) throw new Error(`${tool}: ${JSON.stringify(b)}`);
    console.log(`${tool} ${JSON.stringify(args)}: ${s.state}${s.error_code ? ' ' + s.error_code : ''}`);
    return s;
  };

  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const pages = [];
  for (const width of [1024, 1400]) {
    const page = await browser.newPage({ viewport: { width, height: 800 } });
    await page.goto(`${url}/#token=${encodeURIComponent(token('agent'))}`);
    await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 10000 });
    await page.getByTestId('device-stepper-rig').waitFor({ timeout: 10000 });
    pages.push([width, page]);
  }
  // The pages are open before the move, so they draw its plot (commanded against encoder).
  await act('relay_set', { device_id: 'relay-rig-4ch', channel: 1, on: true });
  await act('relay_set', { device_id: 'relay-rig-4ch', channel: 2, on: true });
  await act('relay_set', { device_id: 'relay-rig-4ch', channel: 4, on: true });
  await act('relay_set', { device_id: 'relay-rig-4ch', channel: 1, on: false });
  await act('stepper_home', { device_id: 'stepper-rig', axis: 'x' });
  await act('stepper_move', { device_id: 'stepper-rig', axis: 'x', target_mm: 60 });
  mkdirSync(OUT, { recursive: true });
  for (const [width, page] of pages) {
    await page.getByTestId('op-open').click();
    await page.getByTestId('op-token').fill(token('operator'));
    await page.getByTestId('op-unlock').click();
    await page.getByTestId('op-relay-relay-rig-4ch-1-on').waitFor({ timeout: 5000 });
    await page.getByTestId('op-target-stepper-rig-x').fill('40');
    await page.getByTestId('plot-end').waitFor({ timeout: 5000 });
    await page.evaluate('document.activeElement && document.activeElement.blur()');
    // JPEG at quality 60 from Chromium itself: no image encoder of our own.
    const file = join(OUT, `dashboard-${width}.jpg`);
    const img = await page.screenshot({ fullPage: true, type: 'jpeg', quality: 60 });
    writeFileSync(file, img);
    console.log(`wrote ${file} (${Math.round(img.length / 1024)} kB)`);
  }
} finally {
  await browser?.close();
  host.kill('SIGTERM');
  await new Promise((r) => (host.exitCode !== null ? r() : host.once('exit', r)));
  rmSync(dir, { recursive: true, force: true });
}
