// Every boot of every device is told apart by the host, although Espruino's E.hwRand() repeats the
// same sequence after every boot (the vm reproduces that sequence exactly): the boot id and the
// nonces come from a boot counter kept in Storage, the device id and the secret.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { DEVICE_PATH } from '../shared-protocol/src/constants.js';
import { SimRig } from '@proofrig/sim';
import { ESPRUINO, ESPRUINO_NOTICE, runEspruino } from './helpers/espruino-run';

const FIRMWARE = fileURLToPath(new URL('../firmware/dist/proofrig.js', import.meta.url));
const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;

async function waitFor(pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

type Hello = { t: 'hello'; dev: string; boot: string; cn: string };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A loopback WebSocket endpoint that records every hello and answers nothing (the device never goes up). */
async function helloCatcher(): Promise<{ url: string; hellos: Hello[] }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: DEVICE_PATH });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const hellos: Hello[] = [];
  wss.on('connection', (ws) => ws.on('message', (d) => {
    const f = JSON.parse(String(d)) as Hello;
    if (f.t === 'hello') hellos.push(f);
  }));
  cleanups.push(() => new Promise<void>((r) => {
    for (const c of wss.clients) c.terminate();
    wss.close(() => r());
  }));
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}${DEVICE_PATH}`, hellos };
}

function rigFor(url: string, dev = 'rig1', secret = '00112233445566778899aabbccddeeff'): SimRig {
  const rig = new SimRig({ firmwarePath: FIRMWARE, seed: 1, console: () => {}, config: { dev, secret, host: url, board } });
  cleanups.push(() => rig.shutdown());
  return rig;
}

describe.skipIf(!existsSync(FIRMWARE))('boot identity with a deterministic E.hwRand', () => {
  it('a power cycle gives a new boot id and a new client nonce, though E.hwRand repeats its sequence', async () => {
    const { url, hellos } = await helloCatcher();
    const rig = rigFor(url);
    rig.boot();
    await waitFor(() => hellos.length === 1, 'the first hello');
    rig.powerLoss(5);
    await waitFor(() => hellos.length === 2, 'the hello after the power cycle');
    rig.powerLoss(5);
    await waitFor(() => hellos.length === 3, 'the hello after the second power cycle');
    const boots = hellos.map((h) => h.boot);
    const nonces = hellos.map((h) => h.cn);
    expect(new Set(boots).size).toBe(3);
    expect(new Set(nonces).size).toBe(3);
  });

  it('two devices with the same E.hwRand stream get different boot ids and nonces', async () => {
    const { url, hellos } = await helloCatcher();
    rigFor(url, 'rig-a').boot();
    rigFor(url, 'rig-b').boot();
    await waitFor(() => hellos.length === 2, 'both hellos');
    expect(hellos[0].boot).not.toBe(hellos[1].boot);
    expect(hellos[0].cn).not.toBe(hellos[1].cn);
  });

  it('the boot counter is in Storage before the link starts and survives power loss', async () => {
    const { url, hellos } = await helloCatcher();
    const rig = rigFor(url);
    rig.boot();
    await waitFor(() => hellos.length === 1, 'the first hello');
    const first = rig.storage.readJSON('proofrig.boot') as number;
    expect(first).toBe(1);
    rig.powerLoss(5);
    await waitFor(() => hellos.length === 2, 'the second hello');
    expect(rig.storage.readJSON('proofrig.boot')).toBe(2);
    expect(hellos[1].boot.startsWith('2-')).toBe(true);
  });
});

describe.skipIf(!ESPRUINO || !existsSync(FIRMWARE))('boot identity on the real Espruino interpreter (PROOFRIG_ESPRUINO)', () => {
  it('two boots of the built firmware in the same folder (Storage kept, E.hwRand repeating) log different boot ids, counted 1 and 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-boots-'));
    const config = { dev: 'rig1', secret: '00112233445566778899aabbccddeeff', host: 'ws://127.0.0.1:9/device', board };
    // Pins are not this test's business: no-op shims; the config goes to Storage as `proofrig upload` puts it.
    const shim = ['digitalWrite', 'pinMode', 'analogWrite', 'digitalPulse'].map((f) => `global.${f}=function(){};`).join('') +
      'global.digitalRead=function(){return 0};global.setWatch=function(){return 1};global.clearWatch=function(){};' +
      `require('Storage').writeJSON('proofrig.json', ${JSON.stringify(config)});\n`;
    writeFileSync(join(dir, 'boot.js'), shim + readFileSync(FIRMWARE, 'utf8'));
    const bootOf = (out: string) => /proofrig: fw \S+, boot (\S+), device rig1/.exec(out)?.[1];
    const first = bootOf(await runEspruino(join(dir, 'boot.js'), dir, /boot \S+, device rig1/));
    const second = bootOf(await runEspruino(join(dir, 'boot.js'), dir, /boot \S+, device rig1/));
    expect(first).toMatch(/^1-[0-9a-f]{12}$/);
    expect(second).toMatch(/^2-[0-9a-f]{12}$/);
  }, 30_000);
});
if (!ESPRUINO) console.log(ESPRUINO_NOTICE);
