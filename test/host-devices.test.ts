// The device registry behind list_devices / get_device_status: who is online, which board a
// command is planned against, the round-trip time deadlines are built on, state queries and the
// state cache with its observation time. A real journal (in memory), a virtual clock, and
// sessions reduced to what the registry reads of them.
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BoardDef, DeviceState, StateFrame, ToDeviceFrame } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import { Devices } from '../host/src/core/devices.js';
import { Journal } from '../host/src/core/journal/journal.js';
import type { Session } from '../host/src/core/session.js';

const relayRig = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const stepperRig = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8')) as BoardDef;
const T0 = 1_700_000_000_000;
const STATE: DeviceState = { up: 5, relays: [{ ch: 1, cmd: true, pin: true, aux: true }] };

let clock: VirtualClock;
let journal: Journal;
let devices: Devices;
let changes: string[];

/** A session as the registry sees it: device, boot, firmware, last frame time, refused counts, and what it sent. */
function session(dev = 'rig1', boot = 'boot1') {
  const sent: ToDeviceFrame[] = [];
  const s = { dev, boot, fw: '0.1.0', lastRx: clock.now(), refusedFrames: 2, refusedByDevice: 1, send: (f: ToDeviceFrame) => sent.push(f) };
  return { s: s as unknown as Session, sent };
}

beforeEach(() => {
  clock = new VirtualClock(T0);
  journal = new Journal(':memory:');
  journal.provision('rig1', 'a'.repeat(64), relayRig);
  devices = new Devices(journal, clock);
  changes = [];
  devices.on('change', (dev: string) => changes.push(dev));
});
afterEach(() => journal.close());

describe('online and offline', () => {
  it('a session going online and offline is told as a change of that device, and the journal remembers when and which boot', () => {
    const { s } = session();
    expect(devices.online(s)).toBeUndefined();
    expect(devices.session('rig1')).toBe(s);
    expect(devices.lastBoot('rig1')).toBe('boot1');
    clock.advance(1000);
    expect(devices.offline(s)).toBe(true);
    expect(devices.session('rig1')).toBeUndefined();
    expect(changes).toEqual(['rig1', 'rig1']);
    expect(journal.device('rig1')!.last_seen).toBe(T0 + 1000);
  });

  it('a newer session replaces the old one; the old one closing later changes nothing', () => {
    const a = session('rig1', 'boot1');
    const b = session('rig1', 'boot2');
    devices.online(a.s);
    expect(devices.online(b.s)).toBe(a.s);
    expect(devices.offline(a.s)).toBe(false);
    expect(devices.session('rig1')).toBe(b.s);
    expect(changes).toEqual(['rig1', 'rig1']);
    expect(devices.lastBoot('rig1')).toBe('boot2');
  });

  it('a session of a device never online is not taken offline', () => {
    expect(devices.offline(session('rig2').s)).toBe(false);
    expect(changes).toEqual([]);
  });

  it('an unknown device has no last boot', () => {
    expect(devices.lastBoot('nope')).toBeNull();
    expect(devices.lastBoot('rig1')).toBeNull();
  });
});

describe('the board a command is planned against', () => {
  it('while online, the board the session authenticated with, until the device is re-provisioned', () => {
    devices.online(session().s);
    journal.provision('rig1', 'a'.repeat(64), stepperRig);
    expect(devices.board('rig1')!.id).toBe('relay-rig-4ch');
    devices.reprovisioned('rig1');
    expect(devices.board('rig1')!.id).toBe('stepper-rig');
  });

  it('offline, the journal’s board; unknown devices have none', () => {
    const { s } = session();
    devices.online(s);
    devices.offline(s);
    journal.provision('rig1', 'a'.repeat(64), stepperRig);
    expect(devices.board('rig1')!.id).toBe('stepper-rig');
    expect(devices.board('nope')).toBeUndefined();
    devices.reprovisioned('nope');
  });
});

describe('the state cache', () => {
  it('keeps the last observed state and when it was observed, and tells subscribers', () => {
    const seen: string[] = [];
    expect(devices.state('rig1')).toBeNull();
    devices.observe('rig1', STATE);
    devices.onObserve = (dev) => seen.push(dev);
    devices.observe('rig1', { ...STATE, up: 6 });
    expect(devices.state('rig1')).toStrictEqual({ ...STATE, up: 6 });
    expect(seen).toEqual(['rig1']);
    expect(changes).toEqual(['rig1', 'rig1']);
  });

  it('remembers when someone last asked for the real state', () => {
    expect(devices.refreshedAt('rig1')).toBeNull();
    clock.advance(250);
    devices.markRefreshed('rig1');
    expect(devices.refreshedAt('rig1')).toBe(T0 + 250);
  });
});

