// The stepper rig end to end (seed 002): the real MCP client → MCP server → host core → real
// WebSocket → simulated slide running the built firmware file. A move is done when the encoder
// says so, and a stall is reported as a stall.
import { afterEach, describe, expect, it } from 'vitest';
import { picked, rebootTest, tiersUnderTest, type Tier } from './helpers/engines.js';
import { readFileSync } from 'node:fs';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BoardDef } from '@proofrig/protocol';
import { startE2E, until, type E2E } from './helpers/e2e.js';
import type { CommandStatus } from '../host/src/core/command-view.js';

const STEPPER_BOARD = new URL('../boards/stepper-rig.json', import.meta.url).pathname;
const board: BoardDef = JSON.parse(readFileSync(STEPPER_BOARD, 'utf8'));
const ax = board.steppers![0];
const DEV = 'stepper-rig';

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

async function homed(engine: Tier, faults: string[] = []): Promise<E2E> {
  const h = await startE2E({ engine, sims: [{ boardFile: STEPPER_BOARD }], faults, device: DEV });
  e = h; // closed by afterEach even when homing fails
  const { final } = await h.act('stepper_home', { device_id: DEV, axis: 'x' });
  expect(final, e!.story(final)).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
  return h;
}

const sc = (r: CallToolResult) => r.structuredContent as unknown as CommandStatus;

