// Frame fuzzers with a fixed budget and seed: random and mutated frames to the firmware running in
// the simulator (over the in-memory fabric) and to the host's session, before and after
// authentication. Whatever arrives: no crash, no state change, and the outcome the protocol names for
// it — before authentication one specific error answer and the connection ends; after it, a frame
// that is not the next sealed frame is refused without an answer and counted, and a sealed frame
// that is malformed inside is answered with its specific error.
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HOST_DIR, MAC_BYTES, macInput, parseToDevice, parseToHost, PROTOCOL_VERSION, seal, withCounter, type BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { Fabric, SimRig } from '@proofrig/sim';
import type { Link } from '@proofrig/protocol';
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
function rigOnFabric(host: (link: Link) => void) {
  const clock = new VirtualClock(0);
  const fabric = new Fabric({ clock, rng: mulberry32(7), accept: host });
  const rig = new SimRig({ firmwarePath: FIRMWARE, clock, seed: 7, config: { dev: 'rig1', secret: SECRET, host: 'ws://h:1/device', board }, connect: fabric.connector('rig1') });
  const writes = () => [23, 22, 21, 19].reduce((s, p) => s + rig.writes(p), 0);
  return { clock, fabric, rig, writes };
}

/**
 * Advance virtual time in steps until `done()` or `ms` have passed. Each step also lets real
 * microtasks run: the simulated chip sends its writes from Espruino's idle loop (a microtask, see
 * sim/src/net.ts), so without them nothing the firmware writes ever reaches the wire.
 */
async function run(clock: VirtualClock, ms: number, done: () => boolean = () => false, step = 10): Promise<void> {
  for (let t = 0; t < ms && !done(); t += step) {
    clock.advance(step);
    await flush(1);
  }
}

/** A sealed-looking frame MACed with a key that is not the session's: what a forger can make. */
function forged(body: object, n: number, dir: string): string {
  const b = withCounter(JSON.stringify(body), n);
  return seal(b, createHmac('sha256', 'not the session key').update(macInput(dir, b)).digest().subarray(0, MAC_BYTES).toString('base64'));
}

