// A power cycle of the real Espruino interpreter (SIGKILL mid-command, a new process on the same
// Storage) must be seen by the host as a reboot: the move it cut ends failed DEVICE_REBOOTED at once
// with the position the encoder measured, and a relay command caught by the kill acts at most once.
// Runs only on the Espruino engine: the vm's E.hwRand carries on across boots and hides the bug this
// guards against (a boot id that repeats after every boot; issue 8, item 3).
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { BoardDef } from '@proofrig/protocol';
import { startE2E, until, type E2E } from './helpers/e2e.js';
import { BOOT_ID_REPEATS_ON_ESPRUINO, ESPRUINO_AVAILABLE, enginesUnderTest, interpreterTiers } from './helpers/engines.js';

const STEPPER_BOARD = new URL('../boards/stepper-rig.json', import.meta.url).pathname;
const board: BoardDef = JSON.parse(readFileSync(STEPPER_BOARD, 'utf8'));
const ax = board.steppers![0]!;
const gripper = board.relays[0]!;
const DEV = 'stepper-rig';

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

enginesUnderTest(); // prints the one-line notice when the tier is skipped
const tiers = interpreterTiers(); // registered (and skipped) without the interpreter too
describe.skipIf(!ESPRUINO_AVAILABLE).each(tiers)('a power cycle of the real interpreter (%s engine)', (engine) => {
  // Fails on firmware whose boot id repeats after every boot (E.hwRand restarts its sequence): marked
  // `fails` until the boot-id fix merges, then it must pass (see BOOT_ID_REPEATS_ON_ESPRUINO).
  const test = BOOT_ID_REPEATS_ON_ESPRUINO ? it.fails : it;
  test('a kill at ~30 mm of a 150 mm move ends it failed DEVICE_REBOOTED at once with the measured position, and a relay command caught by a kill acts at most once', async () => {
    e = await startE2E({ engine, sims: [{ boardFile: STEPPER_BOARD }], device: DEV });
    const rig = e.running.rigs.get(DEV)!;
    const home = await e.act('stepper_home', { device_id: DEV, axis: 'x' });
    expect(home.final.state).toBe('completed');
    const bootBefore = e.running.core.devices.view(DEV)!.boot_id;

    const r = await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 150 });
    const move = (r.structuredContent as { command_id: string }).command_id;
    await until(() => rig.axis('x').pos >= 30, 20000, 'the carriage at 30 mm');
    rig.powerLoss(300);
    const killedAt = rig.axis('x').pos;
    const tKill = Date.now();
    const final = await e.waitTerminal(move, 20000);
    const afterKillMs = Date.now() - tKill;
    console.log(`move after the kill at ${killedAt.toFixed(2)} mm: ${final.state} ${final.error_code} at ${final.position_mm} mm, ${afterKillMs} ms after the kill; boot ${bootBefore} -> ${e.running.core.devices.view(DEV)!.boot_id}; detail: ${final.detail}`);
    expect(final).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
    // At reconnect, not at the move's deadline: the new boot's device_online, then the verdict at once
    // (a chip-speed boot alone takes 8-9 s, so the time from the kill says little there).
    const online = e.logs.find((l) => l.evt === 'device_online' && l.device_id === DEV && l.previous_boot === bootBefore);
    expect(online).toBeDefined();
    const endedAt = e.running.core.commands.history(move).at(-1)!.at;
    expect(endedAt - (online!.time as number)).toBeLessThan(2000);
    if (engine !== 'chip-speed') expect(afterKillMs).toBeLessThan(8000);
    // The position is the last one the encoder measured and reported before the cut: never beyond
    // where the carriage really stopped. How far behind depends on when the last progress frame
    // left, which on a starved interpreter is late (within one 250 ms progress period on the vm, see
    // e2e-stepper "a power loss mid-move"). At chip speed the device may not have got one progress
    // frame out before the cut (the step train and encoder take its CPU, docs/chip-speed.md): then
    // the host reports no position (null) rather than one it never received.
    if (engine === 'chip-speed') {
      if (final.position_mm !== null) expect(final.position_mm).toBeGreaterThanOrEqual(0);
    } else {
      expect(final.position_mm).not.toBeNull();
      expect(final.position_mm!).toBeGreaterThan(0);
    }
    if (final.position_mm !== null) expect(final.position_mm).toBeLessThanOrEqual(killedAt + ax.tolerance_mm);
    expect(final.detail ?? '').not.toMatch(/not executed as far as the device remembers/);

    // The relay: killed right when the device drives the coil; count real coil energisations.
    await e.waitOnline(DEV, 15000);
    const onLevel = gripper.active_low ? 0 : 1;
    let actuations = 0;
    rig.pins.onChange((pin, level) => {
      if (pin === gripper.pin && level === onLevel && rig.pins.isPowered) actuations++;
    });
    let killed = false;
    rig.on('write', (gpio: number, level: number) => {
      if (gpio === gripper.pin && level === onLevel && !killed) {
        killed = true;
        rig.powerLoss(300);
      }
    });
    const relay = await e.call('relay_set', { device_id: DEV, channel: gripper.ch, on: true });
    const rid = (relay.structuredContent as { command_id: string }).command_id;
    const rfinal = await e.waitTerminal(rid, 20000);
    await new Promise((res) => setTimeout(res, 1500));
    console.log(`relay after the kill: ${rfinal.state} ${rfinal.error_code}; coil energised ${actuations} time(s)`);
    expect(killed).toBe(true);
    expect(actuations).toBeLessThanOrEqual(1);
    expect(rfinal).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED' });
  }, 90000);
});
