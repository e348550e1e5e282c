// The work each example board does while npm run bench:memory watches its interpreter's memory
// (bench/src/espruino-memory.ts): every kind of command the board has, through the host core, each
// outcome checked as it arrives. The relay rig's load is bench/src/memory-load.ts's mixedCommands.
import type { Running } from '@proofrig/host/tools';
import type { CommandStatus } from '@proofrig/host/core';
import { memoryNow, type Mem } from './memory-load.js';

/** Commands sent, and how many ended failed, by error code (an honest verdict of a loaded or emulated machine, counted). */
export interface WorkTotals {
  commands: number;
  failed: Record<string, number>;
}

type Step = { action: string; args: Record<string, unknown>; ok: (c: CommandStatus) => boolean; wait?: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const is = (...states: string[]) => (c: CommandStatus) => states.includes(c.state);
/** An observed output may also end failed NO_FEEDBACK when a loaded machine stretches the rig model's timing. */
const observed = (c: CommandStatus) => c.state === 'completed' || (c.state === 'failed' && c.error_code === 'NO_FEEDBACK');
/**
 * A move may also end failed POSITION_ERROR: under qemu-i386 (the ESP32 JsVar format on a kernel
 * without 32-bit support) the interpreter misses encoder edges. Every move starts from a fresh home.
 */
const moved = (c: CommandStatus) => c.state === 'completed' || (c.state === 'failed' && c.error_code === 'POSITION_ERROR');

/** One round on the stepper rig: home, a move, the gripper relay on, home, a move back, the relay off, a stop. */
function stepperRound(): Step[] {
  const home: Step = { action: 'stepper.home', args: { axis: 'x' }, ok: is('completed') };
  return [
    home,
    { action: 'stepper.move', args: { axis: 'x', mm: 60, speed: 10 }, ok: moved },
    { action: 'relay.set', args: { ch: 1, on: true }, ok: observed },
    home,
    { action: 'stepper.move', args: { axis: 'x', mm: 15, speed: 10 }, ok: moved },
    { action: 'relay.set', args: { ch: 1, on: false }, ok: observed },
    { action: 'stop', args: {}, ok: is('completed', 'unverified') },
  ];
}

/** One round on the climate rig: sensor supply on, every sensor read, heater and pump on and off, the fan at 60 % and off, the servo to two angles. */
function climateRound(): Step[] {
  const read = (id: string): Step => ({ action: 'sensor.read', args: { id }, ok: is('completed') });
  return [
    { action: 'relay.set', args: { ch: 3, on: true }, ok: is('completed'), wait: 600 },
    read('air_temp'),
    read('air_rh'),
    read('heater_current'),
    read('heater_amps'),
    { action: 'relay.set', args: { ch: 1, on: true }, ok: observed },
    { action: 'relay.set', args: { ch: 2, on: true }, ok: observed },
    { action: 'fan.set', args: { id: 'fan', duty: 60 }, ok: observed },
    { action: 'servo.set', args: { id: 'vent', deg: 90 }, ok: is('unverified') },
    { action: 'fan.set', args: { id: 'fan', duty: 0 }, ok: observed },
    { action: 'servo.set', args: { id: 'vent', deg: 20 }, ok: is('unverified') },
    { action: 'relay.set', args: { ch: 1, on: false }, ok: observed },
    { action: 'relay.set', args: { ch: 2, on: false }, ok: observed },
    { action: 'relay.set', args: { ch: 3, on: false }, ok: is('completed') },
  ];
}

/** Each board's work, and how many rounds: enough commands to fill the 32-slot dedupe ring (its results, with their snapshots, stay in memory). */
export const BOARD_WORK: Record<string, { what: string; rounds: number; round: () => Step[] }> = {
  'stepper-rig': { rounds: 5, what: 'per round: stepper.home and a move to 60 mm at 10 mm/s, the gripper relay (aux contact) on, stepper.home and a move to 15 mm, the relay off, stop', round: stepperRound },
  'climate-rig': {
    what: 'per round: the sensor supply relay on, sensor.read of the SHT3x temperature and humidity, the ACS712 and the INA219, heater (load current) and pump (aux contact) on and off, fan.set 60 % and 0 % (tachometer), servo.set 90° and 20°',
    rounds: 3,
    round: climateRound,
  },
};

/**
 * Run `rounds` rounds of the board's work one command at a time; `peek` gets a memory reading after
 * every command and every 100 ms while one runs (a move, a fan's spin-up).
 */
export async function boardWork(running: Running, rig: string, rounds: number, peek: (m: Mem) => void): Promise<WorkTotals> {
  const work = BOARD_WORK[rig];
  if (!work) throw new Error(`no memory work for board ${rig}`);
  const core = running.core;
  const totals: WorkTotals = { commands: 0, failed: {} };
  for (let r = 0; r < rounds; r++) {
    for (const s of work.round()) {
      let final: CommandStatus | undefined;
      // An axis still being stopped refuses the next command BUSY, which says to ask again: asked again after 200 ms.
      for (let tries = 0; tries < 50 && (!final || (final.state === 'rejected' && final.error_code === 'BUSY')); tries++) {
        if (final) await sleep(200);
        const first = await core.submit({ device_id: rig, action: s.action, args: s.args });
        let done = false;
        const watching = (async () => {
          while (!done) {
            peek(await memoryNow(running, rig));
            await sleep(100);
          }
        })();
        final = await core.waitTerminal(first.command_id, 60000).finally(() => (done = true));
        await watching;
      }
      if (!final || !s.ok(final)) throw new Error(`${rig}: ${s.action} ${JSON.stringify(s.args)} ended ${JSON.stringify(final)}`);
      totals.commands++;
      if (final.state === 'failed') totals.failed[final.error_code!] = (totals.failed[final.error_code!] ?? 0) + 1;
      // After a failed move the host refuses the axis until its real state was read (STATE_READ_REQUIRED): read it, as an agent would.
      if (final.state === 'failed' && s.action === 'stepper.move') await core.deviceStatus(rig, true);
      peek(await memoryNow(running, rig));
      if (s.wait) await sleep(s.wait);
    }
  }
  return totals;
}
