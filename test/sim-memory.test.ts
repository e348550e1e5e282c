// Memory in the simulator (issue 9 item 6): the vm prices the firmware's live data in ESP32 JsVars
// (an estimate calibrated on Espruino 2v29 with 14-byte JsVars, sim/src/memory.ts), and the firmware
// refuses a frame it cannot afford from its header, before buffering or parsing it.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { Fabric, SimRig } from '@proofrig/sim';
import type { Link } from '@proofrig/protocol';
import { mulberry32 } from '../sim/src/prng.js';
import { nameVars, stringVars, valueVars } from '../sim/src/memory.js';
import { HostCore } from '../host/src/core/host.js';
import { flush } from './helpers/fake-device.js';

const FIRMWARE = new URL('../firmware/dist/proofrig.js', import.meta.url).pathname;
const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const SECRET = 'cd'.repeat(32);

interface Mem {
  free: number;
  usage: number;
  total: number;
}

/** A relay rig on the in-memory fabric with a host core; every frame to the host is recorded; JSON.parse inside the firmware is watched. */
async function rigWithHost() {
  const clock = new VirtualClock(0);
  const got: string[] = [];
  let link: Link | undefined;
  const holder: { core?: HostCore } = {};
  const fabric = new Fabric({
    clock,
    rng: mulberry32(3),
    accept: (l) => {
      link = l;
      holder.core!.attach(l);
      const own = l.onmessage!;
      l.onmessage = (t) => {
        got.push(t);
        own(t);
      };
    },
  });
  const core = new HostCore({ db: join(mkdtempSync(join(tmpdir(), 'proofrig-mem-')), 'j.db'), clock, heartbeatMs: 1000 });
  holder.core = core;
  core.provision('rig1', SECRET, board);
  const rig = new SimRig({ firmwarePath: FIRMWARE, clock, seed: 3, config: { dev: 'rig1', secret: SECRET, host: 'ws://h:1/device', board }, connect: fabric.connector('rig1') });
  const parsed: number[] = [];
  rig.boot();
  // Every JSON.parse the firmware makes, by input length (the context's own JSON, wrapped after boot).
  const J = vm.runInContext('JSON', rig.context!) as JSON;
  const parse = J.parse.bind(J);
  J.parse = ((t: string, r?: never) => {
    parsed.push(String(t).length);
    return parse(t, r);
  }) as JSON['parse'];
  const online = async () => {
    for (let i = 0; i < 500 && !core.devices.session('rig1'); i++) {
      clock.advance(10);
      await flush(1);
    }
    expect(core.devices.session('rig1')).toBeDefined();
  };
  const mem = (): Mem => JSON.parse(vm.runInContext('JSON.stringify(process.memory())', rig.context!)) as Mem;
  const run = async (rid: string, args: Record<string, unknown>) => {
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args, request_id: rid });
    for (let i = 0; i < 300 && !core.status(s.command_id)!.terminal; i++) {
      clock.advance(10);
      await flush(1);
    }
    return core.status(s.command_id)!;
  };
  const writes = () => [23, 22, 21, 19].reduce((s, p) => s + rig.writes(p), 0);
  return { clock, core, rig, got, link: () => link!, parsed, online, mem, run, writes };
}

describe('the JsVar price list (calibrated on Espruino 2v29, ESP32 JsVar format)', () => {
  it('prices strings, names, arrays and objects as the interpreter counted them', () => {
    // Measured usage deltas (sim/README.md "Memory"), each less the one JsVar the probe itself adds.
    expect([1, 9, 10, 20, 100, 1000, 5000].map(stringVars)).toEqual([1, 1, 2, 3, 11, 101, 501]);
    expect(['k', 'kkkk', 'kkkkk', 'k'.repeat(12), 'k'.repeat(16), 'k'.repeat(30)].map(nameVars)).toEqual([1, 1, 2, 2, 3, 4]);
    const v = (x: unknown) => valueVars(x, new WeakSet(), { n: 1e6 });
    expect(v(Array.from({ length: 50 }, (_, i) => i))).toBe(51);
    expect(v(Object.fromEntries(Array.from({ length: 10 }, (_, i) => ['k' + i, 'val' + i])))).toBe(21);
    expect(v({ a: { b: { c: {} } } })).toBe(7);
    expect(v(Array.from({ length: 10 }, (_, i) => ({ k: i, v: 'abc' })))).toBe(51);
  });
});

