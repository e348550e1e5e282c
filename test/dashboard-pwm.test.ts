// The dashboard's fans and servos in a real headless Chromium (issue 28): the climate rig's card
// shows the fan's commanded duty, the speed its tachometer measured and the last fan.set's verdict,
// and the servo's last commanded angle marked unverified, live from the state snapshots the device
// sends, as the relay rows show relays.
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CommandStatus } from '@proofrig/host/core';
import { CHROMIUM, useBrowser } from './helpers/chromium.js';
import { enginesUnderTest } from './helpers/engines.js';
import { startE2E, until, type E2E } from './helpers/e2e.js';

const BOARD = new URL('../boards/climate-rig.json', import.meta.url).pathname;
const DEV = 'climate-rig';

const browser = useBrowser();

async function open(e: E2E): Promise<Page> {
  const page = await browser().newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(5000);
  const t = e.running.tokens?.agent;
  await page.goto(e.running.url + '/' + (t ? `#token=${encodeURIComponent(t)}` : ''));
  await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 5000 });
  return page;
}

async function tool(e: E2E, name: string, args: Record<string, unknown>): Promise<CommandStatus> {
  const res = (await e.call(name, args)) as CallToolResult;
  if (res.isError) throw new Error(JSON.stringify(res.content));
  return res.structuredContent as unknown as CommandStatus;
}

/** The text of one cell of a PWM output's row. */
const cell = (page: Page, row: string, id: string) => page.getByTestId(row).getByTestId(id).textContent();

describe.skipIf(!CHROMIUM)('the fans and servos on the device card', () => {
  describe.each(enginesUnderTest())('on the %s engine', (engine) => {
    it('show the fan duty, its measured rpm and the last verdict, and the servo angle as unverified, as the device reports them', async () => {
      const e = await startE2E({ engine, sims: [{ boardFile: BOARD }], device: DEV });
      try {
        await e.waitOnline(DEV);
        const page = await open(e);
        const fan = `fan-${DEV}-fan`;
        const servo = `servo-${DEV}-vent`;
        // Before any command: the firmware starts the fan stopped, the servo undriven.
        await expect(cell(page, fan, 'fan-duty')).resolves.toBe('0 %');
        await expect(cell(page, fan, 'fan-rpm')).resolves.toBe('not measured');
        await expect(cell(page, fan, 'pwm-verdict')).resolves.toBe('—');
        await expect(cell(page, servo, 'servo-deg')).resolves.toBe('never');
        await expect(page.getByTestId(fan).locator('td').first().textContent()).resolves.toBe('exhaust fan fan');

        const f = await tool(e, 'fan_set', { name: 'exhaust fan', duty: 60 });
        expect(f).toMatchObject({ state: 'completed', evidence: 'tachometer' });
        const rpm = f.device_state!.fans!.find((x) => x.id === 'fan')!.rpm!;
        await until(async () => (await cell(page, fan, 'fan-rpm')) === `${rpm} rpm`, 5000, 'measured rpm shown');
        await expect(cell(page, fan, 'fan-duty')).resolves.toBe('60 %');
        await expect(cell(page, fan, 'pwm-verdict')).resolves.toBe('completed tachometer 60 %');

        const v = await tool(e, 'servo_set', { name: 'vent flap', angle: 90 });
        expect(v.state).toBe('unverified');
        await until(async () => (await cell(page, servo, 'servo-deg')) === '90°', 5000, 'servo angle shown');
        await expect(cell(page, servo, 'servo-measured')).resolves.toBe('unverified no angle sensor');
        await expect(cell(page, servo, 'pwm-verdict')).resolves.toBe('unverified none 90°');

        // A stalled fan: the verdict turns red with its code and the rpm the tachometer measured.
        e.running.rigs.get(DEV)!.setFault('fan', 'stalled');
        const stalled = await tool(e, 'fan_set', { name: 'exhaust fan', duty: 80 });
        expect(stalled).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK' });
        await until(async () => (await cell(page, fan, 'pwm-verdict')) === 'failed tachometer NO_FEEDBACK 80 %', 5000, 'failed verdict shown');
        await expect(cell(page, fan, 'fan-duty')).resolves.toBe('80 %');
        await expect(cell(page, fan, 'fan-rpm')).resolves.toBe('0 rpm');
        await expect(page.getByTestId(fan).getByTestId('pwm-verdict').locator('.code').textContent()).resolves.toBe('NO_FEEDBACK');
        await page.close();
      } finally {
        await e.close();
      }
    }, 60_000);
  });
});
