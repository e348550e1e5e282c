// Device-side interlocks, end to end on the built firmware in a simulated rig: they hold even when
// the host is wrong or compromised. "A host that skips its checks" is the real host sending raw
// `cmd` frames on the authenticated session, bypassing its own argument checks and plans.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BoardDef, ToDeviceFrame, ToHostFrame } from '@proofrig/protocol';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpTransport, startE2E, until, type E2E } from './helpers/e2e.js';
import type { Session } from '../host/src/core/session.js';
import type { CommandStatus } from '../host/src/core/command-view.js';
import { call } from '../host/src/cli/call.js';

const RELAY = new URL('../boards/relay-rig-4ch.json', import.meta.url).pathname;
const STEPPER = new URL('../boards/stepper-rig.json', import.meta.url).pathname;

/** A board file derived from a shipped one. */
function boardFile(base: string, edit: (b: BoardDef) => void): string {
  const b: BoardDef = JSON.parse(readFileSync(base, 'utf8'));
  edit(b);
  const f = join(mkdtempSync(join(tmpdir(), 'proofrig-board-')), b.id + '.json');
  writeFileSync(f, JSON.stringify(b));
  return f;
}

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

/** Frames from the device as the host core sees them, and raw frames to it that skip every host check. */
function rawHost(h: E2E, dev: string) {
  const seen: ToHostFrame[] = [];
  const core = h.running.core;
  const orig = core.frame.bind(core);
  core.frame = (s: Session, f: ToHostFrame) => {
    if (s.dev === dev) seen.push(f);
    orig(s, f);
  };
  return {
    seen,
    send(f: ToDeviceFrame) {
      core.devices.session(dev)!.send(f);
    },
    async result(rid: string) {
      await until(() => seen.some((f) => f.t === 'res' && f.rid === rid), 5000, `result of ${rid}`);
      return seen.find((f) => f.t === 'res' && f.rid === rid) as Extract<ToHostFrame, { t: 'res' }>;
    },
  };
}

const DEV_R = 'relay-rig-4ch';
const DEV_S = 'stepper-rig';
const onLevel = 0; // the relay rig's module inputs are active LOW

