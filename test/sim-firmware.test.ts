// The real built firmware (firmware/dist/proofrig.js), unchanged, on the simulated rig.
import { existsSync, readFileSync } from 'node:fs';
import * as net from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { DEVICE_PATH } from '../shared-protocol/src/constants.js';
import { SimRig } from '@proofrig/sim';

const FIRMWARE = fileURLToPath(new URL('../firmware/dist/proofrig.js', import.meta.url));
const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;

async function waitFor(pred: () => boolean, what: string, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.skipIf(!existsSync(FIRMWARE))('the built firmware on the simulated rig', () => {
  it('boots without an uncaught error, leaves every relay released and dials the configured host', async () => {
    let request = '';
    const srv = net.createServer((s) => {
      s.on('data', (d) => (request += d.toString('latin1')));
      s.on('error', () => {});
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as net.AddressInfo).port;
    const lines: string[] = [];
    const rig = new SimRig({
      firmwarePath: FIRMWARE,
      seed: 1,
      console: (l) => lines.push(l),
      config: { dev: 'rig1', secret: '00112233445566778899aabbccddeeff', host: `ws://127.0.0.1:${port}${DEVICE_PATH}`, wifi: { ssid: 'lab', pass: 'pw' }, board },
    });
    try {
      rig.boot();
      await waitFor(() => request.indexOf('\r\n\r\n') >= 0, 'the WebSocket upgrade request');
      expect(request).toMatch(new RegExp(`^GET ${DEVICE_PATH} HTTP/1\\.1\\r\\n`));
      expect(request).toMatch(/\r\nUpgrade: websocket\r\n/i);
      for (const r of board.relays) {
        expect(rig.pinLevel(r.pin)).toBe(r.active_low ? 1 : 0);
        expect(rig.relay(r.ch).energised).toBe(false);
      }
      expect(lines.filter((l) => /Uncaught/.test(l))).toEqual([]);
    } finally {
      rig.shutdown();
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });
});
