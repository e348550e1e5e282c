// A deadline times the frame it belongs to, and every command ends. The deadline starts when the
// `cmd` is written to the device's connection, not when it is journaled, so a slow disk (an fsync
// held longer than the deadline) or a slow device can never turn an executed command into "timeout,
// the device has no record"; and an absolute bound from submission ends a command whatever its link
// does (a peer that cuts after every cmd, a dropper of cmd frames). Scripted devices that keep a
// request_id ring as the firmware does.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef } from '@proofrig/protocol';
import { HostCore } from '../host/src/core/host.js';
import { Journal } from '../host/src/core/journal/journal.js';
import { type CommandStatus } from '../host/src/core/command-view.js';
import { absoluteBoundMs, MAX_SENDS } from '../host/src/core/deadline-watch.js';
import { FakeDevice, flush } from './helpers/fake-device.js';

// Deadlines below are worked out with device_processing_max_ms at 80 ms; the board files' own figure is
// measured and held to the firmware's instruction budget (test/firmware-cost.test.ts, docs/performance.md).
const board: BoardDef = { ...(JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef), device_processing_max_ms: 80 };
const SECRET = 'd'.repeat(64);
const newDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-deadline-')), 'journal.db');

/** The result the relay rig gives for channel ch (aux contact on 1-2, read-back on 3, none on 4). */
function result(d: FakeDevice, rid: string, ch: number, on: boolean) {
  const ev = ch <= 2 ? 'aux_contact' : ch === 3 ? 'pin_readback' : 'none';
  return { t: 'res', rid, st: ch === 4 ? 'unverified' : 'completed', ev, ver: ch !== 4, s: d.state(on), ms: 2 };
}

/**
 * Drive `d` as the firmware would: a cmd is acted on at once (ack, then its result, kept in a ring),
 * a question about a request is answered from the ring ("done" re-sends the stored result). `delay`
 * runs each frame's handling later (a slow device: frames are handled one after another, in order).
 */
function firmwareLike(d: FakeDevice, delay?: (fn: () => void) => void): Map<string, object> {
  const ring = new Map<string, object>();
  let queue = Promise.resolve();
  const handle = (f: Record<string, unknown>) => {
    if (f.t === 'cmd') {
      const rid = f.rid as string;
      const p = f.p as { ch: number; on: boolean };
      if (!ring.has(rid)) ring.set(rid, result(d, rid, p.ch, p.on));
      d.send({ t: 'ack', rid, st: 'accepted' });
      d.send(ring.get(rid)!);
    } else if (f.t === 'q' && f.rid === undefined) {
      d.send({ t: 'state', q: f.q, s: { ...d.state(), up: 600_000 } });
    } else if (f.t === 'q' && typeof f.rid === 'string') {
      const done = ring.get(f.rid);
      d.send({ t: 'state', q: f.q, s: { ...d.state(), up: 600_000 }, rid: f.rid, rst: done ? 'done' : 'unknown' });
      if (done) d.send(done);
    }
  };
  const receive = d.link.onmessage!;
  d.link.onmessage = (t) => {
    const n = d.received.length;
    receive(t);
    for (const f of d.received.slice(n)) {
      if (!delay) handle(f);
      else queue = queue.then(() => new Promise<void>((r) => delay(() => (handle(f), r()))));
    }
  };
  return ring;
}

/** The position of the first frame of type t about request rid in what the device received (-1: none). */
const firstOf = (d: FakeDevice, t: string, rid: string) => d.received.findIndex((f) => f.t === t && f.rid === rid);

let core: HostCore | undefined;
afterEach(() => {
  core?.close();
  core = undefined;
});

describe('a deadline starts when the cmd is written, so a slow disk never turns an executed command into "no record"', () => {
  /** A journal whose every fsync is held `ms` longer (an SD card, a loaded disk). */
  class SlowDiskJournal extends Journal {
    constructor(path: string, private readonly holdMs: number) {
      super(path, (fn) => setImmediate(fn));
    }
    protected override syncAsync(fd: number, done: (err: Error | null) => void): void {
      setTimeout(() => super.syncAsync(fd, done), this.holdMs);
    }
  }

  it.each([400, 800])(
    'with every fsync held %i ms (over twice the 178 ms deadline), each relay command ends with its real outcome and evidence, and no question about it reaches the device before its cmd',
    async (holdMs) => {
      const path = newDb();
      core = new HostCore({ db: path, journal: new SlowDiskJournal(path, holdMs), heartbeatMs: 60_000 });
      core.provision('rig1', SECRET, board);
      const d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
      firmwareLike(d);
      await d.connect();
      await flush();
      const subs = await Promise.all([1, 2, 3, 4].map((ch) => core!.submit({ device_id: 'rig1', action: 'relay.set', args: { ch, on: true }, request_id: 'r' + ch })));
      // The disk alone takes longer than the whole deadline.
      for (const s of subs) expect(s.deadline_ms!).toBeLessThan(holdMs);
      const ends = (await Promise.all(subs.map((s) => core!.waitTerminal(s.command_id, 20_000)))) as CommandStatus[];
      expect(ends.map((s) => [s.state, s.evidence, s.verified, s.error_code])).toEqual([
        ['completed', 'aux_contact', true, null],
        ['completed', 'aux_contact', true, null],
        ['completed', 'pin_readback', true, null],
        ['unverified', 'none', false, null],
      ]);
      for (const ch of [1, 2, 3, 4]) {
        const q = firstOf(d, 'q', 'r' + ch);
        if (q >= 0) expect(q).toBeGreaterThan(firstOf(d, 'cmd', 'r' + ch));
      }
    },
    30_000,
  );
});

