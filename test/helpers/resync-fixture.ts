// The host core for the re-sync and restart specs (host-commands-resync, host-commands-restart): a fresh
// core per test on a virtual clock, rig1 (relay) and slide (stepper) provisioned, the log lines, a
// journal whose next commit can fail, and a scripted device that reconnects. useResyncCore() registers
// the per-test setup in the calling spec file.
import { afterEach, beforeEach, expect } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { HostCore } from '../../host/src/core/host.js';
import { Journal } from '../../host/src/core/journal/journal.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef, DeviceState } from '@proofrig/protocol';
import { FakeDevice, flush } from './fake-device.js';

// Deadlines below are worked out with device_processing_max_ms at 80 ms; the board files' own figure is
// measured and held to the firmware's instruction budget (test/firmware-cost.test.ts, docs/performance.md).
export const relayBoard: BoardDef = { ...(JSON.parse(readFileSync(new URL('../../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef), device_processing_max_ms: 80 };
export const stepperBoard: BoardDef = { ...(JSON.parse(readFileSync(new URL('../../boards/stepper-rig.json', import.meta.url), 'utf8')) as BoardDef), device_processing_max_ms: 80 };
export const SECRET = 'a'.repeat(64);
export const T0 = 1_700_000_000_000;
/** relay.set on channel 1 with the minimum round trip (20 ms): ceil(3·20 + 80 + 1.5·25). */
export const DEADLINE = 178;

/** A journal whose next batch commit can be made to fail (a full disk, an I/O error). */
export class FailingJournal extends Journal {
  failNext = false;
  protected override commit(): void {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk I/O error (simulated)');
    }
    super.commit();
  }
}

export let clock: VirtualClock;
export let db: string;
export let core: HostCore;
export let logLines: Record<string, unknown>[];

export function makeCore(journal?: Journal) {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) logLines.push(JSON.parse(l));
      cb();
    },
  });
  return new HostCore({ db, journal, clock, logger: pino({ level: 'info' }, sink), heartbeatMs: 1000, offlineGraceMs: 5000 });
}

/** Connect a device and answer the host's first state query after `rttMs` (the round trip it measures). */
export async function online(boot = 'boot0001', dev = 'rig1', board = 'relay-rig-4ch', rttMs = 0) {
  const d = new FakeDevice(core, dev, SECRET, boot, board);
  await d.connect();
  clock.advance(rttMs);
  d.answerStateQuery();
  await flush();
  return d;
}

/** Up long enough not to have restarted since anything in these tests was sent. */
export const alive = (d: FakeDevice, up = 60_000): DeviceState => ({ ...d.state(), up });

/** relay.set ch 1 as request r1 on an online rig1 (acknowledged if asked), then the link drops. */
export async function sentThenOffline(ack = false) {
  const d = await online();
  const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
  await flush();
  if (ack) d.send({ t: 'ack', rid: 'r1', st: 'accepted' });
  await flush();
  d.link.close();
  await flush();
  return s;
}

/** The device back with the same boot id: `ask()` is the host's latest question about r1, `answer` replies to it. */
export async function reconnect(boot = 'boot0001') {
  const d = await online(boot);
  const asks = () => d.of('q').filter((f) => f.rid === 'r1');
  const answer = async (rst: 'running' | 'done' | 'unknown', s: DeviceState = alive(d)) => {
    d.send({ t: 'state', q: asks().at(-1)!.q, s, rid: 'r1', rst });
    await flush();
  };
  return { d, asks, answer };
}

/** With `before` questions about r1 so far, the host asks nothing more for `ms` - 1 ms and once more at `ms`. */
export async function askedAgainAfter(asks: () => unknown[], ms: number, before: number): Promise<void> {
  clock.advance(ms - 1);
  await flush();
  expect(asks()).toHaveLength(before);
  clock.advance(1);
  await flush();
  expect(asks()).toHaveLength(before + 1);
}

export const notes = (id: string) => core.commands.history(id).map((e) => e.note);
export const states = (id: string) => core.commands.history(id).map((e) => e.state);

/** For a test that replaces the HostCore of the setup (a restart, a journal of another kind). */
export function setCore(x: HostCore): void {
  core = x;
}

/** Registers the per-test setup (beforeEach) and teardown (afterEach) in the calling spec file. */
export function useResyncCore(): void {
  beforeEach(() => {
    clock = new VirtualClock(T0);
    logLines = [];
    db = join(mkdtempSync(join(tmpdir(), 'proofrig-resync-')), 'journal.db');
    core = makeCore();
    core.provision('rig1', SECRET, relayBoard);
    core.provision('slide', SECRET, stepperBoard);
  });
  afterEach(() => core.close());
}
