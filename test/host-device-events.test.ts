// The host's side of device interlock events (`evt`): journaled once per boot and id, confirmed
// with rack, shown in the device view, and kept across a host restart.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BoardDef } from '@proofrig/protocol';
import { HostCore } from '../host/src/core/host.js';
import { FakeDevice, flush, ridden } from './helpers/fake-device.js';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const SECRET = 'c'.repeat(64);
let cores: HostCore[] = [];
afterEach(() => {
  for (const c of cores) c.close();
  cores = [];
});

function host(db = ':memory:'): HostCore {
  const core = new HostCore({ db });
  core.provision('rig1', SECRET, board);
  cores.push(core);
  return core;
}

describe('device events', () => {
  it('an evt is journaled, racked, updates the cached state and appears in the device view', async () => {
    const core = host();
    const dev = new FakeDevice(core, 'rig1', SECRET, 'boot-1');
    await dev.connect();
    const s = dev.state(false);
    dev.send({ t: 'evt', id: 'ev:1', k: 'max_on', ch: 4, msg: 'K4 switched off by the device', s });
    await ridden();
    expect(dev.of('rack')).toContainEqual({ t: 'rack', rid: 'ev:1' });
    const v = core.devices.view('rig1')!;
    expect(v.interlock_events).toMatchObject([{ kind: 'max_on', ch: 4, boot_id: 'boot-1', msg: 'K4 switched off by the device' }]);
    expect(v.state).toEqual(s);
  });

  it('the same event re-sent after a reconnect is racked again but journaled once; the same id from a new boot is a new event', async () => {
    const core = host();
    const a = new FakeDevice(core, 'rig1', SECRET, 'boot-1');
    await a.connect();
    const f = { t: 'evt', id: 'ev:1', k: 'estop', msg: 'e-stop pressed', s: { ...a.state(false), estop: true } };
    a.send(f);
    await flush();
    const b = new FakeDevice(core, 'rig1', SECRET, 'boot-1');
    await b.connect();
    b.send(f);
    await ridden();
    expect(b.of('rack')).toContainEqual({ t: 'rack', rid: 'ev:1' });
    expect(core.devices.view('rig1')!.interlock_events).toHaveLength(1);
    const c = new FakeDevice(core, 'rig1', SECRET, 'boot-2');
    await c.connect();
    c.send(f);
    await flush();
    expect(core.devices.view('rig1')!.interlock_events.map((e) => e.boot_id)).toEqual(['boot-2', 'boot-1']);
  });

  it('a malformed evt is refused MALFORMED_FRAME and changes nothing', async () => {
    const core = host();
    const dev = new FakeDevice(core, 'rig1', SECRET, 'boot-1');
    await dev.connect();
    dev.send({ t: 'evt', id: 'ev:1', k: 'reboot_everything', msg: 'x', s: dev.state() });
    await ridden();
    expect(dev.of('err')).toMatchObject([{ code: 'MALFORMED_FRAME' }]);
    expect(dev.of('rack')).toEqual([]);
    expect(core.devices.view('rig1')!.interlock_events).toEqual([]);
  });

  it('events survive a host restart (they are in the journal)', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'proofrig-ev-')), 'journal.db');
    const core = host(db);
    const dev = new FakeDevice(core, 'rig1', SECRET, 'boot-1');
    await dev.connect();
    dev.send({ t: 'evt', id: 'ev:7', k: 'max_on', ch: 4, msg: 'off', s: dev.state(false) });
    await flush();
    core.close();
    cores = [];
    expect(host(db).devices.view('rig1')!.interlock_events).toMatchObject([{ kind: 'max_on', ch: 4 }]);
  });
});