describe('a relay switches itself off after its board max_on_ms, whatever the host sends', () => {
  it('K1 with max_on_ms 400: on, then off by the device at ~400 ms, journaled as a max_on event and shown in the state', async () => {
    e = await startE2E({ sims: [{ boardFile: boardFile(RELAY, (b) => (b.relays[0].max_on_ms = 400)) }] });
    const rig = e.running.rigs.get(DEV_R)!;
    const t0 = Date.now();
    const { final } = await e.act('relay_set', { device_id: DEV_R, channel: 1, on: true });
    expect(final).toMatchObject({ state: 'completed', evidence: 'aux_contact' });
    expect(rig.pinLevel(23)).toBe(onLevel);
    await until(() => rig.pinLevel(23) !== onLevel, 3000, 'K1 output off');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(380);
    await until(() => !rig.relay(1).energised && !rig.relay(1).contactClosed, 1000, 'K1 released');
    await until(() => (e!.running.core.devices.view(DEV_R)!.interlock_events.length ?? 0) > 0, 3000, 'event journaled');
    const r = await e.call('get_device_status', { device_id: DEV_R });
    const v = r.structuredContent as { interlock_events: { kind: string; ch: number; msg: string }[]; state: { relays: { ch: number; cmd: boolean }[] } };
    expect(v.interlock_events[0]).toMatchObject({ kind: 'max_on', ch: 1 });
    expect(v.interlock_events[0].msg).toMatch(/400 ms/);
    expect(v.state.relays[0].cmd).toBe(false);
    // The device dropped the event from its outbox only after the host's rack: nothing re-sent on a second look.
    expect(e.logs.filter((l) => l.evt === 'device_event')).toHaveLength(1);
  });

  it('a host that keeps re-sending "on" with fresh request ids cannot extend the on-time', async () => {
    e = await startE2E({ sims: [{ boardFile: boardFile(RELAY, (b) => (b.relays[0].max_on_ms = 500)) }] });
    const rig = e.running.rigs.get(DEV_R)!;
    const host = rawHost(e, DEV_R);
    host.send({ t: 'cmd', rid: 'raw-on-0', a: 'relay.set', p: { ch: 1, on: true } });
    const first = await host.result('raw-on-0');
    // Keep re-sending "on" until the output goes off: if a repeat restarted the clock, it never would.
    let n = 1;
    let repeats = 0;
    const end = Date.now() + 5000;
    while (rig.pinLevel(23) === onLevel && Date.now() < end) {
      host.send({ t: 'cmd', rid: 'raw-on-' + n, a: 'relay.set', p: { ch: 1, on: true } });
      if ((await host.result('raw-on-' + n++)).st === 'completed' && rig.pinLevel(23) === onLevel) repeats++;
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(rig.pinLevel(23)).not.toBe(onLevel);
    expect(repeats).toBeGreaterThanOrEqual(2);
    await until(() => host.seen.some((f) => f.t === 'evt'), 2000, 'max_on event');
    const ev = host.seen.find((f) => f.t === 'evt') as Extract<ToHostFrame, { t: 'evt' }>;
    expect(ev).toMatchObject({ k: 'max_on', ch: 1 });
    // Device uptime from the first switch-on's result (after its 25 ms settle) to the auto-off.
    expect(ev.s.up - first.s.up).toBeGreaterThanOrEqual(450);
    expect(ev.s.up - first.s.up).toBeLessThan(1500);
  });

  it('the board check refuses a max_on_ms not above settle_ms', async () => {
    const { checkBoard } = await import('@proofrig/protocol');
    const b: BoardDef = JSON.parse(readFileSync(RELAY, 'utf8'));
    b.relays[0].max_on_ms = 10;
    const c = checkBoard(b);
    expect(c.ok).toBe(false);
    expect(!c.ok && c.errors.join('\n')).toMatch(/relays\[0\]\.max_on_ms/);
  });
});

describe('a relay rests its board min_off_ms before it may switch on again', () => {
  it('K1 with max_on_ms 300 and min_off_ms 4000, over MCP: on, auto-off, an "on" during the rest is rejected MIN_OFF_TIME with nothing switched; after the rest it switches', async () => {
    e = await startE2E({ sims: [{ boardFile: boardFile(RELAY, (b) => Object.assign(b.relays[0], { max_on_ms: 300, min_off_ms: 4000 })) }] });
    const rig = e.running.rigs.get(DEV_R)!;
    // Boot started a rest: wait it out by the device's own answer, not a guessed delay.
    await until(async () => {
      const r = await e!.act('relay_set', { device_id: DEV_R, channel: 1, on: true });
      return r.final.state === 'completed';
    }, 15000, 'K1 switched on once boot\'s rest is over');
    await until(() => rig.pinLevel(23) !== onLevel, 3000, 'K1 off by its max on-time');
    const writes = rig.writes(23);
    const { final } = await e.act('relay_set', { device_id: DEV_R, channel: 1, on: true, request_id: 'too-soon' });
    expect(final).toMatchObject({ state: 'rejected', error_code: 'MIN_OFF_TIME', executed: false, verified: false });
    expect(final.detail).toMatch(/minimum off-time of 4000 ms; nothing was switched: switch it on with a new command in \d+ ms/);
    expect(rig.writes(23)).toBe(writes);
    expect(rig.pinLevel(23)).not.toBe(onLevel);
    // The same request_id replays the refusal (the table's retry rule: no); a new command after the rest runs.
    const again = await e.call('relay_set', { device_id: DEV_R, channel: 1, on: true, request_id: 'too-soon' });
    expect(again.structuredContent).toMatchObject({ command_id: final.command_id, error_code: 'MIN_OFF_TIME' });
    await until(async () => (await e!.act('relay_set', { device_id: DEV_R, channel: 1, on: true })).final.state === 'completed', 15000, 'on after the rest');
  }, 60_000);
});

describe('soft limits and speed bounds are checked on the device, not only by the host', () => {
  const soft = () => boardFile(STEPPER, (b) => (b.steppers![0].soft_limits = { min_mm: 0, max_mm: 120 }));

  it('raw cmd frames past the soft limit, past travel, or above the speed bound are rejected INVALID_ARGS and nothing steps', async () => {
    e = await startE2E({ sims: [{ boardFile: soft() }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    const host = rawHost(e, DEV_S);
    host.send({ t: 'cmd', rid: 'raw-home', a: 'stepper.home', p: { axis: 'x' } });
    expect((await host.result('raw-home')).st).toBe('completed');
    const steps = rig.axis('x').steps;
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['raw-soft', { axis: 'x', mm: 150 }, /soft limits of axis x: 0\.\.120 mm/],
      ['raw-travel', { axis: 'x', mm: 250 }, /soft limits/],
      ['raw-speed', { axis: 'x', mm: 50, speed: 500 }, /speed must be a number in \[0\.25, 30\]/],
      ['raw-slow', { axis: 'x', mm: 50, speed: 1e-5 }, /speed must be a number in \[0\.25, 30\]/],
      ['raw-neg', { axis: 'x', mm: -5 }, /soft limits/],
    ];
    for (const [rid, p, why] of cases) {
      host.send({ t: 'cmd', rid, a: 'stepper.move', p });
      const r = await host.result(rid);
      expect(r).toMatchObject({ st: 'rejected', code: 'INVALID_ARGS' });
      expect(r.msg).toMatch(why);
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(rig.axis('x').steps).toBe(steps);
    expect(rig.axis('x').stepping).toBe(false);
  });

  it('the host checks the same soft limits before sending (its own check, from the same definition)', async () => {
    e = await startE2E({ sims: [{ boardFile: soft() }], device: DEV_S });
    const { final } = await e.act('stepper_move', { device_id: DEV_S, axis: 'x', target_mm: 150 });
    expect(final).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(final.detail).toMatch(/soft limits/);
  });

  it('the board check refuses soft limits outside travel', async () => {
    const { checkBoard } = await import('@proofrig/protocol');
    const b: BoardDef = JSON.parse(readFileSync(STEPPER, 'utf8'));
    b.steppers![0].soft_limits = { min_mm: -10, max_mm: 100 };
    const c = checkBoard(b);
    expect(!c.ok && c.errors.join('\n')).toMatch(/soft_limits: -10\.\.100 mm must lie within travel 0\.\.200 mm/);
  });
});

describe('the e-stop input latches every output off until an operator clears it', () => {
  const estopBoard = () =>
    boardFile(STEPPER, (b) => {
      b.estop = { pin: 18, active_low: false, pull: 'up' };
    });

  it('pressed mid-move: the move ends failed ESTOP_LATCHED, steps stop, the driver is disabled and the gripper relay drops', async () => {
    e = await startE2E({ sims: [{ boardFile: estopBoard() }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    await e.act('stepper_home', { device_id: DEV_S, axis: 'x' });
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.state).toBe('completed');
    const r = await e.call('stepper_move', { device_id: DEV_S, axis: 'x', target_mm: 150 });
    const id = (r.structuredContent as unknown as CommandStatus).command_id;
    await until(() => rig.axis('x').pos > 10, 5000, 'moving');
    rig.estop(true);
    const final = await e.waitTerminal(id);
    expect(final).toMatchObject({ state: 'failed', error_code: 'ESTOP_LATCHED' });
    expect(rig.axis('x').stepping).toBe(false);
    expect(rig.axis('x').enabled).toBe(false);
    expect(rig.pinLevel(21)).toBe(1); // gripper input back at its inactive (HIGH) level
    await until(() => e!.running.core.devices.view(DEV_S)!.interlock_events.some((x) => x.kind === 'estop'), 3000, 'estop event');
    expect(e.running.core.devices.view(DEV_S)!.state?.estop).toBe(true);
  });

  it('while latched every command but stop is rejected ESTOP_LATCHED; clearing is refused ESTOP_ACTIVE while pressed; released and cleared, commands run again', async () => {
    e = await startE2E({ sims: [{ boardFile: estopBoard() }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    const core = e.running.core;
    rig.estop(true);
    await until(() => core.devices.view(DEV_S)!.interlock_events.some((x) => x.kind === 'estop'), 3000, 'estop event');
    const relay = await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true });
    expect(relay.final).toMatchObject({ state: 'rejected', error_code: 'ESTOP_LATCHED' });
    expect(rig.pinLevel(21)).toBe(1);
    expect((await e.act('stepper_home', { device_id: DEV_S, axis: 'x' })).final.error_code).toBe('ESTOP_LATCHED');
    expect((await e.call('stop_device', { device_id: DEV_S })).structuredContent).toMatchObject({ state: 'completed' });

    const clear = async () => {
      const s = await core.submit({ device_id: DEV_S, action: 'estop.clear', args: {} });
      return (await core.waitTerminal(s.command_id, 3000))!;
    };
    expect(await clear()).toMatchObject({ state: 'rejected', error_code: 'ESTOP_ACTIVE' });
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.error_code).toBe('ESTOP_LATCHED');
    rig.estop(false);
    // Released is not cleared: the latch holds until someone clears it.
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.error_code).toBe('ESTOP_LATCHED');
    expect(await clear()).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
    expect(rig.pinLevel(21)).toBe(1); // outputs stay off until commanded
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.state).toBe('completed');
  });

  it('estop_clear over MCP without the operator scope is refused at dispatch and nothing reaches the device', async () => {
    e = await startE2E({ sims: [{ boardFile: estopBoard() }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    rig.estop(true);
    rig.estop(false);
    await until(() => e!.running.core.devices.view(DEV_S)!.interlock_events.some((x) => x.kind === 'estop'), 3000, 'estop event');
    const r = await e.call('estop_clear', { device_id: DEV_S });
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r.content)).toMatch(/OPERATOR_REQUIRED: estop_clear is operator-only.*proofrig call --operator estop_clear device_id=stepper-rig/);
    expect(e.running.core.journal.lastTerminal(DEV_S, 'estop.clear')).toHaveLength(0);
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.error_code).toBe('ESTOP_LATCHED');
  });

  it('from a shell: `proofrig call` with the agent token is refused; with the operator token it clears; a person at the host\'s terminal can confirm instead', async () => {
    let hostTyped: string | null = null;
    const hostAsked: string[] = [];
    e = await startE2E({
      sims: [{ boardFile: estopBoard() }],
      device: DEV_S,
      confirmAtHost: async (q) => (hostAsked.push(q.what), hostTyped === q.deviceId ? { ok: true } : { ok: false, why: 'no answer within 120 s' }),
    });
    const rig = e.running.rigs.get(DEV_S)!;
    const tokens = e.running.tokens!;
    const latch = async () => {
      rig.estop(true);
      rig.estop(false);
      await until(() => e!.running.core.devices.view(DEV_S)!.state?.estop === true, 3000, 'latched');
    };
    const run = async (token: string, operator: boolean) => {
      let out = '';
      const sink = { write: (c: string) => ((out += c), true) } as unknown as NodeJS.WritableStream;
      const code = await call('estop_clear', { device_id: DEV_S }, { url: e!.running.url, token, json: false, follow: true, out: sink, operator });
      return { code, out };
    };
    await latch();
    const agent = await run(tokens.agent, false);
    expect(agent.code).toBe(1);
    expect(agent.out).toMatch(/OPERATOR_REQUIRED.*did not confirm it \(no answer within 120 s\)/);
    // The operator token carries the operator scope: nobody is asked.
    hostAsked.length = 0;
    const op = await run(tokens.operator, true);
    expect(op.code).toBe(0);
    expect(hostAsked).toEqual([]);
    expect(op.out).toMatch(/completed {2}evidence=aux_contact/);
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.state).toBe('completed');
    // With the agent token, the person at the host's own terminal confirms by typing the device id.
    await latch();
    hostTyped = DEV_S;
    const typed = await run(tokens.agent, true);
    expect(hostAsked).toEqual([`clear the latched e-stop of device ${DEV_S}`]);
    expect(typed.code).toBe(0);
  });

  it('over MCP with the real operator bearer token, estop_clear is dispatched without a confirmation', async () => {
    e = await startE2E({ sims: [{ boardFile: estopBoard() }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    rig.estop(true);
    rig.estop(false);
    await until(() => e!.running.core.devices.view(DEV_S)!.state?.estop === true, 3000, 'latched');
    const op = new Client({ name: 'operator', version: '1' });
    await op.connect(mcpTransport(e.running, 'operator'));
    try {
      const r = (await op.callTool({ name: 'estop_clear', arguments: { device_id: DEV_S } })) as CallToolResult;
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ action: 'estop.clear', state: 'completed', verified: true });
    } finally {
      await op.close();
    }
    expect(e.logs.some((l) => l.evt === 'operator_action' && l.via === 'operator_scope' && l.client === 'operator')).toBe(true);
  });

  it('an e-stop already pressed at boot latches before the first command', async () => {
    e = await startE2E({ sims: [{ boardFile: estopBoard() }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    rig.estop(true);
    rig.powerLoss(50);
    await until(() => rig.bootCount === 2, 3000, 'rebooted');
    await e.waitOnline(DEV_S);
    rig.estop(false);
    expect((await e.act('relay_set', { device_id: DEV_S, channel: 1, on: true })).final.error_code).toBe('ESTOP_LATCHED');
  });
});

describe('a stalled main loop reboots the device (E.enableWatchdog) and the host says DEVICE_REBOOTED', () => {
  it('a 1.6 s busy loop in the firmware with watchdog_s 1 reboots the rig; the move in flight ends failed DEVICE_REBOOTED', async () => {
    e = await startE2E({ sims: [{ boardFile: boardFile(STEPPER, (b) => (b.watchdog_s = 1)) }], device: DEV_S });
    const rig = e.running.rigs.get(DEV_S)!;
    await e.act('stepper_home', { device_id: DEV_S, axis: 'x' });
    const r = await e.call('stepper_move', { device_id: DEV_S, axis: 'x', target_mm: 150 });
    const id = (r.structuredContent as unknown as CommandStatus).command_id;
    await until(() => rig.axis('x').pos > 5, 5000, 'moving');
    const boots = rig.bootCount;
    rig.hang(400); // shorter than the timeout: nothing happens
    expect(rig.bootCount).toBe(boots);
    rig.hang(1600);
    await until(() => rig.bootCount === boots + 1, 3000, 'watchdog reboot');
    const final = await e.waitTerminal(id);
    expect(final).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
  });

  it('without a stall the watchdog never fires (the idle loop kicks it)', async () => {
    e = await startE2E({ sims: [{ boardFile: boardFile(RELAY, (b) => (b.watchdog_s = 1)) }] });
    const rig = e.running.rigs.get(DEV_R)!;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await e.act('relay_set', { device_id: DEV_R, channel: 1, on: true })).final.state).toBe('completed');
    expect(rig.bootCount).toBe(1);
  });
});
