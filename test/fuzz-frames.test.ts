// Frame fuzzers with a fixed budget and seed: random and mutated frames to the firmware running in
// the simulator (over the in-memory fabric) and to the host's session, before and after
// authentication. Whatever arrives: no crash, no state change for a bad frame, and a specific error.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseToDevice, parseToHost, type BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { Fabric, SimRig, type FabricLink } from '@proofrig/sim';
import { mulberry32 } from '../sim/src/prng.js';
import { HostCore } from '../host/src/core/host.js';
import { FakeDevice, flush } from './helpers/fake-device.js';

const FIRMWARE = new URL('../firmware/dist/proofrig.js', import.meta.url).pathname;
const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const SECRET = 'ab'.repeat(32);
const BUDGET = 250;

/** Valid frames of both directions, to mutate. */
const SEEDS_TO_DEVICE = [
  { t: 'cmd', rid: 'fz-1', a: 'relay.set', p: { ch: 1, on: true } },
  { t: 'q', q: 'q1', rid: 'fz-1' },
  { t: 'rack', rid: 'fz-1' },
  { t: 'hb' },
  { t: 'err', code: 'BUSY', msg: 'x' },
];
const SEEDS_TO_HOST = [
  { t: 'ack', rid: 'fz-1', st: 'accepted' },
  { t: 'res', rid: 'fz-1', st: 'completed', ev: 'aux_contact', ver: true, s: { up: 1, relays: [] }, ms: 3 },
  { t: 'prog', rid: 'fz-1', pct: 50 },
  { t: 'state', q: 'q1', s: { up: 1, relays: [] } },
  { t: 'hb', up: 5 },
];

/** Random text, random JSON, and valid frames with one field replaced, dropped or the text cut or flipped. */
function frames(seeds: object[], n: number, seed: number): string[] {
  const mutated = fc
    .tuple(fc.constantFrom(...seeds), fc.nat(), fc.anything(), fc.nat(5))
    .map(([f, k, v, how]) => {
      const o = { ...(f as Record<string, unknown>) };
      const keys = Object.keys(o);
      const key = keys[k % keys.length];
      const text = JSON.stringify(o);
      if (how === 0) delete o[key];
      else if (how === 1) o[key] = v;
      else if (how === 2) return text.slice(0, k % text.length);
      else if (how === 3) return text.slice(0, k % text.length) + String.fromCharCode(k % 256) + text.slice((k % text.length) + 1);
      else if (how === 4) o[key] = 'x'.repeat(k % 3000);
      else return JSON.stringify({ ...o, [key]: o[key], extra: v });
      return JSON.stringify(o) ?? 'null';
    });
  const arb = fc.oneof(fc.string(), fc.json(), mutated, mutated, mutated);
  return fc.sample(arb, { numRuns: n, seed });
}

/** A relay rig on the fabric; `host` decides what the accepted link is attached to. */
function rigOnFabric(host: (link: FabricLink) => void) {
  const clock = new VirtualClock(0);
  const fabric = new Fabric({ clock, rng: mulberry32(7), accept: host });
  const rig = new SimRig({ firmwarePath: FIRMWARE, clock, seed: 7, config: { dev: 'rig1', secret: SECRET, host: 'ws://h:1/device', board }, connect: fabric.connector('rig1') });
  const writes = () => [23, 22, 21, 19].reduce((s, p) => s + rig.writes(p), 0);
  return { clock, fabric, rig, writes };
}

