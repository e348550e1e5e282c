// The dashboard a person watches while an agent drives the rig, tested in a real headless
// Chromium: it shows a relay command's evidence within a second of the result, and a stall's
// error code as it happens, without a reload; labels and areas; faults from the journal, not only
// since the page opened; calls for unknown devices folded; nothing clipped at 1,024 and 1,400 px.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { CHROMIUM, useBrowser } from './helpers/chromium.js';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';

const STEPPER_BOARD = new URL('../boards/stepper-rig.json', import.meta.url).pathname;

const browser = useBrowser();

async function open(e: E2E, width = 1400): Promise<Page> {
  const page = await browser().newPage({ viewport: { width, height: 900 } });
  await page.goto(e.running.url + '/' + dashboardFragment(e));
  await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 5000 });
  return page;
}

/** The fragment the banner prints (the token, once MCP has one). */
function dashboardFragment(e: E2E): string {
  const t = e.running.tokens?.agent;
  return t ? `#token=${encodeURIComponent(t)}` : '';
}

describe.skipIf(!CHROMIUM)('the live dashboard', () => {
  it('shows each device online with its outputs, and a relay command with its evidence within a second of the result', async () => {
    const e = await startE2E();
    try {
      const page = await open(e);
      await expect(page.getByTestId(`device-${RIG}`).locator('.badge').textContent()).resolves.toBe('online');
      await expect(page.getByTestId(`relay-${RIG}-1`).textContent()).resolves.toMatch(/^1bench lamp K1.*aux_contact/);
      await expect(page.getByTestId(`area-${RIG}`).textContent()).resolves.toBe('lab bench');

      const r = await e.call('relay_set', { device_id: RIG, channel: 1, on: true });
      const id = (r.structuredContent as { command_id: string }).command_id;
      const final = await e.waitTerminal(id);
      expect(final.state).toBe('completed');
      const resultAt = Date.now();
      const row = page.getByTestId(`cmd-${id}`);
      await row.and(page.locator('[data-state="completed"]')).waitFor({ timeout: 1000 });
      expect(Date.now() - resultAt).toBeLessThan(1000);
      const text = await row.textContent();
      expect(text).toContain('relay 1 (bench lamp) on');
      expect(text).toMatch(/completed/);
      expect(text).toContain('aux_contact');
      expect(text).toMatch(/submitted.*→.*completed/);
      // The output's own row shows the evidence of its last command and the state the device reported.
      await until(async () => /completed aux_contact/.test((await page.getByTestId(`relay-${RIG}-1`).textContent()) ?? ''), 1000, 'relay row evidence');
      expect(await page.getByTestId(`relay-${RIG}-1`).textContent()).toMatch(/onon/);
      await page.screenshot({ path: process.env.PROOFRIG_SCREENSHOT ?? '/tmp/proofrig-dashboard-relay.png', fullPage: true });

      // Offline is shown as it happens.
      e.running.rigs.get(RIG)!.powerLoss(60_000);
      await page.getByTestId(`device-${RIG}`).locator('.badge.off').waitFor({ timeout: 3000 });
      await page.close();
    } finally {
      await e.close();
    }
  });

  it('shows a stall with its error code as it happens, in the faults list and the timeline', async () => {
    const e = await startE2E({ sims: [{ boardFile: STEPPER_BOARD }], device: 'stepper-rig', faults: ['stepper-rig:x:stall@20'] });
    try {
      const page = await open(e);
      const home = await e.act('stepper_home', { device_id: 'stepper-rig', axis: 'x' });
      expect(home.final.state).toBe('completed');
      const r = await e.call('stepper_move', { device_id: 'stepper-rig', axis: 'x', target_mm: 60 });
      const id = (r.structuredContent as { command_id: string }).command_id;
      // While it runs, the axis row moves.
      await until(async () => /moving/.test((await page.getByTestId('axis-stepper-rig-x').textContent()) ?? ''), 3000, 'axis moving');
      const final = await e.waitTerminal(id);
      expect(final).toMatchObject({ state: 'failed', error_code: 'MOTOR_STALL' });
      const resultAt = Date.now();
      await page.getByTestId(`cmd-${id}`).and(page.locator('[data-state="failed"]')).waitFor({ timeout: 1000 });
      expect(Date.now() - resultAt).toBeLessThan(1000);
      expect(await page.getByTestId(`cmd-${id}`).textContent()).toContain('MOTOR_STALL');
      const faults = await page.getByTestId('fault').allTextContents();
      expect(faults.some((f: string) => f.startsWith('MOTOR_STALL') && f.includes('move x (slide) → 60 mm'))).toBe(true);
      // The move as a plot: the commanded profile to 60 mm, the encoder's readings during it, and the stall where it happened.
      const plot = page.getByTestId('plot-stepper-rig-x');
      await until(async () => (await plot.getByTestId('plot-end').count()) === 1, 2000, 'the stall marked on the plot');
      expect(Number(await plot.getByTestId('plot-measured').getAttribute('data-points'))).toBeGreaterThanOrEqual(3);
      expect(await plot.textContent()).toMatch(new RegExp(`MOTOR_STALL at ${final.position_mm} mm`));
      expect(await plot.textContent()).toMatch(/60 mm/);
      await page.screenshot({ path: process.env.PROOFRIG_SCREENSHOT_STALL ?? '/tmp/proofrig-dashboard-stall.png', fullPage: true });
      await page.close();
    } finally {
      await e.close();
    }
  });

  it('is served like MCP: the page has no data of its own, and unknown paths are 404', async () => {
    const e = await startE2E({ sims: [{ boardFile: RELAY_BOARD }] });
    try {
      const page = await fetch(e.running.url + '/');
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/text\/html/);
      expect(await page.text()).not.toContain(RIG);
      expect((await fetch(e.running.url + '/nothing-here')).status).toBe(404);
      // The feed is MCP's data: it needs the same bearer token.
      expect((await fetch(e.running.url + '/events')).status).toBe(401);
      const feed = await fetch(e.running.url + '/events', { headers: { authorization: `Bearer ${e.running.tokens!.agent}` } });
      expect(feed.status).toBe(200);
      const first = await feed.body!.getReader().read();
      expect(new TextDecoder().decode(first.value)).toMatch(/^event: snapshot\ndata: \{.*"device_id":"relay-rig-4ch"/);
      await feed.body!.cancel().catch(() => {});
    } finally {
      await e.close();
    }
  });

  it('lists the faults the journal holds when it opens, and folds calls for unknown devices into one row', async () => {
    const e = await startE2E({ faults: [`${RIG}:relay2:coil_open`] });
    try {
      const bad = await e.act('relay_set', { device_id: RIG, channel: 2, on: true });
      expect(bad.final).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK' });
      for (const dev of ['nope', 'nope', 'typo-rig']) expect((await e.call('relay_set', { device_id: dev, channel: 1, on: true })).isError).toBeFalsy();
      // Opened after the fault: it is there, from the journal.
      const page = await open(e);
      const faults = await page.getByTestId('fault').allTextContents();
      expect(faults.some((f: string) => f.startsWith('NO_FEEDBACK') && f.includes('relay 2 (pump) on'))).toBe(true);
      // The pump's switch timeline holds its one switch, red for its failed evidence.
      const tl = page.getByTestId(`timeline-${RIG}-2`);
      expect(await tl.getAttribute('data-n')).toBe('1');
      expect(await tl.locator('i.on.failed').getAttribute('title')).toMatch(/on: failed aux_contact NO_FEEDBACK/);
      expect(await page.getByTestId('folded').textContent()).toBe('3 calls for devices this host does not know (typo-rig, nope), refused before anything was sent');
      expect(await page.locator('[data-testid^="cmd-"][data-state="rejected"]').count()).toBe(0);
      await page.close();
    } finally {
      await e.close();
    }
  });

  it.each([1024, 1400])('at %i px nothing is clipped: no card or table wider than its box, every command detail on screen', async (width) => {
    const e = await startE2E({ sims: [{ boardFile: RELAY_BOARD }, { boardFile: STEPPER_BOARD }], faults: [`${RIG}:relay2:coil_open`] });
    try {
      await e.waitOnline('stepper-rig');
      await e.act('relay_set', { device_id: RIG, channel: 2, on: true }); // a long detail
      await e.act('relay_set', { device_id: RIG, channel: 4, on: true });
      const page = await open(e, width);
      await page.getByTestId('device-stepper-rig').waitFor();
      await until(async () => (await page.locator('[data-testid^="cmd-"]').count()) === 2, 3000, 'both commands shown');
      // Run in the page (a string: this project's TypeScript has no DOM types).
      const overflow = (await page.evaluate(`(() => {
        const out = [];
        if (document.documentElement.scrollWidth > window.innerWidth) out.push('page ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
        for (const h of document.querySelectorAll('.card, .scroll, table'))
          if (h.scrollWidth > h.clientWidth + 1) out.push((h.className || h.tagName) + ' ' + h.closest('[data-testid]')?.getAttribute('data-testid') + ': ' + h.scrollWidth + ' > ' + h.clientWidth);
        for (const td of document.querySelectorAll('td.detail')) {
          const r = td.getBoundingClientRect();
          if (r.right > window.innerWidth) out.push('detail cell ends at ' + r.right + ' > ' + window.innerWidth);
        }
        return out;
      })()`)) as string[];
      expect(overflow).toEqual([]);
      await page.screenshot({ path: `/tmp/proofrig-dashboard-${width}.png`, fullPage: true });
      await page.close();
    } finally {
      await e.close();
    }
  });

  it("proofrig open's one-time link signs a browser in once, with no token in any URL; the cookie never opens /mcp", async () => {
    const e = await startE2E();
    try {
      const BIN = fileURLToPath(new URL('../host/bin/proofrig.js', import.meta.url));
      // Not spawnSync: the host answering it runs in this process.
      const run = (args: string[]) => promisify(execFile)(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000 }).then((x) => ({ status: 0, ...x }), (x: { code: number; stdout: string; stderr: string }) => ({ status: x.code, stdout: x.stdout, stderr: x.stderr }));
      const r = await run(['open', '--url', e.running.url, '--db', e.db]);
      expect(r.status, r.stderr).toBe(0);
      const link = r.stdout.trim();
      expect(link).toMatch(new RegExp(`^${e.running.url}/\\?once=[A-Za-z0-9_-]{32}$`));
      expect(link).not.toContain(e.running.tokens!.agent);
      const page = await browser().newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(link);
      expect(page.url()).toBe(e.running.url + '/'); // redirected: the code is gone from the address bar
      await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 5000 });
      await page.getByTestId(`device-${RIG}`).waitFor();
      // Spent: the same link again is refused, and says what to do.
      const again = await fetch(link, { redirect: 'manual' });
      expect(again.status).toBe(410);
      expect(await again.text()).toMatch(/already used or has expired.*proofrig open/);
      // The cookie the browser holds is for /events only: /mcp still wants the bearer token.
      const cookies = await page.context().cookies();
      expect(cookies.map((c) => [c.name, c.path, c.httpOnly, c.sameSite])).toEqual([['proofrig_dashboard', '/events', true, 'Strict']]);
      const mcp = await fetch(e.running.url + '/mcp', { method: 'POST', headers: { cookie: `proofrig_dashboard=${cookies[0].value}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }) });
      expect(mcp.status).toBe(401);
      // Without the token the host mints no link.
      expect((await fetch(e.running.url + '/dashboard-link', { method: 'POST' })).status).toBe(401);
      await page.close();
    } finally {
      await e.close();
    }
  });
});
