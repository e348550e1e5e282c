#!/usr/bin/env node
// The dashboard screenshots in docs/img/: a host with two simulated rigs (a relay whose coil is
// open, a stepper that stalls at 20 mm), driven through the dashboard's own operator endpoint,
// photographed in headless Chromium (playwright-core, as test/dashboard*.test.ts) at 1,024 and
// 1,400 px with the operator controls unlocked; then a host with the climate rig whose sensors an
// agent reads over MCP and whose fan and vent servo it sets (dashboard-climate.jpg, the sensor plots
// and the PWM outputs). Written as JPEG by Chromium. `--only climate` makes that one alone.
//
//   npm run build && node scripts/dashboard-screenshots.mjs [--out docs/img] [--chromium /usr/bin/chromium] [--only climate]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const OUT = arg('--out', join(ROOT, 'docs/img'));
const ONLY = arg('--only', 'all');
if (ONLY !== 'all' && ONLY !== 'climate') throw new Error(`--only takes climate (got ${ONLY})`);
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

/** A host serving `args` (rigs and faults) on a free port, with its tokens, until stop(). */
async function startHost(args) {
  const dir = mkdtempSync(join(tmpdir(), 'proofrig-shots-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(process.execPath, [join(ROOT, 'host/bin/proofrig.js'), 'serve', '--http', String(port), '--db', join(dir, '.proofrig', 'journal.db'), '--log-level', 'warn', ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const token = (who) => readFileSync(join(dir, '.proofrig', `${who}-token`), 'utf8').trim();
  const stop = async () => {
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  };
  // Up once the operator endpoint answers the operator token.
  for (let i = 0; ; i++) {
    const ok = await fetch(url + '/operator', { headers: { authorization: `Bearer ${existsSync(join(dir, '.proofrig', 'operator-token')) ? token('operator') : 'x'}` } }).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 100 || proc.exitCode !== null) {
      await stop();
      throw new Error('the host did not start');
    }
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
  return { url, token, act, stop };
}

let browser, host;
try {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  mkdirSync(OUT, { recursive: true });
  if (ONLY === 'all') await overview();
  await climate();
} finally {
  await browser?.close();
  await host?.stop();
}

/** The relay rig and the stepper rig at 1,024 and 1,400 px, operator controls unlocked. */
async function overview() {
  host = await startHost(['--sim', join(ROOT, 'boards/relay-rig-4ch.json'), '--sim', join(ROOT, 'boards/stepper-rig.json'), '--fault', 'relay-rig-4ch:relay2:coil_open', '--fault', 'stepper-rig:x:stall@20']);
  const { url, token, act } = host;
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
  await host.stop();
  host = undefined;
}

async function climate() {
  // The climate rig: the SHT3x read before its supply relay is on (BUS_NAK), then after it, and the
  // heater's ACS712 with 40x its ADC noise, ten times each, read by an agent over MCP.
  host = await startHost(['--sim', join(ROOT, 'boards/climate-rig.json'), '--fault', 'climate-rig:heater_current:noisy']);
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  await page.goto(`${host.url}/#token=${encodeURIComponent(host.token('agent'))}`);
  await page.getByTestId('device-climate-rig').waitFor({ timeout: 10000 });
  const client = new Client({ name: 'screenshots', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(host.url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${host.token('agent')}` } } }));
  const read = async (name, more = {}) => {
    const r = (await client.callTool({ name: 'read_sensor', arguments: { name, ...more } })).structuredContent;
    console.log(`read_sensor ${name}: ${r.status === 'ok' ? r.value + ' ' + r.unit : r.status}`);
  };
  await read('air temperature');
  await read('heater current');
  const on = await host.act('relay_set', { device_id: 'climate-rig', channel: 'sensor power', on: true });
  await read('air temperature', { fresh_after: on.command_id, delay_ms: 600 }); // the SHT3x powers up in 500 ms
  for (let i = 0; i < 10; i++) for (const name of ['air temperature', 'air humidity', 'heater current']) await read(name);
  // The fan proven by its tachometer, the vent servo unverified.
  for (const [name, args] of [['fan_set', { name: 'exhaust fan', duty: 60 }], ['servo_set', { name: 'vent flap', angle: 90 }]]) {
    const r = (await client.callTool({ name, arguments: { ...args, wait_ms: 20000 } })).structuredContent;
    console.log(`${name} ${JSON.stringify(args)}: ${r.state}${r.error_code ? ' ' + r.error_code : ''}`);
  }
  await client.close();
  await page.getByTestId('splot-climate-rig-heater_current').waitFor({ timeout: 5000 });
  await page.getByTestId('fan-climate-rig-fan').getByTestId('fan-rpm').filter({ hasText: 'rpm' }).waitFor({ timeout: 5000 });
  const file = join(OUT, 'dashboard-climate.jpg');
  // The device card alone: the commands table of three dozen reads says nothing the plots do not.
  // (Its box, not the element: the page redraws its cards every second.)
  const box = await page.getByTestId('device-climate-rig').boundingBox();
  const img = await page.screenshot({ type: 'jpeg', quality: 70, fullPage: true, clip: { x: box.x - 8, y: box.y - 8, width: box.width + 16, height: box.height + 16 } });
  writeFileSync(file, img);
  console.log(`wrote ${file} (${Math.round(img.length / 1024)} kB)`);
}
