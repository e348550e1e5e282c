// The built firmware's fans and servos in the vm fake, on a virtual clock: every fan starts stopped;
// the speed is measured from the tach edges of the window after spin-up (exactly, from the first to
// the last edge), judged against the curve; the e-stop stops the fans and the servo pulses and
// refuses fan.set and servo.set while latched.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recvValidated as recv, useBuiltFirmware } from './helpers/firmware-build';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { loadFirmware, type Rig } from '../firmware/test/espruino-fake';

const root = resolve(__dirname, '..');
const climate = JSON.parse(readFileSync(join(root, 'boards/climate-rig.json'), 'utf8')) as BoardDef & { $schema?: string };
const ESTOP = 4;
// The fake has no I2C or ADC: the climate rig's relays (the heater, proven by its INA219's current on
// the rig, read back at its pin here) and PWM outputs, and an e-stop input.
const relays = climate.relays.map((r) => (r.feedback.kind === 'load_current' ? { ...r, feedback: { kind: 'pin_readback' as const } } : r));
const board: BoardDef = { ...climate, relays, sensors: undefined, i2c: undefined, estop: { pin: ESTOP, active_low: false, pull: 'up' } };
delete (board as { $schema?: string }).$schema;
const FAN = 27;
const TACH = 39;
const SERVO = 13;
const config: RigConfig = { dev: 'rig-1', secret: '5e'.repeat(32), host: 'ws://10.0.0.2:8787/device', board };
const builtFirmware = useBuiltFirmware();

function boot() {
  const rig = loadFirmware(config, builtFirmware());
  rig.input(ESTOP, 0);
  rig.input(TACH, 1); // the pull-up, no fan turning
  const { s } = rig.connectUp(60000);
  return { rig, s };
}

/** A fan at `rpm` with 2 pulses per turn for `ms`: the tach changes level every 60000 / rpm / 4 ms. */
function spin(rig: Rig, rpm: number, ms: number): void {
  const half = 60000 / rpm / 2 / 2;
  for (let t = 0; t + half <= ms; t += half) {
    rig.advance(half);
    rig.input(TACH, rig.pins[TACH] ? 0 : 1);
  }
}

const fanSet = (rid: string, duty: number) => ({ t: 'cmd', rid, a: 'fan.set', p: { id: 'fan', duty } });

