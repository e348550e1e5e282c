// Every warning a peer can trigger at will goes through the rate limiter: a flood of each gives a
// few lines per address (or device) and window, then a count, never a line per frame (issue 26, 5).
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { BoardDef } from '@proofrig/protocol';
import { HostCore } from '../host/src/core/host.js';
import { FakeDevice, flush } from './helpers/fake-device.js';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const SECRET = 'f'.repeat(64);
const FLOOD = 300;

let core: HostCore;
let lines: Record<string, unknown>[];
afterEach(() => core.close());

async function online(): Promise<FakeDevice> {
  lines = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  core = new HostCore({ db: ':memory:', logger: pino({ level: 'info' }, sink), heartbeatMs: 60_000 });
  core.provision('rig1', SECRET, board);
  return new FakeDevice(core, 'rig1', SECRET, 'boot0001').online();
}

const count = (evt: string) => lines.filter((l) => l.evt === evt).length;

describe('a flood of anything a device can provoke logs a few lines, not one per frame', () => {
  it(`${FLOOD} results for requests the host never sent: at most 5 unknown_result lines`, async () => {
    const d = await online();
    for (let i = 0; i < FLOOD; i++) d.send({ t: 'res', rid: 'never-' + i, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 1 });
    await flush();
    expect(count('unknown_result')).toBe(5);
  });

  it(`${FLOOD} heartbeats each with a new count of refused frames: at most 5 frames_refused_by_device lines`, async () => {
    const d = await online();
    for (let i = 1; i <= FLOOD; i++) d.send({ t: 'hb', up: 1000 + i, bad: i });
    await flush();
    expect(count('frames_refused_by_device')).toBe(5);
  });

  it(`${FLOOD} error reports from the device: at most 5 device_error lines`, async () => {
    const d = await online();
    for (let i = 0; i < FLOOD; i++) d.send({ t: 'err', code: 'MALFORMED_FRAME', msg: 'flood ' + i });
    await flush();
    expect(count('device_error')).toBe(5);
  });

  it(`${FLOOD} frames with a forged seal over as many connections: at most 5 frame_refused lines`, async () => {
    await online();
    for (let i = 0; i < FLOOD / 10; i++) {
      const d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
      await d.connect();
      // The device's own key with a bad MAC: refused without an answer.
      for (let k = 0; k < 10; k++) d.sendRaw(d.sealed({ t: 'hb', up: 1 }, d.txN + 1).replace(/"m":"[^"]+"/, '"m":"AAAAAAAAAAAAAAAAAAAAAA=="'));
      await flush(1);
    }
    await flush();
    expect(count('frame_refused')).toBeLessThanOrEqual(5);
    expect(count('frame_refused')).toBeGreaterThan(0);
  });
});
