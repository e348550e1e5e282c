// The walking skeleton, end to end: the real MCP client → MCP server → host core → real
// WebSocket → simulated rig running the built firmware file (firmware/dist/proofrig.js).
import { afterEach, describe, expect, it } from 'vitest';
import { SUITE_PHASE, picked, rebootTest, tiersUnderTest } from './helpers/engines.js';
import { readFileSync } from 'node:fs';
import { SimRig } from '@proofrig/sim';
import { FIRMWARE_FILE } from '../host/src/paths.js';
import { DEVICE_PATH, type BoardDef } from '@proofrig/protocol';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';

const board: BoardDef = JSON.parse(readFileSync(RELAY_BOARD, 'utf8'));
const pinOf = (ch: number) => board.relays.find((r) => r.ch === ch)!.pin;

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

describe.each(tiersUnderTest())('on the %s engine', (engine) => {
  describe('a relay ends completed only with evidence', () => {
    picked(engine, true)('channel 1 (aux contact wired) ends completed with evidence aux_contact, and the contact really closed', async () => {
      e = await startE2E({ engine });
      const { first, final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
      // the tool waits (at most 1.5 s) for the device's first word, which for a relay is its result (a
      // relay sends no ack: it ends within its settle time); at chip speed a command takes 0.5-1.5 s
      // (docs/chip-speed.md), so there the first answer may still be 'sent'
      if (engine === 'chip-speed' && first.state === 'sent') expect(first).toMatchObject({ accepted: false, executed: false, terminal: false });
      else expect(first, e!.story(first)).toMatchObject({ state: 'completed', terminal: true, evidence: 'aux_contact' });
      expect(final, e!.story(final)).toMatchObject({ state: 'completed', terminal: true, accepted: true, executed: true, verified: true, evidence: 'aux_contact', error_code: null });
      expect(final.device_state!.relays.find((r) => r.ch === 1)).toEqual({ ch: 1, cmd: true, pin: true, aux: true });
      expect(final.device_state_observed_at).not.toBeNull();
      expect(e.running.rigs.get(RIG)!.relay(1).contactClosed).toBe(true);
    });

    picked(engine, false)('channel 3 (read back at the pin only) ends completed with evidence pin_readback', async () => {
      e = await startE2E({ engine });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: true });
      expect(final, e!.story(final)).toMatchObject({ state: 'completed', verified: true, evidence: 'pin_readback' });
      expect(final.device_state!.relays.find((r) => r.ch === 3)).toMatchObject({ cmd: true, pin: true, aux: null });
    });

    picked(engine, true)('channel 4 (no feedback) ends unverified with evidence none, never completed', async () => {
      e = await startE2E({ engine });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 4, on: true });
      expect(final, e!.story(final)).toMatchObject({ state: 'unverified', executed: true, verified: false, evidence: 'none', error_code: null });
      expect(e.running.rigs.get(RIG)!.relay(4).energised).toBe(true);
    });

    picked(engine, true)('coil_open on channel 2 ends failed with NO_FEEDBACK', async () => {
      e = await startE2E({ engine, faults: [`${RIG}:relay2:coil_open`] });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 2, on: true });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', executed: true, verified: false, evidence: 'aux_contact', error_code: 'NO_FEEDBACK' });
      expect(final.detail).toMatch(/GPIO35/);
    });

    picked(engine, false)('a welded contact on channel 1 ends failed with NO_FEEDBACK when switching off', async () => {
      e = await startE2E({ engine, faults: [`${RIG}:relay1:welded`] });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: false });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK', verified: false });
    });

    picked(engine, true)('pin_stuck_low ends failed with READBACK_MISMATCH', async () => {
      e = await startE2E({ engine, faults: [`${RIG}:relay3:pin_stuck_low`] });
      // Active-low module: "off" writes 1, the stuck pin reads 0.
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: false });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', verified: false, evidence: 'pin_readback', error_code: 'READBACK_MISMATCH' });
    });

    picked(engine, false)('pin_stuck_high ends failed with READBACK_MISMATCH', async () => {
      e = await startE2E({ engine, faults: [`${RIG}:relay1:pin_stuck_high`] });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'READBACK_MISMATCH', verified: false });
    });
  });

  describe('refused before anything is sent', () => {
    picked(engine, false)('an unknown device is rejected with DEVICE_OFFLINE and no pin of the rig moves', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      const writes = board.relays.map((r) => rig.writes(r.pin));
      const r = await e.call('relay_set', { device_id: 'no-such-rig', channel: 1, on: true });
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ state: 'rejected', terminal: true, error_code: 'DEVICE_OFFLINE', executed: false, verified: false });
      expect(board.relays.map((x) => rig.writes(x.pin))).toEqual(writes);
    });

    picked(engine, false)('an offline device is rejected with DEVICE_OFFLINE after at most the bounded reconnect wait, and nothing reaches it when it returns', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      const bootWrites = rig.writes(pinOf(1)); // what one boot does to the pin (drive it off)
      rig.powerLoss(8000); // longer than the 5 s an action waits for a device that just dropped
      await until(() => e!.running.core.devices.view(RIG)!.online === false, 3000, 'offline');
      const t0 = Date.now();
      const r = await e.call('relay_set', { device_id: RIG, channel: 1, on: true });
      expect(Date.now() - t0).toBeLessThan(6500);
      expect(r.structuredContent).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
      expect(String((r.structuredContent as { detail: string }).detail)).toMatch(/offline.*nothing was sent/);
      const before = rig.writes(pinOf(1));
      await until(() => rig.bootCount === 2, 10000, 'reboot');
      await e.waitOnline();
      await new Promise((res) => setTimeout(res, 300));
      expect(rig.writes(pinOf(1))).toBe(before + bootWrites); // only the boot-time "all off"
      expect(e.running.core.journal.open()).toHaveLength(0);
    }, 40000);

    picked(engine, false)('a channel the board lacks is rejected with INVALID_ARGS naming the valid channels', async () => {
      e = await startE2E({ engine });
      const r = await e.call('relay_set', { device_id: RIG, channel: 9, on: true });
      expect(r.structuredContent).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
      expect((r.structuredContent as { detail: string }).detail).toMatch(/valid channels: 1, 2, 3, 4/);
    });
  });

  describe('a repeated request_id drives the pin once', () => {
    picked(engine, false)('the same request_id through MCP returns the same command and the pin is written once', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      const before = rig.writes(pinOf(1));
      const a = await e.act('relay_set', { device_id: RIG, channel: 1, on: true, request_id: 'agent-turn-7' });
      const b = await e.act('relay_set', { device_id: RIG, channel: 1, on: true, request_id: 'agent-turn-7' });
      expect(b.first.command_id).toBe(a.first.command_id);
      expect(b.final.state).toBe('completed');
      expect(rig.writes(pinOf(1))).toBe(before + 1);
    });

    picked(engine, false)('a duplicate command frame reaching the device replays the first result and never touches the pin', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: true });
      const writes = rig.writes(pinOf(3));
      const frames: string[] = [];
      const session = e.running.core.devices.session(RIG)!;
      const orig = session.link.onmessage!;
      session.link.onmessage = (t) => {
        frames.push(t);
        orig(t);
      };
      session.send({ t: 'cmd', rid: final.request_id, a: 'relay.set', p: { ch: 3, on: true } });
      await until(() => frames.some((f) => f.includes('"t":"res"')), 3000, 'replayed result');
      const replay = JSON.parse(frames.find((f) => f.includes('"t":"res"'))!);
      expect(replay).toMatchObject({ rid: final.request_id, st: 'completed', ev: 'pin_readback', ver: true });
      expect(rig.writes(pinOf(3))).toBe(writes);
      expect((await e.waitTerminal(final.command_id)).state).toBe('completed');
    });
  });

  describe('nothing is lost across power loss, link drops and restarts', () => {
    rebootTest(engine)('a power loss in the middle of a command ends it failed with DEVICE_REBOOTED', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      const bootBefore = e.running.core.devices.view(RIG)!.boot_id;
      rig.on('write', (gpio: number) => {
        if (gpio === pinOf(2) && rig.bootCount === 1) rig.powerLoss(200);
      });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 2, on: true });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED', executed: false, verified: false });
      expect(final.detail).toMatch(/restarted/);
      expect(e.running.core.devices.view(RIG)!.boot_id).not.toBe(bootBefore);
    });

    picked(engine, true)('a link drop between the result and its confirmation loses nothing: the result arrives after reconnect, once', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      let dropped = false;
      rig.on('write', (gpio: number) => {
        if (gpio === pinOf(1) && !dropped) {
          dropped = true;
          rig.linkDrop({ direction: 'both', ms: 1000 });
        }
      });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
      expect(dropped).toBe(true);
      expect(final, e.story(final)).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
      const events = e.running.core.commands.history(final.command_id);
      expect(events.filter((x) => x.state === 'completed')).toHaveLength(1);
      expect(e.logs.filter((l) => l.command_id === final.command_id && l.phase === 'terminal')).toHaveLength(1);
      expect(e.logs.some((l) => l.evt === 'device_offline')).toBe(true);
    });

    picked(engine, false)('a lost confirmation makes the device re-send its result after reconnect; the host records it once', async () => {
      e = await startE2E({ engine });
      const rig = e.running.rigs.get(RIG)!;
      let dropped = false;
      rig.on('write', (gpio: number) => {
        if (gpio === pinOf(3) && !dropped) {
          dropped = true;
          rig.linkDrop({ direction: 'to_device', ms: 800 });
        }
      });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: true });
      expect(final.state).toBe('completed');
      // The device reconnects (it heard nothing from the host) and re-sends the unconfirmed result.
      await until(() => e!.logs.filter((l) => l.evt === 'device_online').length >= 2, 8000, 'reconnect');
      await new Promise((r) => setTimeout(r, 300));
      expect(e.running.core.commands.history(final.command_id).filter((x) => x.state === 'completed')).toHaveLength(1);
      expect(e.logs.filter((l) => l.command_id === final.command_id && l.phase === 'terminal')).toHaveLength(1);
    });

    picked(engine, false)('after a host restart the journal still answers get_action_status for earlier commands', async () => {
      e = await startE2E({ engine });
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
      const rejected = (await e.call('relay_set', { device_id: 'ghost', channel: 1, on: true })).structuredContent as { command_id: string };
      await e.restart();
      const r1 = await e.call('get_action_status', { command_id: final.command_id, wait_ms: 0 });
      expect(r1.structuredContent).toMatchObject({ command_id: final.command_id, state: 'completed', evidence: 'aux_contact', verified: true });
      const r2 = await e.call('get_action_status', { command_id: rejected.command_id, wait_ms: 0 });
      expect(r2.structuredContent).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    });
  });
});