describe('fuzzing the firmware in the simulator', () => {
  it('before authentication: every bad frame gets its specific error back, nothing moves, the device stays up', () => {
    let link: FabricLink | undefined;
    const got: string[] = [];
    const { clock, rig, writes } = rigOnFabric((l) => {
      link = l;
      l.onmessage = (t) => got.push(t);
    });
    rig.boot();
    clock.advance(3000);
    expect(link).toBeDefined();
    const w0 = writes();
    for (const text of frames([...SEEDS_TO_DEVICE, { t: 'chal', v: 1, sn: 'a'.repeat(32) }, { t: 'ok', hb: 1000 }], BUDGET, 11)) {
      const expect1 = parseToDevice(text);
      // A well-formed chal or ok IS the handshake (the device does not authenticate the host yet):
      // sending them would leave "before authentication".
      if (expect1.ok && (expect1.f.t === 'chal' || expect1.f.t === 'ok')) continue;
      got.length = 0;
      link!.send(text);
      clock.advance(20);
      if (!expect1.ok) {
        const errs = got.map((g) => JSON.parse(g)).filter((f) => f.t === 'err');
        expect(errs.map((e) => e.code), text).toEqual([expect1.code]);
      }
    }
    expect(writes()).toBe(w0);
    expect(rig.running).toBe(true);
    expect(rig.bootCount).toBe(1);
    rig.shutdown();
  });

  it('after authentication: bad frames are answered with their error and change nothing; the device keeps serving', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-fuzz-'));
    let link: FabricLink | undefined;
    const got: string[] = [];
    const holder: { core?: HostCore } = {};
    const { clock, rig, writes } = rigOnFabric((l) => {
      link = l;
      holder.core!.attach(l);
      const own = l.onmessage!;
      l.onmessage = (t) => {
        got.push(t);
        own(t);
      };
    });
    const core = new HostCore({ db: join(dir, 'j.db'), clock, heartbeatMs: 1000 });
    holder.core = core;
    core.provision('rig1', SECRET, board);
    rig.boot();
    for (let i = 0; i < 300 && !core.devices.session('rig1'); i++) {
      clock.advance(10);
      await flush(1);
    }
    expect(core.devices.session('rig1')).toBeDefined();
    const w0 = writes();
    let bad = 0;
    for (const text of frames(SEEDS_TO_DEVICE, BUDGET, 12)) {
      const p = parseToDevice(text);
      if (p.ok) continue; // valid frames are the protocol's business, not the fuzzer's
      bad++;
      got.length = 0;
      link!.send(text);
      clock.advance(20);
      const errs = got.map((g) => JSON.parse(g)).filter((f) => f.t === 'err');
      expect(errs.map((e) => e.code), text).toEqual([p.code]);
    }
    expect(bad).toBeGreaterThan(BUDGET / 2);
    expect(writes()).toBe(w0);
    expect(rig.bootCount).toBe(1);
    // Still serving: a real command completes.
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'after-fuzz' });
    for (let i = 0; i < 100 && !core.status(s.command_id)!.terminal; i++) {
      clock.advance(10);
      await flush(1);
    }
    expect(core.status(s.command_id)!.state).toBe('completed');
    rig.shutdown();
    core.close();
  });
});

describe('fuzzing the host session', () => {
  async function hostWith(): Promise<{ core: HostCore; clock: VirtualClock }> {
    const clock = new VirtualClock(1_700_000_000_000);
    const core = new HostCore({ db: join(mkdtempSync(join(tmpdir(), 'proofrig-fuzz-')), 'j.db'), clock, heartbeatMs: 1000 });
    core.provision('rig1', SECRET, board);
    return { core, clock };
  }

  it('before authentication: a bad frame gets its error; nothing reaches the journal; the host keeps running', async () => {
    const { core } = await hostWith();
    for (const text of frames([...SEEDS_TO_HOST, { t: 'hello', v: 1, dev: 'rig1', boot: 'b1', fw: 'x', board: 'relay-rig-4ch', cn: 'c'.repeat(32) }], BUDGET, 13)) {
      const d = new FakeDevice(core, 'rig1', SECRET, 'boot1');
      d.send(text);
      await flush(2);
      const p = parseToHost(text);
      if (!p.ok) expect(d.of('err').map((e) => e.code), text).toEqual([p.code]);
      expect(core.devices.session('rig1')).toBeUndefined();
      d.link.close();
    }
    expect(core.journal.open()).toEqual([]);
    core.close();
  });

  it('after authentication: bad frames get their error, change no command and no device state', async () => {
    const { core } = await hostWith();
    const d = new FakeDevice(core, 'rig1', SECRET, 'boot1');
    await d.connect();
    expect(core.devices.session('rig1')).toBeDefined();
    const s = core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'fz-1' });
    await flush();
    const before = JSON.stringify(core.journal.get(s.command_id));
    const state = JSON.stringify(core.devices.state('rig1'));
    let bad = 0;
    for (const text of frames(SEEDS_TO_HOST, BUDGET, 14)) {
      const p = parseToHost(text);
      if (p.ok) continue;
      bad++;
      d.received.length = 0;
      d.send(text);
      await flush(2);
      expect(d.of('err').map((e) => e.code), text).toEqual([p.code]);
    }
    expect(bad).toBeGreaterThan(BUDGET / 2);
    expect(JSON.stringify(core.journal.get(s.command_id))).toBe(before);
    expect(JSON.stringify(core.devices.state('rig1'))).toBe(state);
    expect(core.devices.session('rig1')).toBeDefined();
    core.close();
  });
});
