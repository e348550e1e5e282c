// The dashboard's sensor plots in a real headless Chromium (issue 28, item 5): each sensor's
// readings over time, live from the device's state snapshots, values only with status ok and an
// error reading as a red mark with its code; readings taken before the page opened (even before a
// host restart) come from the journal.
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CHROMIUM, useBrowser } from './helpers/chromium.js';
import { enginesUnderTest } from './helpers/engines.js';
import { startE2E, until, type E2E } from './helpers/e2e.js';

const BOARD = new URL('../boards/climate-rig.json', import.meta.url).pathname;
const DEV = 'climate-rig';

const browser = useBrowser();

async function open(e: E2E): Promise<Page> {
  const page = await browser().newPage({ viewport: { width: 1400, height: 900 } });
  // A missing element fails in 5 s with its name, not at the spec's timeout.
  page.setDefaultTimeout(5000);
  const t = e.running.tokens?.agent;
  await page.goto(e.running.url + '/' + (t ? `#token=${encodeURIComponent(t)}` : ''));
  await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 5000 });
  return page;
}

/** Set what the ACS712 measures, read it through MCP and return the value read_sensor reported. */
async function readAmps(e: E2E, amps: number): Promise<{ value: number | null; status: string }> {
  e.running.rigs.get(DEV)!.sensors!.setValue('heater_current', amps);
  const r = (await e.call('read_sensor', { name: 'heater current' })) as CallToolResult;
  return r.structuredContent as { value: number | null; status: string };
}

/** What the heater current's plot holds: its ok values and every reading's status, oldest first. */
async function plotted(page: Page): Promise<{ values: string | null; statuses: string | null }> {
  const svg = page.getByTestId(`splot-${DEV}-heater_current`);
  if ((await svg.count()) === 0) return { values: null, statuses: null };
  return { values: await svg.getAttribute('data-values'), statuses: await svg.getAttribute('data-statuses') };
}

describe.skipIf(!CHROMIUM)('the sensor plots', () => {
  describe.each(enginesUnderTest())('on the %s engine', (engine) => {
    it('draw each reading the device reported as it arrives, an error reading as a gap marked with its code', async () => {
      const e = await startE2E({ engine, sims: [{ boardFile: BOARD }], device: DEV });
      try {
        const page = await open(e);
        await expect(page.getByTestId(`sensor-${DEV}-heater_current`).textContent()).resolves.toBe('heater current heater_current not read yet');
        const a = await readAmps(e, 1.0);
        const b = await readAmps(e, 2.0);
        e.running.rigs.get(DEV)!.setSensorFault('heater_current', 'unplugged');
        const gone = await readAmps(e, 2.0);
        e.running.rigs.get(DEV)!.setSensorFault('heater_current', null);
        const c = await readAmps(e, 3.0);
        expect([a.status, b.status, gone.status, c.status]).toEqual(['ok', 'ok', 'OUT_OF_RANGE', 'ok']);
        expect(gone.value).toBeNull();

        await until(async () => (await plotted(page)).statuses === 'ok ok OUT_OF_RANGE ok', 3000, 'four readings plotted');
        expect(await plotted(page)).toEqual({ values: `${a.value} ${b.value} ${c.value}`, statuses: 'ok ok OUT_OF_RANGE ok' });
        const marks = page.getByTestId(`splot-${DEV}-heater_current`).getByTestId('splot-err');
        await expect(marks.count()).resolves.toBe(1);
        await expect(marks.getAttribute('data-code')).resolves.toBe('OUT_OF_RANGE');
        await expect(marks.locator('text').textContent()).resolves.toBe('OUT_OF_RANGE');
        // The line is broken at the error: two runs, one reading before it is joined to none after it.
        await expect(page.getByTestId(`splot-${DEV}-heater_current`).locator('polyline.val').count()).resolves.toBe(2);
        await expect(page.getByTestId(`sensor-${DEV}-heater_current`).getByTestId('sensor-last').textContent()).resolves.toBe(`${Math.round(c.value! * 100) / 100} A`);
        // The SHT3x was never read: no plot, and it says so.
        await expect(page.getByTestId(`splot-${DEV}-air_temp`).count()).resolves.toBe(0);
        await expect(page.getByTestId(`sensor-${DEV}-air_temp`).textContent()).resolves.toBe('air temperature air_temp not read yet');
        await page.close();
      } finally {
        await e.close();
      }
      // Four readings through the real interpreter, each up to the tool's 15 s wait when a loaded machine starves it.
    }, 60_000);
  });

  it('a page opened later, even after a host restart, draws the readings the journal holds', async () => {
    const e = await startE2E({ sims: [{ boardFile: BOARD }], device: DEV });
    try {
      const a = await readAmps(e, 0.5);
      const b = await readAmps(e, 4.0);
      // A relay result carries the same last reading again: it is drawn once.
      const { final } = await e.act('relay_set', { device_id: DEV, channel: 'sensor power', on: true });
      expect(final.state).toBe('completed');
      await e.restart();
      await e.waitOnline(DEV);
      const page = await open(e);
      await page.getByTestId(`splot-${DEV}-heater_current`).waitFor({ timeout: 3000 });
      expect(await plotted(page)).toEqual({ values: `${a.value} ${b.value}`, statuses: 'ok ok' });
      await page.close();
    } finally {
      await e.close();
    }
  });
});