// At chip speed (the interpreter as slow as an ESP32, docs/chip-speed.md) only the scenarios without a
// long motion run: today's firmware cannot follow a 30 mm/s move at 16 ns per instruction. Its
// encoder callbacks (750/s) and 20 ms step tick need more CPU than the chip has: a 150 mm move ran on
// to the hard stop at 202 mm while the device sent nothing for 6.4 s, and the host rightly ended it
// timeout (outcome unknown). Measured per edge and per tick (docs/chip-speed.md, scripts/stepper-cost.mjs):
// after making both cheaper the tick alone still takes ~60 % of the chip and the edges at 30 mm/s
// most of the rest, and these specs still ended timeout at chip speed. The firmware no longer lets a
// late tick run the steps on past the target (firmware-stepper.test.ts, "timers starved").
// The power cut mid-move runs at chip speed in e2e-power-cycle.
describe.each(tiersUnderTest())('on the %s engine', (engine) => {
  describe('a move ends completed only when the encoder agrees', () => {
    picked(engine, false)('a move to 150 mm ends completed with evidence encoder and a measured position within tolerance', async () => {
      e = await homed(engine);
      const { first, final } = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 150 });
      expect(first).toMatchObject({ executed: false, terminal: false });
      expect(final, e!.story(final)).toMatchObject({ state: 'completed', verified: true, evidence: 'encoder', executed: true });
      expect(Math.abs(final.position_mm! - 150)).toBeLessThanOrEqual(ax.tolerance_mm);
      expect(Math.abs(e.running.rigs.get(DEV)!.axis('x').pos - 150)).toBeLessThanOrEqual(ax.tolerance_mm);
      expect(final.elapsed_ms).toBeLessThan(final.deadline_ms!);
    });

    picked(engine, false)('seed 002: an obstruction at 70 mm on the way to 150 mm ends failed MOTOR_STALL near 70 mm, within the deadline, and the motor stops stepping', async () => {
      e = await homed(engine, [`${DEV}:x:stall@70`]);
      const rig = e.running.rigs.get(DEV)!;
      const { final } = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 150 });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'MOTOR_STALL', verified: false });
      expect(final.position_mm!).toBeGreaterThan(69);
      expect(final.position_mm!).toBeLessThan(71);
      expect(final.detail).toMatch(/FAULT/);
      expect(final.elapsed_ms).toBeLessThan(final.deadline_ms!);
      expect(rig.axis('x').stepping).toBe(false);
      const steps = rig.axis('x').steps;
      await new Promise((r) => setTimeout(r, 300));
      expect(rig.axis('x').steps).toBe(steps);
    });

    picked(engine, false)('missed steps beyond tolerance end failed POSITION_ERROR with both positions', async () => {
      e = await homed(engine, [`${DEV}:x:missed_steps@5%`]);
      const { final } = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 100 });
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'POSITION_ERROR', evidence: 'encoder', verified: false });
      expect(final.position_mm!).toBeGreaterThan(90);
      expect(final.position_mm!).toBeLessThan(99);
      expect(final.detail).toMatch(/100/);
    });

    picked(engine, true)('a dead encoder never ends completed', async () => {
      e = await homed(engine);
      e.running.rigs.get(DEV)!.setFault('x', 'encoder_dead');
      const { final } = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 20 });
      // the motor stepped, the encoder counted nothing: NO_FEEDBACK (the position is unknown), as the README says
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'NO_FEEDBACK', evidence: 'encoder', verified: false, executed: true });
      expect(final.detail).toMatch(/^x: encoder counted -?[01] while \d+ steps \([\d.]+ mm\) were issued; check the encoder wiring; position unknown$/);
    });
  });

  describe('a limit switch stops the axis', () => {
    picked(engine, true)('a move towards a closed limit switch ends failed LIMIT_HIT, and the motor is not stepping', async () => {
      e = await homed(engine);
      const rig = e.running.rigs.get(DEV)!;
      rig.setFault('x', 'limit_stuck');
      const { final } = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 70 });
      expect(final, e.story(final)).toMatchObject({ state: 'failed', error_code: 'LIMIT_HIT', verified: false });
      expect(final.detail).toMatch(/limit/i);
      expect(rig.axis('x').stepping).toBe(false);
      expect(rig.axis('x').pos).toBeLessThan(70);
    });
  });

  describe('refused before any step', () => {
    picked(engine, false)('a target outside travel is rejected with INVALID_ARGS and the step pin never runs', async () => {
      e = await homed(engine);
      const rig = e.running.rigs.get(DEV)!;
      const steps = rig.axis('x').steps;
      let started = false;
      rig.on('motion', (what: string) => (started = started || what === 'start'));
      const r = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 250 }));
      expect(r).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
      expect(r.detail).toMatch(/0..200 mm/);
      await new Promise((res) => setTimeout(res, 200));
      expect(started).toBe(false);
      expect(rig.axis('x').steps).toBe(steps);
    });

    picked(engine, true)('a move before homing is rejected NOT_HOMED by the device', async () => {
      e = await startE2E({ engine, sims: [{ boardFile: STEPPER_BOARD }], device: DEV });
      const { final } = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 10 });
      expect(final, e!.story(final)).toMatchObject({ state: 'rejected', error_code: 'NOT_HOMED', executed: false });
    });
  });

  describe('stop and cancel', () => {
    picked(engine, false)('stop_device during a move stops it; the move ends cancelled with the measured position; once the stop has its result the axis takes the next command', async () => {
      e = await homed(engine);
      const rig = e.running.rigs.get(DEV)!;
      const move = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 150 }));
      await until(() => rig.axis('x').pos > 20, 5000, 'moving');
      const stop = sc(await e.call('stop_device', { device_id: DEV }));
      expect(stop).toMatchObject({ state: 'completed', evidence: 'encoder', verified: true });
      const final = await e.waitTerminal(move.command_id);
      expect(final, e!.story(final)).toMatchObject({ state: 'cancelled', error_code: 'CANCELLED', terminal: true, verified: false });
      expect(final.position_mm!).toBeGreaterThan(20);
      expect(final.position_mm!).toBeLessThan(150);
      expect(rig.axis('x').stepping).toBe(false);
      expect(Math.abs(final.position_mm! - rig.axis('x').pos)).toBeLessThanOrEqual(ax.tolerance_mm);
      // The stop is over: the axis is not "being stopped" any more (on Espruino it once stayed so until a
      // reboot, refusing every command BUSY). Homing, which a cancelled move may ask for (a starved
      // interpreter can miss encoder edges and then forget the home), is taken and completes.
      const next = sc(await e.call('stepper_home', { device_id: DEV, axis: 'x' }));
      const after = await e.waitTerminal(next.command_id);
      expect(after, e!.story(after)).toMatchObject({ state: 'completed' });
      expect(rig.axis('x').pos).toBeLessThanOrEqual(ax.tolerance_mm);
    });

    picked(engine, false)('cancel_action on a running move stops its axis and reports the move cancelled', async () => {
      e = await homed(engine);
      const rig = e.running.rigs.get(DEV)!;
      const move = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 120 }));
      await until(() => rig.axis('x').pos > 10, 5000, 'moving');
      const r = (await e.call('cancel_action', { command_id: move.command_id })).structuredContent as {
        command: CommandStatus;
        cancel_requested: boolean;
        reason: string | null;
      };
      expect({ cancel_requested: r.cancel_requested, reason: r.reason, command: r.command.state }).toMatchObject({ cancel_requested: true, reason: null });
      expect(r.command).toMatchObject({ state: 'cancelled', error_code: 'CANCELLED', terminal: true });
      expect(rig.axis('x').stepping).toBe(false);
    });
  });

  describe('retries and reboots', () => {
    picked(engine, false)('a repeated request_id of a move does not move the slide twice', async () => {
      e = await homed(engine);
      const rig = e.running.rigs.get(DEV)!;
      const a = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 30, request_id: 'move-30' });
      expect(a.final.state).toBe('completed');
      // Move elsewhere, then repeat the first request: replaying it must not drive back to 30 mm.
      expect((await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 10 })).final).toMatchObject({ state: 'completed' });
      const steps = rig.axis('x').steps;
      const b = await e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: 30, request_id: 'move-30' });
      expect(b.first.command_id).toBe(a.first.command_id);
      expect(rig.axis('x').steps).toBe(steps);
      // And the device itself replays a duplicate frame without stepping.
      e.running.core.devices.session(DEV)!.send({ t: 'cmd', rid: 'move-30', a: 'stepper.move', p: { axis: 'x', mm: 30 } });
      await new Promise((r) => setTimeout(r, 400));
      expect(rig.axis('x').steps).toBe(steps);
      expect(Math.abs(rig.axis('x').pos - 10)).toBeLessThanOrEqual(ax.tolerance_mm);
    });

    rebootTest(engine, false)('a power loss mid-move ends DEVICE_REBOOTED and the host does not resend the move', async () => {
      e = await homed(engine);
      const rig = e.running.rigs.get(DEV)!;
      const move = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 150 }));
      await until(() => rig.axis('x').pos > 15, 5000, 'moving');
      rig.powerLoss(200);
      const killedAt = rig.axis('x').pos;
      const final = await e.waitTerminal(move.command_id);
      expect(final, e!.story(final)).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
      // The position reported is the last one the encoder measured before the cut: never beyond
      // where the carriage stopped, and on the vm at most one progress period (250 ms at 30 mm/s)
      // behind it. The interpreter's progress frames run late when its process is starved of CPU
      // (17 mm behind measured at load 16 on 2 cores), so there only the first half is asserted.
      expect(final.position_mm!).toBeLessThanOrEqual(killedAt + ax.tolerance_mm);
      if (engine === 'vm') expect(Math.abs(final.position_mm! - killedAt)).toBeLessThanOrEqual(7.5 + 0.5);
      await e.waitOnline(DEV);
      const pos = rig.axis('x').pos;
      await new Promise((r) => setTimeout(r, 800));
      expect(rig.axis('x').stepping).toBe(false);
      expect(rig.axis('x').pos).toBe(pos);
      // The agent must look before moving that axis again.
      const again = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 150 }));
      expect(again).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED' });
    });
  });

  describe('progress', () => {
    picked(engine, false)('get_action_status forwards device progress as MCP progress notifications and reports the position while running', async () => {
      e = await homed(engine);
      const move = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 90 }));
      const notes: { progress: number; total?: number; message?: string }[] = [];
      const seenRunning: CommandStatus[] = [];
      for (;;) {
        const r = await e.client.callTool(
          { name: 'get_action_status', arguments: { command_id: move.command_id, wait_ms: 500 } },
          undefined,
          { onprogress: (p) => notes.push(p) },
        );
        const s = sc(r as CallToolResult);
        if (!s.terminal) seenRunning.push(s);
        if (s.terminal) break;
      }
      expect(notes.length).toBeGreaterThan(1);
      for (let i = 1; i < notes.length; i++) expect(notes[i].progress).toBeGreaterThan(notes[i - 1].progress);
      expect(notes.some((n) => /mm/.test(n.message ?? ''))).toBe(true);
      const mid = seenRunning.filter((s) => s.position_mm !== null);
      expect(mid.length).toBeGreaterThan(0);
      expect(mid.every((s) => s.estimated_remaining_seconds !== null)).toBe(true);
    });
  });
});