describe.runIf(SUITE_PHASE)('device authentication', () => {
  it('a device with the wrong secret is refused and never comes online; the secret is not logged', async () => {
    e = await startE2E();
    const real = e.running.core.journal.device(RIG)!;
    e.running.core.provision('impostor', 'f'.repeat(64), board);
    const lines: string[] = [];
    const fake = new SimRig({
      firmwarePath: FIRMWARE_FILE,
      config: { dev: 'impostor', secret: '0'.repeat(64), host: `ws://127.0.0.1:${e.running.http.port}${DEVICE_PATH}`, board },
      console: (l) => lines.push(l),
      seed: 3,
    });
    try {
      fake.boot();
      await until(() => e!.logs.some((l) => l.evt === 'device_refused' && l.dev === 'impostor'), 5000, 'refusal');
      expect(e.logs.find((l) => l.evt === 'device_refused')).toMatchObject({ code: 'AUTH_FAILED' });
      expect(e.running.core.devices.view('impostor')!.online).toBe(false);
      const r = await e.call('relay_set', { device_id: 'impostor', channel: 1, on: true });
      expect(r.structuredContent).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
      await until(() => lines.some((l) => /AUTH_FAILED/.test(l)), 3000, 'firmware logs the refusal');
      const all = JSON.stringify(e.logs);
      expect(all).not.toContain(real.secret);
      expect(all).not.toContain('f'.repeat(64));
    } finally {
      fake.shutdown();
    }
  });
});
