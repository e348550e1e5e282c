// The host's answer to an `ack` (or `prog`): the device's Nagle (lwIP; Espruino sets no TCP_NODELAY)
// holds its next small frame until the host acknowledges the last one, which a silent host does only
// after its ~40 ms delayed ACK. The host answers with a small `hb {ack}` so the TCP ACK leaves at once,
// but only where something can be held: frames of one socket read are handled first, and an ack whose
// result came in the same read is not answered (the `rack` of that result carries the ACK).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { unseal, type BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { HostCore } from '../host/src/core/host.js';
import { FakeDevice, flush, ridden } from './helpers/fake-device.js';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const SECRET = 'b'.repeat(64);
const newDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-answer-')), 'journal.db');

let core: HostCore;
afterEach(() => core.close());

async function online(): Promise<FakeDevice> {
  return new FakeDevice(core, 'rig1', SECRET, 'boot0001').online();
}

/** Submit relay commands and wait until their cmd frames reached the device. */
async function submitted(d: FakeDevice, rids: string[]): Promise<void> {
  await Promise.all(rids.map((rid, i) => core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: i + 1, on: true }, request_id: rid })));
  await flush();
  expect(d.of('cmd').map((f) => f.rid)).toEqual(rids);
}

/** Frames handled in one turn, as when they arrive in one socket read (sealed with the next counters). */
function oneRead(d: FakeDevice, ...frames: object[]): void {
  const texts = frames.map((f, i) => d.sealed(f, d.txN + 1 + i));
  d.txN += frames.length;
  d.inject(...texts);
}

const ack = (rid: string) => ({ t: 'ack', rid, st: 'accepted' });
const res = (d: FakeDevice, rid: string) => ({ t: 'res', rid, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 2 });
const answers = (d: FakeDevice) => d.of('hb').filter((f) => f.ack !== undefined);

describe('on the real clock the host answers an ack only when the device may be holding a frame behind it', () => {
  beforeEach(() => {
    core = new HostCore({ db: newDb(), logger: pino({ level: 'silent' }), heartbeatMs: 60_000 });
    core.provision('rig1', SECRET, board);
  });

  it('an ack that arrives alone is answered with an hb naming it, before its result comes', async () => {
    const d = await online();
    await submitted(d, ['r1']);
    d.send(ack('r1'));
    await flush();
    expect(answers(d)).toEqual([{ t: 'hb', ack: 'r1' }]);
    d.send(res(d, 'r1'));
    await ridden();
    expect(core.journal.byRequest('rig1', 'r1')!.state).toBe('completed');
    expect(answers(d)).toHaveLength(1); // a result is answered by its rack, not by an hb
    expect(d.of('rack').map((f) => f.rid)).toEqual(['r1']);
  });

  it('an ack and its result in one read get no hb: the rack that follows carries the TCP ACK', async () => {
    const d = await online();
    await submitted(d, ['r1']);
    oneRead(d, ack('r1'), res(d, 'r1'));
    await ridden();
    expect(answers(d)).toEqual([]);
    expect(d.of('rack').map((f) => f.rid)).toEqual(['r1']);
    expect(core.journal.byRequest('rig1', 'r1')).toMatchObject({ state: 'completed', accepted: true });
  });

  it('several acks in one read without their results get one hb, naming the newest', async () => {
    const d = await online();
    await submitted(d, ['r1', 'r2', 'r3']);
    oneRead(d, ack('r1'), ack('r2'), ack('r3'));
    await flush();
    expect(answers(d)).toEqual([{ t: 'hb', ack: 'r3' }]);
  });

  it('in a read with one command finished and another only acked, the hb names the one still running', async () => {
    const d = await online();
    await submitted(d, ['r1', 'r2']);
    oneRead(d, ack('r1'), ack('r2'), res(d, 'r2'));
    await flush();
    expect(answers(d)).toEqual([{ t: 'hb', ack: 'r1' }]);
  });

  it('a progress frame is answered too, unless its result came in the same read', async () => {
    const d = await online();
    await submitted(d, ['r1', 'r2']);
    oneRead(d, ack('r1'), ack('r2'));
    await flush();
    oneRead(d, { t: 'prog', rid: 'r1', pct: 50 }, { t: 'prog', rid: 'r2', pct: 50 }, res(d, 'r2'));
    await flush();
    expect(answers(d).map((f) => f.ack)).toEqual(['r2', 'r1']);
  });
});