describe('the vm reports process.memory() from that estimate', () => {
  it('a device that keeps receiving commands shows flat memory once its 32-slot ring has filled', async () => {
    const h = await rigWithHost();
    await h.online();
    const boot = h.mem();
    expect(boot.total).toBe(boot.free + boot.usage);
    for (let i = 0; i < 60; i++) expect((await h.run('fill-' + i, { ch: 1 + (i % 2), on: i % 4 < 2 })).state).toBe('completed');
    const full = h.mem();
    // The ring's 32 kept result frames are priced: memory grew while it filled ...
    expect(full.usage - boot.usage).toBeGreaterThan(32 * 20);
    for (let i = 60; i < 180; i++) expect((await h.run('more-' + i, { ch: 1 + (i % 2), on: i % 4 < 2 })).state).toBe('completed');
    const later = h.mem();
    // ... and stays flat afterwards: 120 more commands add less than one JsVar per command.
    expect(Math.abs(later.usage - full.usage)).toBeLessThan(40);
    h.rig.shutdown();
    h.core.close();
  }, 60_000);

  it('a leak shows: data the firmware keeps adding to is counted as it grows', async () => {
    const h = await rigWithHost();
    await h.online();
    const before = h.mem();
    vm.runInContext('var leaked = []; setInterval(function () { leaked.push("result " + leaked.length + " kept forever"); }, 100);', h.rig.context!);
    h.clock.advance(100 * 200);
    const after = h.mem();
    // 200 strings of ~25 characters: a name and three JsVars each.
    expect(after.usage - before.usage).toBeGreaterThan(200 * 3);
    expect(after.usage - before.usage).toBeLessThan(200 * 6);
    h.rig.shutdown();
    h.core.close();
  }, 60_000);
});

describe('estimating memory costs the simulator no memory', () => {
  it('a rig whose process.memory() was read leaves nothing alive once it is gone (a 10,000-seed chaos run grew ~2 MB a seed)', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const contexts: WeakRef<object>[] = [];
    for (let i = 0; i < 3; i++) {
      const clock = new VirtualClock(0);
      const fabric = new Fabric({ clock, rng: mulberry32(i), accept: () => {} });
      const rig = new SimRig({ firmwarePath: FIRMWARE, clock, seed: i, config: { dev: 'rig1', secret: SECRET, host: 'ws://h:1/device', board }, connect: fabric.connector('rig1') });
      rig.boot();
      clock.advance(100);
      expect(vm.runInContext('process.memory().usage', rig.context!)).toBeGreaterThan(0);
      contexts.push(new WeakRef(rig.context!));
      rig.shutdown();
    }
    // A WeakRef holds its target until the current job ends.
    for (let k = 0; k < 3; k++) {
      await new Promise((r) => setTimeout(r, 0));
      gc();
    }
    expect(contexts.filter((c) => c.deref() !== undefined)).toHaveLength(0);
  });
});

describe('a frame the device cannot afford is refused before it is parsed', () => {
  const BIG = 60 * 1024;

  it('after authentication: a 60 KiB frame is answered FRAME_TOO_LARGE unread, nothing moves, and the device reconnects and keeps serving', async () => {
    const h = await rigWithHost();
    await h.online();
    expect((await h.run('before', { ch: 2, on: true })).state).toBe('completed');
    const w0 = h.writes();
    const m0 = h.mem();
    const frame = JSON.stringify({ t: 'cmd', rid: 'huge', a: 'relay.set', p: { ch: 1, on: true, pad: 'x'.repeat(BIG) } });
    expect(frame.length).toBeGreaterThan(BIG);
    h.got.length = 0;
    h.parsed.length = 0;
    h.link().send(frame);
    for (let i = 0; i < 50; i++) {
      h.clock.advance(10);
      await flush(1);
    }
    const errs = h.got.map((g) => JSON.parse(g)).filter((f) => f.t === 'err');
    expect(errs.map((e) => e.code)).toEqual(['FRAME_TOO_LARGE']);
    expect(errs[0].msg).toMatch(/frame of \d+ bytes needs about \d+ JsVars/);
    // Never parsed, never buffered whole, nothing switched.
    expect(Math.max(0, ...h.parsed)).toBeLessThan(1000);
    expect(h.writes()).toBe(w0);
    expect(h.rig.relay(1).energised).toBe(false);
    expect(h.rig.bootCount).toBe(1);
    // A fresh session, the same memory, and commands still run.
    await h.online();
    expect((await h.run('after', { ch: 2, on: false })).state).toBe('completed');
    expect(Math.abs(h.mem().usage - m0.usage)).toBeLessThan(60);
    h.rig.shutdown();
    h.core.close();
  }, 60_000);

  it('before authentication: the same frame is refused the same way and the device stays up', async () => {
    const clock = new VirtualClock(0);
    let link: Link | undefined;
    const got: string[] = [];
    const fabric = new Fabric({
      clock,
      rng: mulberry32(5),
      accept: (l) => {
        link = l;
        l.onmessage = (t) => got.push(t);
      },
    });
    const rig = new SimRig({ firmwarePath: FIRMWARE, clock, seed: 5, config: { dev: 'rig1', secret: SECRET, host: 'ws://h:1/device', board }, connect: fabric.connector('rig1') });
    rig.boot();
    for (let i = 0; i < 300 && !link; i++) {
      clock.advance(10);
      await flush(1);
    }
    expect(link).toBeDefined();
    link!.send(JSON.stringify({ t: 'chal', v: 1, sn: 'a'.repeat(32), pad: 'y'.repeat(BIG) }));
    clock.advance(100);
    expect(got.map((g) => JSON.parse(g)).filter((f) => f.t === 'err').map((f) => f.code)).toEqual(['FRAME_TOO_LARGE']);
    expect(got.some((g) => JSON.parse(g).t === 'auth')).toBe(false);
    expect(rig.running).toBe(true);
    expect(rig.bootCount).toBe(1);
    rig.shutdown();
  });
});