describe('a device slower than its budget still ends every command with its real outcome', () => {
  it('each frame handled 1 s after it arrives (the cmd, then the question after the deadline): completed with its evidence, not timeout', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    core = new HostCore({ db: ':memory:', clock, heartbeatMs: 60_000, offlineGraceMs: 10_000 });
    core.provision('rig1', SECRET, board);
    const d = await new FakeDevice(core, 'rig1', SECRET, 'boot0001').online();
    firmwareLike(d, (fn) => clock.setTimeout(fn, 1000));
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'slow' });
    for (let t = 0; t < 3000 && !core.status(s.command_id)!.terminal; t += 10) {
      clock.advance(10);
      await flush(1);
    }
    expect(core.status(s.command_id)).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
  });
});

describe('every command ends within its absolute bound, whatever the link does', () => {
  const GRACE = 5000;
  const DEADLINE = 178;
  const QUERY = 500;
  const BOUND = absoluteBoundMs(DEADLINE, QUERY, GRACE);

  /** Answer a state query as a device that never received the request it asks about. */
  const answerUnknown = (d: FakeDevice, f: Record<string, unknown>) =>
    d.send(typeof f.rid === 'string' ? { t: 'state', q: f.q, s: { ...d.state(), up: 600_000 }, rid: f.rid, rst: 'unknown' } : { t: 'state', q: f.q, s: { ...d.state(), up: 600_000 } });

  /** A device (same boot each time) that drops its connection as soon as a cmd arrives, unread, and reconnects. */
  async function cutter(clock: VirtualClock, onCut: () => void): Promise<() => FakeDevice> {
    let cur: FakeDevice;
    const connect = async () => {
      const d = new FakeDevice(core!, 'rig1', SECRET, 'boot0001');
      cur = d;
      const receive = d.link.onmessage!;
      d.link.onmessage = (t) => {
        const n = d.received.length;
        receive(t);
        for (const f of d.received.slice(n)) {
          if (f.t === 'cmd') {
            onCut();
            d.link.close();
            clock.setTimeout(() => void connect().catch(() => {}), 50);
          } else if (f.t === 'q') answerUnknown(d, f);
        }
      };
      await d.connect();
    };
    await connect();
    await flush();
    return () => cur;
  }

  it(`a peer that cuts the link after every cmd: at most ${MAX_SENDS} sends, then timeout by the bound, saying the cmd never reached the device`, async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    core = new HostCore({ db: ':memory:', clock, heartbeatMs: 60_000, offlineGraceMs: GRACE, queryWaitMs: QUERY });
    core.provision('rig1', SECRET, board);
    let cuts = 0;
    await cutter(clock, () => cuts++);
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'cut' });
    for (let t = 0; t <= BOUND + 1000 && !core.status(s.command_id)!.terminal; t += 10) {
      clock.advance(10);
      await flush(1);
    }
    const end = core.status(s.command_id)!;
    expect(end.state).toBe('timeout');
    expect(end.elapsed_ms).toBeLessThanOrEqual(BOUND);
    expect(cuts).toBeLessThanOrEqual(MAX_SENDS);
    expect(end.detail).toMatch(/has no record of request cut|no terminal evidence within/);
    expect(end.detail).not.toMatch(/acted/);
  });

  it('a dropper of cmd frames (each dropped cmd puts the sealed counters out of step, so the device reconnects at the next frame): timeout by the bound, not re-sent for ever', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    core = new HostCore({ db: ':memory:', clock, heartbeatMs: 1000, offlineGraceMs: GRACE, queryWaitMs: QUERY });
    core.provision('rig1', SECRET, board);
    let cmds = 0;
    const connect = async (): Promise<void> => {
      const d = new FakeDevice(core!, 'rig1', SECRET, 'boot0001');
      let gap = false;
      const receive = d.link.onmessage!;
      d.link.onmessage = (t) => {
        const n = d.received.length;
        receive(t);
        for (const f of d.received.slice(n)) {
          if (f.t === 'cmd') {
            // Dropped on the way: the device never reads it, and the next frame's counter is one too far.
            cmds++;
            gap = true;
          } else if (gap) {
            d.link.close();
            clock.setTimeout(() => void connect().catch(() => {}), 50);
            return;
          } else if (f.t === 'q') answerUnknown(d, f);
        }
      };
      await d.connect();
    };
    await connect();
    await flush();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true }, request_id: 'drop' });
    for (let t = 0; t <= BOUND + 1000 && !core.status(s.command_id)!.terminal; t += 10) {
      clock.advance(10);
      await flush(1);
    }
    const end = core.status(s.command_id)!;
    expect(end.state).toBe('timeout');
    expect(end.elapsed_ms).toBeLessThanOrEqual(BOUND);
    expect(cmds).toBeLessThanOrEqual(MAX_SENDS);
  });

  it('a device that says "still running" on every reconnect, with a host restart in between: timeout within the bound (counted anew from the restart), saying it was still running', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const db = newDb();
    const opts = { db, clock, heartbeatMs: 60_000, offlineGraceMs: GRACE, queryWaitMs: QUERY };
    core = new HostCore(opts);
    core.provision('rig1', SECRET, board);
    // It answers every question "running", drops its connection 20 ms later and is back 300 ms after that:
    // offline whenever a deadline passes, online again to say "running" and win a fresh deadline.
    const flapper = async (): Promise<void> => {
      const d = new FakeDevice(core!, 'rig1', SECRET, 'boot0001');
      const receive = d.link.onmessage!;
      d.link.onmessage = (t) => {
        const n = d.received.length;
        receive(t);
        for (const f of d.received.slice(n)) {
          if (f.t !== 'q') continue;
          d.send(typeof f.rid === 'string' ? { t: 'state', q: f.q, s: { ...d.state(), up: 600_000 }, rid: f.rid, rst: 'running' } : { t: 'state', q: f.q, s: { ...d.state(), up: 600_000 } });
          if (typeof f.rid === 'string')
            clock.setTimeout(() => {
              d.link.close();
              clock.setTimeout(() => void flapper().catch(() => {}), 300);
            }, 20);
        }
      };
      await d.connect();
    };
    await flapper();
    await flush();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'flap' });
    for (let t = 0; t < 1000; t += 10) {
      clock.advance(10);
      await flush(1);
    }
    core.close();
    core = new HostCore(opts);
    await flapper();
    for (let t = 1000; t <= 2 * BOUND && !core.status(s.command_id)!.terminal; t += 10) {
      clock.advance(10);
      await flush(1);
    }
    const end = core.status(s.command_id)!;
    expect(end).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    // It had its one fresh window: the next "running" after a reconnect ends it, saying what the device said.
    expect(end.detail).toBe('deadline passed twice and device rig1, asked again after it reconnected, reports the command still running; the outcome is unknown');
    // The bound counts anew from the restart (1 s after submission). The restarted host has measured no
    // round trip yet when it recovers the command: it assumes 200 ms, so the relay's deadline it bounds
    // by is 3 × 200 + 80 + 1.5 × 25 = 718 ms, and its state queries wait 3 × 200 ms.
    expect(end.elapsed_ms).toBeLessThanOrEqual(1000 + absoluteBoundMs(718, 600, GRACE));
  });

  it('a device that says "done" on every quick reconnect but whose result never arrives: asked one last time at the bound, then timeout saying so', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    core = new HostCore({ db: ':memory:', clock, heartbeatMs: 60_000, offlineGraceMs: GRACE, queryWaitMs: QUERY });
    core.provision('rig1', SECRET, board);
    // Its answers re-arm a short wait for the result each time, and it is gone again before that wait ends.
    const flapper = async (): Promise<void> => {
      const d = new FakeDevice(core!, 'rig1', SECRET, 'boot0001');
      const receive = d.link.onmessage!;
      d.link.onmessage = (t) => {
        const n = d.received.length;
        receive(t);
        for (const f of d.received.slice(n)) {
          if (f.t !== 'q') continue;
          d.send(typeof f.rid === 'string' ? { t: 'state', q: f.q, s: { ...d.state(), up: 600_000 }, rid: f.rid, rst: 'done' } : { t: 'state', q: f.q, s: { ...d.state(), up: 600_000 } });
          if (typeof f.rid === 'string')
            clock.setTimeout(() => {
              d.link.close();
              clock.setTimeout(() => void flapper().catch(() => {}), 10);
            }, 10);
        }
      };
      await d.connect();
    };
    await flapper();
    await flush();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'liar' });
    for (let t = 0; t <= 2 * BOUND && !core.status(s.command_id)!.terminal; t += 10) {
      clock.advance(10);
      await flush(1);
    }
    const end = core.status(s.command_id)!;
    expect(end).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    expect(end.detail).toMatch(/^no terminal evidence within \d+ ms of its first send \(the absolute bound: .*\); (device rig1 is offline and could not be asked|device rig1 says the command is done but its result never arrived)/);
    expect(end.elapsed_ms).toBeLessThanOrEqual(BOUND + 2 * QUERY);
  });
});
