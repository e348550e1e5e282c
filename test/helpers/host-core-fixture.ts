// The host core for the host-core specs (host-core*.test.ts): a fresh core per test on a virtual clock
// and a journal of its own, rig1 provisioned (relay board), the log lines it writes, and a scripted
// device brought online. useHostCore() registers the per-test setup in the calling spec file.
import { afterEach, beforeEach } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Writable } from 'node:stream';
import { HostCore } from '../../host/src/core/host.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { FakeDevice, flush } from './fake-device.js';
import type { BoardDef } from '@proofrig/protocol';

export const board: BoardDef = JSON.parse(readFileSync(new URL('../../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
export const SECRET = 'a'.repeat(64);

export let clock: VirtualClock;
export let core: HostCore;
export let logLines: Record<string, unknown>[];
export let dbPath: string;

export function makeCore() {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) logLines.push(JSON.parse(l));
      cb();
    },
  });
  return new HostCore({ db: dbPath, clock, logger: pino({ level: 'info' }, sink), heartbeatMs: 1000, offlineGraceMs: 5000 });
}

export async function online(boot = 'boot0001') {
  const d = new FakeDevice(core, 'rig1', SECRET, boot);
  await d.connect();
  d.answerStateQuery(); // the host's initial state query
  await flush();
  return d;
}

/** Switch channel 1 on an online device, optionally let it acknowledge, and let the deadline pass. */
export async function pastDeadline(ack = false) {
  const d = await online();
  const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
  await flush();
  const rid = d.of('cmd')[0].rid as string;
  if (ack) d.send({ t: 'ack', rid, st: 'accepted' });
  clock.advance(s.deadline_ms!);
  await flush();
  /** The host's latest state query about this command. */
  const query = () => d.of('q').filter((f) => f.rid === rid).at(-1)!;
  return { d, s, rid, query };
}

/** For a test that replaces the HostCore of the setup (a restart, a journal of another kind). */
export function setCore(x: HostCore): void {
  core = x;
}

/** Registers the per-test setup (beforeEach) and teardown (afterEach) in the calling spec file. */
export function useHostCore(): void {
  beforeEach(() => {
    clock = new VirtualClock(1_700_000_000_000);
    logLines = [];
    dbPath = join(mkdtempSync(join(tmpdir(), 'proofrig-core-')), 'journal.db');
    core = makeCore();
    core.provision('rig1', SECRET, board);
  });
  afterEach(() => core.close());
}