describe('fuzzing the firmware in the simulator', () => {
  it('before authentication: each bad frame is answered once with its specific error, then the rig drops that connection and dials again; nothing moves, no reboot', async () => {
    const conns: { link: Link; got: Record<string, unknown>[] }[] = [];
    const { clock, rig, writes } = rigOnFabric((l) => {
      const c = { link: l, got: [] as Record<string, unknown>[] };
      conns.push(c);
      l.onmessage = (t) => c.got.push(JSON.parse(t) as Record<string, unknown>);
    });
    /** The newest connection has said hello (and nothing else yet). */
    const saidHello = (n: number) => conns.length > n && conns[n].got.some((f) => f.t === 'hello');
    rig.boot();
    await run(clock, 5000, () => saidHello(0));
    expect(saidHello(0)).toBe(true);
    const w0 = writes();
    let bad = 0;
    for (const text of frames([...SEEDS_TO_DEVICE, { t: 'chal', v: PROTOCOL_VERSION, sn: 'a'.repeat(32) }, { t: 'ok', hb: 1000, mac: 'a'.repeat(64) }], BUDGET, 11)) {
      const p = parseToDevice(text);
      // A well-formed chal or ok IS the handshake: the fuzzer is after frames that are not.
      if (p.ok) continue;
      bad++;
      const n = conns.length;
      const c = conns[n - 1];
      expect(c.got.map((f) => f.t), text).toEqual(['hello']);
      c.link.send(text);
      // Back-off is 250 ms doubling to 10 s (±20 %) and no `ok` ever resets it: wait up to 15 s.
      await run(clock, 15000, () => saidHello(n), 100);
      expect(c.got.slice(1).map((f) => [f.t, f.code]), text).toEqual([['err', p.code]]);
      expect(c.link.closed, text).toBe(true);
      expect(conns.length, text).toBe(n + 1);
    }
    expect(bad).toBeGreaterThan(BUDGET / 2);
    expect(writes()).toBe(w0);
    expect(rig.running).toBe(true);
    expect(rig.bootCount).toBe(1);
    rig.shutdown();
  });

  it('after authentication: frames the host did not seal (random, forged, replayed) are refused without an answer, counted exactly, never acted on; a real command still completes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-fuzz-'));
    /** Puts text on the wire to the device, past the host's sealing (and not into fromHost). */
    let inject: ((text: string) => void) | undefined;
    const fromDevice: Record<string, unknown>[] = [];
    const fromHost: string[] = [];
    const holder: { core?: HostCore } = {};
    const { clock, rig, writes } = rigOnFabric((l) => {
      holder.core!.attach(l);
      const own = l.onmessage!;
      l.onmessage = (t) => {
        fromDevice.push(JSON.parse(t) as Record<string, unknown>);
        own(t);
      };
      const send = l.send.bind(l);
      inject = send;
      l.send = (t) => {
        fromHost.push(t);
        send(t);
      };
    });
    const core = new HostCore({ db: join(dir, 'j.db'), clock, heartbeatMs: 1000 });
    holder.core = core;
    core.provision('rig1', SECRET, board);
    rig.boot();
    await run(clock, 5000, () => !!core.devices.session('rig1'));
    const session = core.devices.session('rig1')!;
    expect(session).toBeDefined();
    const settle = async (rid: string) => {
      const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: rid === 'first' }, request_id: rid });
      await run(clock, 2000, () => core.status(s.command_id)!.terminal);
      return s.command_id;
    };
    // One real command first: its sealed `cmd` is what a replay attack would resend.
    expect(core.status(await settle('first'))!.state).toBe('completed');
    const cmd = fromHost.find((t) => t.startsWith('{"t":"cmd"'))!;
    expect(cmd).toBeDefined();
    const w0 = writes();
    /** The counter the device expects next: a forger can guess it, only the MAC stops him. */
    const nextN = () => (JSON.parse(fromHost[fromHost.length - 1]) as { n: number }).n + 1;
    let sent = 0;
    const texts = frames(SEEDS_TO_DEVICE, BUDGET, 12);
    for (let i = 0; i < texts.length; i++) {
      const wire = [texts[i]];
      if (i % 10 === 0) wire.push(forged({ t: 'cmd', rid: 'forged-' + i, a: 'relay.set', p: { ch: 2, on: true } }, nextN(), HOST_DIR));
      if (i % 10 === 5) wire.push(cmd);
      for (const text of wire) {
        const from = fromDevice.length;
        inject!(text);
        sent++;
        await run(clock, 20);
        // No answer (no err, no ack): the device only keeps beating.
        expect(fromDevice.slice(from).filter((f) => f.t !== 'hb'), text).toEqual([]);
      }
    }
    expect(sent).toBe(BUDGET + 2 * (BUDGET / 10));
    // The device counts what it refused and reports it in its heartbeat; the host shows it.
    await run(clock, 3000, () => core.devices.view('rig1')!.refused_frames?.by_device === sent);
    expect(core.devices.view('rig1')!.refused_frames).toEqual({ by_host: 0, by_device: sent });
    expect(writes()).toBe(w0);
    expect(rig.bootCount).toBe(1);
    expect(core.devices.session('rig1')).toBe(session);
    // Still serving on the same connection: a real command completes and does move the relay.
    expect(core.status(await settle('after-fuzz'))!.state).toBe('completed');
    expect(writes()).toBeGreaterThan(w0);
    expect(core.devices.session('rig1')).toBe(session);
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

  it('after authentication: a frame sealed right but malformed inside gets its specific error; one that fails the seal (unsealed, forged, replayed) is refused without an answer and counted; no command or device state changes; the session stays up', async () => {
    const { core } = await hostWith();
    const d = new FakeDevice(core, 'rig1', SECRET, 'boot1');
    await d.connect();
    const session = core.devices.session('rig1')!;
    expect(session).toBeDefined();
    expect(d.key).toBeDefined();
    const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true }, request_id: 'fz-1' });
    await flush();
    const before = JSON.stringify(core.journal.get(s.command_id));
    const state = JSON.stringify(core.devices.state('rig1'));
    const wrongKey = Buffer.alloc(32, 7);
    let answered = 0;
    let refused = 0;
    for (const text of frames(SEEDS_TO_HOST, BUDGET, 14)) {
      // What the host reads once the seal checks out: the text with the next counter added.
      const p = parseToHost(withCounter(text, d.txN + 1));
      if (p.ok) continue; // valid frames are the protocol's business, not the fuzzer's
      d.received.length = 0;
      d.send(text); // sealed with the session key and the next counter
      await flush(2);
      expect(d.received.map((f) => [f.t, f.code]), text).toEqual([['err', p.code]]);
      expect(d.refused, text).toEqual([]);
      expect(session.refusedFrames, text).toBe(refused);
      answered++;
      // The same text failing the seal, three ways: no answer at all, one more refusal each.
      const hb = { t: 'hb', up: 5 };
      for (const wire of [text, d.sealed(hb, d.txN + 1, wrongKey), d.sealed(hb, d.txN)]) {
        const out = d.raw.length;
        d.sendRaw(wire);
        await flush(2);
        refused++;
        expect(d.raw.length, wire).toBe(out);
        expect(session.refusedFrames, wire).toBe(refused);
      }
    }
    expect(answered).toBeGreaterThan(BUDGET / 2);
    expect(core.devices.view('rig1')!.refused_frames).toEqual({ by_host: refused, by_device: 0 });
    expect(JSON.stringify(core.journal.get(s.command_id))).toBe(before);
    expect(JSON.stringify(core.devices.state('rig1'))).toBe(state);
    expect(core.devices.session('rig1')).toBe(session);
    expect(d.closed).toBe(false);
    core.close();
  });
});