describe('on the real clock a rack rides with the next frame to its device', () => {
  beforeEach(() => {
    core = new HostCore({ db: newDb(), logger: pino({ level: 'silent' }), heartbeatMs: 60_000 });
    core.provision('rig1', SECRET, board);
  });

  /** What the host's end of the link writes: each entry one write (a batch, or a single send). */
  function writes(d: FakeDevice): string[][] {
    const w: string[][] = [];
    const l = (d as unknown as { hostSide: { send(t: string): void; sendBatch?(t: string[]): void } }).hostSide;
    const send = l.send.bind(l);
    l.send = (t) => {
      w.push([t]);
      send(t);
    };
    l.sendBatch = (ts) => {
      w.push(ts);
      for (const t of ts) send(t);
    };
    return w;
  }
  /** A ride long enough for any machine: a rack waits for the next command, however slow the submit. */
  async function onlineWithLongRide(): Promise<FakeDevice> {
    core.close();
    core = new HostCore({ db: newDb(), logger: pino({ level: 'silent' }), heartbeatMs: 60_000, rackRideMs: 60_000 });
    core.provision('rig1', SECRET, board);
    return online();
  }
  const kinds = (texts: string[]) => texts.map((t) => (JSON.parse(unseal(t)?.body ?? t) as { t: string }).t);

  it("the waiter hears of the result before the rack is written, and the rack rides inside the next command (k), one frame instead of two", async () => {
    const d = await onlineWithLongRide();
    const w = writes(d);
    const first = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'r1' });
    await flush();
    const done = core.waitTerminal(first.command_id, 5000).then((v) => [v?.state, d.of('rack').length]);
    oneRead(d, ack('r1'), res(d, 'r1'));
    expect(await done).toEqual(['completed', 0]);
    await flush();
    expect(d.of('rack')).toEqual([]);
    await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 2, on: true }, request_id: 'r2' });
    await flush();
    expect(w.map(kinds)).toEqual([['cmd'], ['cmd']]);
    expect(d.of('rack')).toEqual([]);
    expect(d.of('cmd').map((f) => [f.rid, f.k])).toEqual([['r1', undefined], ['r2', 'r1']]);
  });

  it('with several racks waiting, the next command carries the newest and the others go ahead of it in the same write', async () => {
    const d = await onlineWithLongRide();
    const w = writes(d);
    await submitted(d, ['r1', 'r2']);
    oneRead(d, res(d, 'r1'), res(d, 'r2'));
    await flush();
    expect(d.of('rack')).toEqual([]);
    await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'r3' });
    await flush();
    expect(w.map(kinds).at(-1)).toEqual(['rack', 'cmd']);
    expect(d.of('rack').map((f) => f.rid)).toEqual(['r1']);
    expect(d.of('cmd').at(-1)).toMatchObject({ rid: 'r3', k: 'r2' });
  });

  it('a rack with nothing to ride with goes out alone within RACK_RIDE_MS; several waiting go in one write, oldest first', async () => {
    const d = await online();
    const w = writes(d);
    await submitted(d, ['r1', 'r2']);
    oneRead(d, ack('r1'), res(d, 'r1'), ack('r2'), res(d, 'r2'));
    await flush();
    expect(d.of('rack')).toEqual([]);
    await ridden();
    expect(w.map(kinds).at(-1)).toEqual(['rack', 'rack']);
    expect(d.of('rack').map((f) => f.rid)).toEqual(['r1', 'r2']);
  });

  it('racks waiting when the link drops are not sent on it; the device re-sends its results on the next link and gets them', async () => {
    const d = await online();
    await submitted(d, ['r1']);
    oneRead(d, ack('r1'), res(d, 'r1'));
    await flush();
    d.link.close('wifi lost');
    await ridden();
    expect(d.of('rack')).toEqual([]);
    const again = await online();
    again.send(res(again, 'r1'));
    await ridden();
    expect(again.of('rack').map((f) => f.rid)).toEqual(['r1']);
  });
});

describe('on a virtual clock every ack is answered at once (frames arrive by timers that can run back to back)', () => {
  it('an ack and its result in one read still get the answer', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    core = new HostCore({ db: newDb(), clock, logger: pino({ level: 'silent' }), heartbeatMs: 60_000 });
    core.provision('rig1', SECRET, board);
    const d = await online();
    await submitted(d, ['r1']);
    oneRead(d, ack('r1'), res(d, 'r1'));
    await flush();
    expect(answers(d)).toEqual([{ t: 'hb', ack: 'r1' }]);
  });
});