describe('round-trip time', () => {
  it('200 ms until measured, never below 20 ms, else the largest of the last 16 samples', () => {
    expect(devices.rttMax('rig1')).toBe(200);
    devices.rtt('rig1', 5);
    expect(devices.rttMax('rig1')).toBe(20);
    devices.rtt('rig1', 90);
    devices.rtt('rig1', 40);
    expect(devices.rttMax('rig1')).toBe(90);
  });

  it('a sample older than the last 16 no longer counts', () => {
    devices.rtt('rig1', 500);
    for (let i = 0; i < 15; i++) devices.rtt('rig1', 30);
    expect(devices.rttMax('rig1')).toBe(500);
    devices.rtt('rig1', 30);
    expect(devices.rttMax('rig1')).toBe(30);
  });
});

describe('state queries', () => {
  it('an offline or unknown device answers null at once and nothing is sent', async () => {
    const { s, sent } = session();
    devices.online(s);
    devices.offline(s);
    expect(await devices.query('rig1', undefined, 1000)).toBeNull();
    expect(await devices.query('nope', undefined, 1000)).toBeNull();
    expect(sent).toEqual([]);
  });

  it('the answer resolves the query, updates the cache and measures the round trip', async () => {
    const { s, sent } = session();
    devices.online(s);
    const p = devices.query('rig1', 'r7', 1000);
    expect(sent).toEqual([{ t: 'q', q: expect.any(String), rid: 'r7' }]);
    clock.advance(120);
    const f: StateFrame = { t: 'state', q: (sent[0] as { q: string }).q, s: STATE, rid: 'r7', rst: 'done' };
    devices.answer('rig1', f);
    expect(await p).toBe(f);
    expect(devices.state('rig1')).toBe(STATE);
    expect(devices.rttMax('rig1')).toBe(120);
  });

  it('a query without a command asks for the state only', () => {
    const { s, sent } = session();
    devices.online(s);
    void devices.query('rig1', undefined, 1000);
    expect(sent).toStrictEqual([{ t: 'q', q: expect.any(String) }]);
  });

  it('no answer within the wait is null; a state frame nobody asked for only updates the cache', async () => {
    const { s, sent } = session();
    devices.online(s);
    const p = devices.query('rig1', undefined, 1000);
    clock.advance(1000);
    expect(await p).toBeNull();
    devices.answer('rig1', { t: 'state', q: (sent[0] as { q: string }).q, s: STATE });
    devices.answer('rig2', { t: 'state', q: 'other', s: STATE });
    expect(devices.state('rig1')).toBe(STATE);
    expect(devices.state('rig2')).toBe(STATE);
    expect(devices.rttMax('rig1')).toBe(200);
  });

  it('going offline answers every open query with null at once', async () => {
    const { s } = session();
    devices.online(s);
    const p = devices.query('rig1', undefined, 60_000);
    devices.offline(s);
    expect(await p).toBeNull();
  });
});

describe('the device view (list_devices, get_device_status)', () => {
  it('of a device never seen: offline, no boot, no last-seen time, no state', () => {
    expect(devices.view('nope')).toBeUndefined();
    expect(devices.view('rig1')).toStrictEqual({
      device_id: 'rig1',
      online: false,
      board_id: 'relay-rig-4ch',
      board_name: relayRig.name,
      boot_id: null,
      firmware: null,
      last_seen: null,
      last_seen_age_ms: null,
      rtt_max_ms: 200,
      state: null,
      state_observed_at: null,
      state_age_ms: null,
      refused_frames: null,
      interlock_events: [],
    });
  });

  it('of an online device: its session’s boot, firmware and last frame, the state’s age, refused frames and interlock events', () => {
    const { s } = session();
    devices.online(s);
    devices.observe('rig1', STATE);
    journal.deviceEvent({ device_id: 'rig1', boot_id: 'boot1', event_id: 'e1', at: T0 + 10, kind: 'max_on', ch: 2, msg: 'off after max_on_ms', device_state: STATE });
    clock.advance(3000);
    expect(devices.view('rig1')).toStrictEqual({
      device_id: 'rig1',
      online: true,
      board_id: 'relay-rig-4ch',
      board_name: relayRig.name,
      boot_id: 'boot1',
      firmware: '0.1.0',
      last_seen: new Date(T0).toISOString(),
      last_seen_age_ms: 3000,
      rtt_max_ms: 200,
      state: STATE,
      state_observed_at: new Date(T0).toISOString(),
      state_age_ms: 3000,
      refused_frames: { by_host: 2, by_device: 1 },
      interlock_events: [{ at: new Date(T0 + 10).toISOString(), boot_id: 'boot1', kind: 'max_on', ch: 2, msg: 'off after max_on_ms' }],
    });
  });

  it('of a device gone offline: the journal’s last boot and last-seen time', () => {
    const { s } = session();
    devices.online(s);
    clock.advance(500);
    devices.offline(s);
    clock.advance(1500);
    expect(devices.view('rig1')).toMatchObject({ online: false, boot_id: 'boot1', firmware: null, last_seen: new Date(T0 + 500).toISOString(), last_seen_age_ms: 1500, refused_frames: null });
    expect(devices.ids()).toEqual(['rig1']);
  });
});