describe('fan.set in the firmware', () => {
  it('boots with every fan at duty 0 on its 25 kHz LEDC signal and the servo not driven', () => {
    const { rig } = boot();
    expect(rig.pwm[FAN]).toEqual({ duty: 0, freq: 25000 });
    expect(rig.pwm[SERVO]).toBeUndefined();
    expect(rig.pins[SERVO]).toBe(0);
  });

  it('measures 2400 rpm exactly from the edges after spin-up and completes by its tachometer; 2000 rpm is too slow for 60 %', () => {
    const { rig, s } = boot();
    rig.send(s, fanSet('f1', 60));
    expect(rig.pwm[FAN]).toEqual({ duty: 0.6, freq: 25000 });
    spin(rig, 2400, 1500 + 500 + 10);
    const res = recv(rig, s).find((f) => f.t === 'res' && f.rid === 'f1');
    expect(res).toMatchObject({ st: 'completed', ev: 'tachometer', ver: true, s: { fans: [{ id: 'fan', duty: 60, rpm: 2400 }] } });
    expect(res!.msg).toBe('fan: 2400 rpm over 500 ms (40 tach pulses on GPIO39) 1500 ms after setting 60 %, expected 2400 rpm +-15 %');

    rig.send(s, fanSet('f2', 60));
    spin(rig, 2000, 2010);
    const slow = recv(rig, s).find((f) => f.t === 'res' && f.rid === 'f2');
    expect(slow).toMatchObject({ st: 'failed', code: 'NO_FEEDBACK', ev: 'tachometer', ver: false, s: { fans: [{ id: 'fan', rpm: 2000 }] } });
    expect(slow!.msg).toMatch(/: too slow \(obstructed or worn\)$/);
  });

  it('a fan whose pulses stop within the window is judged over the whole window, not by its last two pulses', () => {
    const { rig, s } = boot();
    rig.send(s, fanSet('f1', 60));
    spin(rig, 2400, 1500 + 100);
    rig.advance(410);
    const res = recv(rig, s).find((f) => f.t === 'res' && f.rid === 'f1');
    expect(res).toMatchObject({ st: 'failed', code: 'NO_FEEDBACK' });
    expect(res!.s.fans[0].rpm).toBeLessThan(600);
  });

  it('watches the tach only while its window is open, and counts only the edges inside it however late its timer runs', () => {
    const { rig, s } = boot();
    const tachWatches = () => rig.watches.filter((w) => w.pin === TACH).length;
    expect(tachWatches()).toBe(0);
    rig.send(s, fanSet('f1', 60));
    spin(rig, 2400, 1500);
    expect(tachWatches()).toBe(1);
    spin(rig, 2400, 495);
    // The main loop busy across the window's end: its timer runs 200 ms late while the fan turns on.
    const quarter = 60000 / 2400 / 4;
    for (let t = 0; t < 200; t += quarter) {
      rig.stall(quarter);
      rig.input(TACH, rig.pins[TACH] ? 0 : 1);
    }
    rig.advance(1);
    const res = recv(rig, s).find((f) => f.t === 'res' && f.rid === 'f1');
    expect(res).toMatchObject({ st: 'completed', s: { fans: [{ rpm: 2400 }] } });
    expect(res!.msg).toMatch(/^fan: 2400 rpm over 500 ms \(40 tach pulses on GPIO39\)/);
    expect(tachWatches()).toBe(0);
  });

  it('a second fan.set while the first is still measuring is BUSY and writes nothing', () => {
    const { rig, s } = boot();
    rig.send(s, fanSet('f1', 60));
    rig.send(s, fanSet('f2', 80));
    rig.advance(1);
    expect(recv(rig, s).find((f) => f.t === 'res' && f.rid === 'f2')).toMatchObject({ st: 'rejected', code: 'BUSY' });
    expect(rig.pwm[FAN]!.duty).toBe(0.6);
  });
});

describe('the e-stop and the PWM outputs', () => {
  it('stops the fan (its measuring fan.set ends ESTOP_LATCHED), ends the servo pulses, and refuses fan.set and servo.set while latched', () => {
    const { rig, s } = boot();
    rig.send(s, { t: 'cmd', rid: 'v1', a: 'servo.set', p: { id: 'vent', deg: 90 } });
    rig.send(s, fanSet('f1', 80));
    rig.advance(100);
    expect(rig.pwm[SERVO]).toEqual({ duty: 0.075, freq: 50 });
    expect(recv(rig, s).find((f) => f.t === 'res' && f.rid === 'v1')).toMatchObject({ st: 'unverified', ev: 'none', ver: false, s: { servos: [{ id: 'vent', deg: 90, move_ms: 600 }] } });
    rig.input(ESTOP, 1);
    rig.input(ESTOP, 0);
    expect(rig.pwm[FAN]).toEqual({ duty: 0, freq: 25000 });
    expect(rig.pwm[SERVO]).toBeUndefined();
    rig.advance(1);
    const fs = recv(rig, s);
    expect(fs.find((f) => f.t === 'res' && f.rid === 'f1')).toMatchObject({ st: 'failed', code: 'ESTOP_LATCHED' });
    expect(fs.find((f) => f.t === 'evt')).toMatchObject({ k: 'estop', s: { fans: [{ id: 'fan', duty: 0 }], servos: [{ id: 'vent', deg: null }] } });

    rig.send(s, fanSet('f2', 50));
    rig.send(s, { t: 'cmd', rid: 'v2', a: 'servo.set', p: { id: 'vent', deg: 10 } });
    rig.advance(1);
    const rs = recv(rig, s).filter((f) => f.t === 'res');
    expect(rs.find((f) => f.rid === 'f2')).toMatchObject({ st: 'rejected', code: 'ESTOP_LATCHED' });
    expect(rs.find((f) => f.rid === 'v2')).toMatchObject({ st: 'rejected', code: 'ESTOP_LATCHED' });
    expect(rig.pwm[FAN]).toEqual({ duty: 0, freq: 25000 });
    expect(rig.pwm[SERVO]).toBeUndefined();
  });
});
