// The dashboard's operator controls (issue 27 item 7), in a real headless Chromium where it is
// about the page: they exist only once a person pasted the operator token (never with the read
// cookie or the agent token); a relay switched from the page is one journaled command, shown with
// its evidence, and the simulated relay really switched; an axis is homed and moved to a typed
// target; a latched e-stop is cleared from the page only as the operator; a cross-origin request,
// a form post or a cookie-only request is refused and changes nothing.
import { describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { CHROMIUM, useBrowser } from './helpers/chromium.js';
import type { IncomingMessage } from 'node:http';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import { operatorRefusal } from '../host/src/dashboard/operator.js';

const STEPPER_BOARD = new URL('../boards/stepper-rig.json', import.meta.url).pathname;

const browser = useBrowser();

/** The page signed in for reading (the banner's #token= fragment with the agent token). */
async function open(e: E2E, width = 1400): Promise<Page> {
  const page = await browser().newPage({ viewport: { width, height: 900 } });
  await page.goto(`${e.running.url}/#token=${encodeURIComponent(e.running.tokens!.agent)}`);
  await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 5000 });
  return page;
}

/** What a person does: open the panel, paste a token, press unlock. */
async function unlock(page: Page, token: string): Promise<void> {
  await page.getByTestId('op-open').click();
  await page.getByTestId('op-token').fill(token);
  await page.getByTestId('op-unlock').click();
}

const controls = (page: Page) => page.locator('[data-testid="op-controls"] button').count();
const commandsOf = (e: E2E, dev: string) => e.running.core.commands.recent(200).filter((c) => c.device_id === dev);

