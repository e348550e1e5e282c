// The attack of issue 7 item 3, against the real built firmware on a simulated rig: a host that
// does not know the device secret stands in for the real one (ARP/DNS spoofing, or the configured
// address). Before the fix the device went up on any `ok` and energised relay 1.
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { DEVICE_PATH } from '../shared-protocol/src/constants.js';
import { hostProofMessage } from '@proofrig/protocol';
import { SimRig } from '@proofrig/sim';

const FIRMWARE = fileURLToPath(new URL('../firmware/dist/proofrig.js', import.meta.url));
const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const SECRET = '00112233445566778899aabbccddeeff';

async function waitFor(pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A host that answers the handshake without knowing the secret: it challenges, ignores the
 * device's proof, welcomes it with a proof made from `guess`, then orders relay 1 on.
 */
async function rogueHost(guess: string | undefined): Promise<{ url: string; got: Record<string, unknown>[]; closed: () => boolean }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: DEVICE_PATH });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const got: Record<string, unknown>[] = [];
  let closed = false;
  wss.on('connection', (ws: WebSocket) => {
    let hello: Record<string, any> = {};
    const sn = 'f'.repeat(32);
    ws.on('close', () => (closed = true));
    ws.on('message', (d) => {
      const f = JSON.parse(String(d)) as Record<string, any>;
      got.push(f);
      if (f.t === 'hello') {
        hello = f;
        ws.send(JSON.stringify({ t: 'chal', v: hello.v, sn })); // whatever version the device speaks
      } else if (f.t === 'auth') {
        const mac = guess === undefined ? '0'.repeat(64) : createHmac('sha256', guess).update(hostProofMessage(hello.dev, hello.boot, hello.cn, sn, 1000)).digest('hex');
        ws.send(JSON.stringify({ t: 'ok', hb: 1000, mac }));
        ws.send(JSON.stringify({ t: 'cmd', rid: 'evil-1', a: 'relay.set', p: { ch: 1, on: true } }));
      }
    });
  });
  cleanups.push(() => new Promise<void>((r) => {
    for (const c of wss.clients) c.terminate();
    wss.close(() => r());
  }));
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}${DEVICE_PATH}`, got, closed: () => closed };
}

describe.skipIf(!existsSync(FIRMWARE))('a host without the device secret cannot make the real firmware go up or act', () => {
  for (const [name, guess] of [['a made-up proof', undefined], ['a proof with the wrong secret', 'not-the-secret']] as const) {
    it(`${name}: the device refuses the welcome, closes, and relay 1 is never energised`, async () => {
      const rogue = await rogueHost(guess);
      const lines: string[] = [];
      const rig = new SimRig({ firmwarePath: FIRMWARE, seed: 1, console: (l) => lines.push(l), config: { dev: 'rig1', secret: SECRET, host: rogue.url, board } });
      cleanups.push(() => rig.shutdown());
      rig.boot();
      await waitFor(() => rogue.closed(), 'the device to close the connection');
      await new Promise((r) => setTimeout(r, 100));
      expect(rogue.got.map((f) => f.t)).toEqual(['hello', 'auth', 'err']);
      expect(rogue.got[2]).toMatchObject({ code: 'AUTH_FAILED' });
      expect(rig.relay(1).energised).toBe(false);
      expect(lines.join('\n')).toMatch(/host could not prove it knows the secret/);
      expect(lines.join('\n')).not.toMatch(/proofrig link: up/);
    });
  }
});