async function post(e: E2E, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: { error?: string; result?: { structuredContent?: Record<string, unknown>; isError?: boolean; content?: { text: string }[] } } }> {
  const r = await fetch(e.running.url + '/operator', { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: r.status, body: (await r.json().catch(() => ({}))) as Awaited<ReturnType<typeof post>>['body'] };
}

describe.skipIf(!CHROMIUM)('operator controls on the dashboard', () => {
  it('are absent with the read cookie and with the agent token, and present with the operator token (nothing clipped at 1,024 px)', async () => {
    const e = await startE2E({ sims: [{ boardFile: RELAY_BOARD }, { boardFile: STEPPER_BOARD }] });
    try {
      await e.waitOnline('stepper-rig');
      // Signed in by proofrig open's one-time link: the cookie reads /events, and shows no control.
      const link = (await (await fetch(e.running.url + '/dashboard-link', { method: 'POST', headers: { authorization: `Bearer ${e.running.tokens!.agent}` } })).json()) as { url: string };
      const viaCookie = await browser().newPage({ viewport: { width: 1024, height: 900 } });
      await viaCookie.goto(link.url);
      await viaCookie.getByTestId(`device-${RIG}`).waitFor({ timeout: 5000 });
      expect(await viaCookie.getByTestId('op').isVisible()).toBe(false);
      await viaCookie.getByTestId('op-open').click();
      expect(await controls(viaCookie)).toBe(0);
      await viaCookie.close();

      // The agent token pasted into the panel: refused with why, and still no control.
      const page = await open(e, 1024);
      await unlock(page, e.running.tokens!.agent);
      await until(async () => /refused: the operator controls need the operator token/.test((await page.getByTestId('op-msg').textContent()) ?? ''), 3000, 'agent token refused');
      expect(await controls(page)).toBe(0);
      await unlock(page, 'not-a-token');
      await until(async () => /not a token of this host/.test((await page.getByTestId('op-msg').textContent()) ?? ''), 3000, 'wrong token refused');
      expect(await controls(page)).toBe(0);
      // The token is never kept where a reload or another page could find it.
      expect(await page.evaluate('JSON.stringify(sessionStorage) + JSON.stringify(localStorage) + document.cookie + location.href')).not.toContain(e.running.tokens!.operator);

      await unlock(page, e.running.tokens!.operator);
      await page.getByTestId(`op-relay-${RIG}-1-on`).waitFor({ timeout: 3000 });
      for (const id of [`op-relay-${RIG}-4-off`, 'op-home-stepper-rig-x', 'op-move-stepper-rig-x', 'op-target-stepper-rig-x', 'op-stop-stepper-rig', 'op-estop-stepper-rig'])
        expect(await page.getByTestId(id).count(), id).toBe(1);
      // The relay board has no e-stop input: no control for one.
      expect(await page.getByTestId(`op-estop-${RIG}`).count()).toBe(0);
      expect(await page.getByTestId('op-token').inputValue()).toBe('');
      const overflow = (await page.evaluate(`(() => {
        const out = [];
        if (document.documentElement.scrollWidth > window.innerWidth) out.push('page ' + document.documentElement.scrollWidth);
        for (const h of document.querySelectorAll('.card, .scroll, table')) if (h.scrollWidth > h.clientWidth + 1) out.push(h.getAttribute('data-testid') + ' ' + h.scrollWidth + ' > ' + h.clientWidth);
        return out;
      })()`)) as string[];
      expect(overflow).toEqual([]);
      // Locked again: gone.
      await page.getByTestId('op-lock').click();
      expect(await controls(page)).toBe(0);
      await page.close();
    } finally {
      await e.close();
    }
  });

  it('switching a relay from the page is one journaled command, shown with its evidence, and the simulated relay switched', async () => {
    const e = await startE2E();
    try {
      const rig = e.running.rigs.get(RIG)!;
      expect(rig.relay(1).contactClosed).toBe(false);
      const before = commandsOf(e, RIG).length;
      const page = await open(e);
      await unlock(page, e.running.tokens!.operator);
      await page.getByTestId(`op-relay-${RIG}-1-on`).click();
      const result = page.getByTestId('op-result').and(page.locator('[data-state="completed"]'));
      await result.waitFor({ timeout: 8000 });
      expect(await result.textContent()).toMatch(/relay 1 \(bench lamp\) on on relay-rig-4ch: completed aux_contact/);
      const id = (await result.getAttribute('data-command'))!;
      // The same row as an MCP client's command, in the timeline, from the journal.
      const row = page.getByTestId(`cmd-${id}`);
      await row.and(page.locator('[data-state="completed"]')).waitFor({ timeout: 2000 });
      expect(await row.textContent()).toMatch(/submitted.*→.*completed.*aux_contact/);
      const mine = commandsOf(e, RIG);
      expect(mine.length).toBe(before + 1);
      expect(mine[0]).toMatchObject({ command_id: id, action: 'relay.set', args: { ch: 1, on: true }, state: 'completed', evidence: 'aux_contact' });
      expect(mine[0].request_id).toMatch(/^dash-/);
      expect(rig.relay(1)).toEqual({ energised: true, contactClosed: true });
      // An MCP client sees it too.
      expect((await e.call('get_action_status', { command_id: id })).structuredContent).toMatchObject({ state: 'completed', verified: true });

      await page.getByTestId(`op-relay-${RIG}-1-off`).click();
      await page.getByTestId('op-result').and(page.locator('[data-state="completed"]')).and(page.locator(`:not([data-command="${id}"])`)).waitFor({ timeout: 8000 });
      expect(rig.relay(1).contactClosed).toBe(false);
      expect(commandsOf(e, RIG).length).toBe(before + 2);
      await page.close();
    } finally {
      await e.close();
    }
  });

  it('homes an axis and moves it to a typed target from the page: each one journaled command, confirmed by its switch and encoder', async () => {
    const e = await startE2E({ sims: [{ boardFile: STEPPER_BOARD }], device: 'stepper-rig' });
    try {
      const page = await open(e);
      await unlock(page, e.running.tokens!.operator);
      const done = (not: string[]) => page.getByTestId('op-result').and(page.locator('[data-state="completed"]')).and(page.locator(not.map((id) => `:not([data-command="${id}"])`).join('') || '[data-command]'));
      // A move without a target is not sent.
      await page.getByTestId('op-move-stepper-rig-x').click();
      expect(await page.getByTestId('op-result').textContent()).toMatch(/type a target position in mm first/);
      expect(commandsOf(e, 'stepper-rig')).toHaveLength(0);

      await page.getByTestId('op-home-stepper-rig-x').click();
      await done([]).waitFor({ timeout: 15000 });
      const home = (await done([]).getAttribute('data-command'))!;
      expect(await done([]).textContent()).toMatch(/home x \(slide\) on stepper-rig: completed aux_contact/);
      await page.getByTestId('op-target-stepper-rig-x').fill('30');
      await page.getByTestId('op-move-stepper-rig-x').click();
      await done([home]).waitFor({ timeout: 15000 });
      expect(await done([home]).textContent()).toMatch(/move x \(slide\) → 30 mm on stepper-rig: completed encoder/);
      expect(commandsOf(e, 'stepper-rig').map((c) => [c.action, c.state])).toEqual([
        ['stepper.move', 'completed'],
        ['stepper.home', 'completed'],
      ]);
      expect(Math.abs(e.running.rigs.get('stepper-rig')!.axis('x').pos - 30)).toBeLessThan(0.3);
      await page.close();
    } finally {
      await e.close();
    }
  });

  it('clears a latched e-stop from the page only as the operator: the agent token is refused 403 and the latch stays', async () => {
    const e = await startE2E({ sims: [{ boardFile: STEPPER_BOARD }], device: 'stepper-rig' });
    try {
      const rig = e.running.rigs.get('stepper-rig')!;
      rig.estop(true);
      await until(() => e.running.core.devices.state('stepper-rig')?.estop === true, 5000, 'e-stop latched');
      rig.estop(false); // released, still latched until an operator clears it

      // The agent token at the same endpoint: 403 with why, nothing sent.
      const agent = await post(e, { authorization: `Bearer ${e.running.tokens!.agent}`, 'content-type': 'application/json' }, { tool: 'estop_clear', arguments: { device_id: 'stepper-rig' } });
      expect(agent.status).toBe(403);
      expect(agent.body.error).toMatch(/operator controls need the operator token.*never confirms an operator-only action/);
      expect(e.running.core.journal.lastTerminal('stepper-rig', 'estop.clear')).toHaveLength(0);
      expect(commandsOf(e, 'stepper-rig').filter((c) => c.action === 'estop.clear')).toHaveLength(0);
      expect(e.running.core.devices.state('stepper-rig')?.estop).toBe(true);

      const page = await open(e);
      await unlock(page, e.running.tokens!.agent);
      await page.getByTestId('op-msg').filter({ hasText: 'refused' }).waitFor({ timeout: 3000 });
      expect(await page.getByTestId('op-estop-stepper-rig').count()).toBe(0);

      await unlock(page, e.running.tokens!.operator);
      const button = page.getByTestId('op-estop-stepper-rig');
      await button.and(page.locator('.latched')).waitFor({ timeout: 3000 });
      expect(await page.getByTestId('op-stepper-rig').textContent()).toContain('E-STOP LATCHED');
      // Clicking is the operator's confirmation: no terminal prompt, no second question.
      await button.click();
      const result = page.getByTestId('op-result').and(page.locator('[data-state="completed"]'));
      await result.waitFor({ timeout: 8000 });
      expect(await result.textContent()).toMatch(/stepper-rig: completed/);
      await until(() => e.running.core.devices.state('stepper-rig')?.estop === false, 3000, 'latch cleared');
      expect(commandsOf(e, 'stepper-rig').filter((c) => c.action === 'estop.clear').map((c) => c.state)).toEqual(['completed']);
      await page.getByTestId('op-estop-stepper-rig').and(page.locator(':not(.latched)')).waitFor({ timeout: 3000 });
      expect(e.logs.some((l) => l.evt === 'operator_action' && l.tool === 'estop_clear' && l.via === 'operator_scope')).toBe(true);
      expect(e.logs.some((l) => l.evt === 'dashboard_operator_call' && l.tool === 'estop_clear' && l.device_id === 'stepper-rig')).toBe(true);
      await page.close();
    } finally {
      await e.close();
    }
  });

  it('refuses a cross-origin request, a form post, a cookie-only request and a page from another site, and nothing changes', async () => {
    const e = await startE2E();
    const evil = createServer((_q, r) => {
      r.writeHead(200, { 'content-type': 'text/html' });
      r.end(`<!doctype html><form id="f" method="POST" enctype="text/plain" action="${e.running.url}/operator"><input name='{"tool":"relay_set","arguments":{"device_id":"${RIG}","channel":3,"on":true},"x":"' value='"}'></form>
        <script>fetch('${e.running.url}/operator', { method: 'POST', mode: 'no-cors', credentials: 'include', body: JSON.stringify({ tool: 'relay_set', arguments: { device_id: '${RIG}', channel: 3, on: true } }) }).finally(() => document.getElementById('f').submit());</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const rig = e.running.rigs.get(RIG)!;
      const before = commandsOf(e, RIG).length;
      const call = { tool: 'relay_set', arguments: { device_id: RIG, channel: 3, on: true } };
      const op = { authorization: `Bearer ${e.running.tokens!.operator}`, 'content-type': 'application/json' };
      // Even with the operator token, a browser request from another site is refused.
      expect((await post(e, { ...op, origin: 'http://evil.example' }, call)).status).toBe(403);
      expect((await post(e, { ...op, 'sec-fetch-site': 'cross-site' }, call)).body.error).toMatch(/cross-site request may not use the operator controls/);
      // A body a form could send is refused before it is read.
      expect((await post(e, { ...op, 'content-type': 'text/plain' }, call)).status).toBe(415);
      // The dashboard's read cookie never acts.
      const link = (await (await fetch(e.running.url + '/dashboard-link', { method: 'POST', headers: { authorization: `Bearer ${e.running.tokens!.operator}` } })).json()) as { url: string };
      const cookie = (await fetch(link.url, { redirect: 'manual' })).headers.get('set-cookie')!.split(';')[0];
      expect((await post(e, { cookie, 'content-type': 'application/json' }, call)).status).toBe(401);
      // Only the page's tools.
      expect((await post(e, op, { tool: 'remove_device', arguments: { device_id: RIG } })).status).toBe(400);
      expect(e.running.core.devices.board(RIG)).toBeDefined();

      // A real browser, signed in to the dashboard, visits a page of another site that posts to /operator.
      const ctx = await browser().newContext();
      const page = await ctx.newPage();
      const link2 = (await (await fetch(e.running.url + '/dashboard-link', { method: 'POST', headers: { authorization: `Bearer ${e.running.tokens!.agent}` } })).json()) as { url: string };
      await page.goto(link2.url);
      await page.getByTestId('conn').filter({ hasText: 'live' }).waitFor({ timeout: 5000 });
      const attacker = await ctx.newPage();
      const refusals: number[] = [];
      attacker.on('response', (r) => void (r.url().endsWith('/operator') && refusals.push(r.status())));
      await attacker.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      await until(() => refusals.length >= 2, 5000, 'both attempts answered');
      expect(refusals.every((s) => s === 403 || s === 401)).toBe(true);
      await ctx.close();

      expect(commandsOf(e, RIG).length).toBe(before);
      expect(rig.relay(3).contactClosed).toBe(false);
    } finally {
      evil.close();
      await e.close();
    }
  });
});

describe('who may use the operator controls', () => {
  const req = (headers: Record<string, string> = {}, method = 'POST') => ({ method, headers: { 'content-type': 'application/json', ...headers } }) as unknown as IncomingMessage;
  const operator = { token: 'x', clientId: 'operator', scopes: ['agent', 'operator'] };
  it('only the operator scope, from the page itself, with a JSON body; never under --no-auth, never the agent or xiaozhi', () => {
    expect(operatorRefusal(req(), operator, true)).toBeNull();
    expect(operatorRefusal(req({ 'sec-fetch-site': 'same-origin' }), operator, true)).toBeNull();
    expect(operatorRefusal(req({}, 'GET'), operator, true)).toBeNull();
    expect(operatorRefusal(req(), undefined, false)).toMatchObject({ status: 403, body: { error: expect.stringMatching(/--no-auth: there is no operator token/) } });
    for (const who of [undefined, { token: 'x', clientId: 'agent', scopes: ['agent'] }, { token: '', clientId: 'xiaozhi', scopes: ['agent'] }, { token: '', clientId: 'dashboard', scopes: ['agent'] }])
      expect(operatorRefusal(req(), who, true)?.status).toBe(403);
    for (const site of ['cross-site', 'same-site']) expect(operatorRefusal(req({ 'sec-fetch-site': site }), operator, true)?.status).toBe(403);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']) expect(operatorRefusal(req({ 'content-type': type }), operator, true)?.status).toBe(415);
  });
});
