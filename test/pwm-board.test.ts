// The board's PWM outputs as `proofrig board check` and the protocol see them: clear messages for
// the ESP32's limits (output pins only, not the DAC pins, the LEDC's 80 MHz clock and 8 channels, a
// tach pin setWatch can watch, a window long enough to count pulses at the curve's lowest speed);
// what a fan is expected to turn at and how long a servo move takes; and the simulator's fan and
// servo models with the fan faults.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { checkBoard, PWM, type BoardDef, type FanDef, type ServoDef } from '@proofrig/protocol';
import { KINDS } from '@proofrig/protocol/kinds';
import { VirtualClock } from '@proofrig/protocol/clock';
import { resolveFault } from '@proofrig/sim';
import { Gpio } from '../sim/src/gpio.js';
import { mulberry32 } from '../sim/src/prng.js';
import { PwmModels } from '../sim/src/pwm-models.js';

const climate = (): Record<string, unknown> & BoardDef => JSON.parse(readFileSync(new URL('../boards/climate-rig.json', import.meta.url), 'utf8'));

function check(mutate: (b: Record<string, any>) => void): { errors: string[]; warnings: string[] } {
  const b = climate() as Record<string, any>;
  mutate(b);
  const r = checkBoard(b);
  return { errors: r.ok ? [] : r.errors, warnings: r.warnings };
}
const errorsOf = (mutate: (b: Record<string, any>) => void): string[] => check(mutate).errors;

describe('board check of PWM outputs', () => {
  it('accepts the climate rig as it is', () => {
    expect(checkBoard(climate())).toMatchObject({ ok: true, warnings: [] });
  });

  it('refuses an input-only pin, a flash pin, a DAC pin and a pin used twice for a PWM output', () => {
    expect(errorsOf((b) => (b.pwm[0].pin = 35 + 1))).toEqual(['pwm[0].pin: GPIO36 is input-only and cannot drive a PWM output']);
    expect(errorsOf((b) => (b.pwm[0].pin = 7))).toEqual(['pwm[0].pin: GPIO7 is not a usable ESP32 GPIO (6-11 drive the flash chip)']);
    expect(errorsOf((b) => (b.pwm[1].pin = 25))).toEqual([
      "pwm[1].pin: GPIO25 is a DAC pin where Espruino's analogWrite makes a voltage, not a PWM signal; use another output",
    ]);
    expect(errorsOf((b) => (b.pwm[1].pin = b.i2c.sda))).toEqual([`pwm[1].pin: GPIO${climate().i2c!.sda} is already used by i2c.sda`]);
  });

  it('warns about a strapping pin as it does for relays', () => {
    expect(check((b) => (b.pwm[1].pin = 12))).toEqual({
      errors: [],
      warnings: ['pwm[1].pin: GPIO12 is a strapping pin (MTDI): held high at reset it selects 1.8 V flash and a WROOM-32 does not boot; relay modules and pull-ups often hold it high'],
    });
  });

  it('refuses a frequency the LEDC cannot make at its resolution, a resolution Espruino does not drive, and a fan off the 4-wire standard', () => {
    expect(errorsOf((b) => (b.pwm[0].resolution_bits = 10) && (b.pwm[0].freq_hz = 25000) && (b.pwm[1].resolution_bits = 10) && (b.pwm[1].freq_hz = 50))).toEqual([]);
    expect(errorsOf((b) => (b.pwm[1].freq_hz = 100000) && (b.pwm[1].resolution_bits = 10))).toEqual([
      "pwm[1].freq_hz: 100000 Hz x 2^10 (resolution_bits) = 102400000 exceeds the LEDC's 80 MHz clock; at 10 bits the highest frequency is 78125 Hz",
      'pwm[1].freq_hz: a hobby servo takes 40..400 Hz (50 for an analog one), not 100000',
      'pwm[1].pulse_us.max: a 2500 µs pulse does not fit in the 10 µs period of 100000 Hz',
    ]);
    expect(errorsOf((b) => (b.pwm[0].resolution_bits = 12))).toEqual([
      "pwm[0].resolution_bits: must be a whole number 1..10 (Espruino's ESP32 port drives the LEDC at 10 bits), or absent for 10",
    ]);
    expect(errorsOf((b) => (b.pwm[0].freq_hz = 1000))).toEqual(["pwm[0].freq_hz: a 4-wire fan's PWM input expects 21000..28000 Hz (25000 nominal), not 1000"]);
  });

  it('refuses more PWM outputs than the LEDC has channels', () => {
    const more = (b: Record<string, any>) => {
      for (const pin of [4, 5, 14, 16, 17, 32, 33]) b.pwm.push({ ...b.pwm[1], id: `s${pin}`, label: `servo ${pin}`, pin });
    };
    expect(errorsOf(more)).toEqual(['pwm: 9 PWM outputs need more than the 8 LEDC channels of the ESP32']);
  });

  it('refuses a tach pin setWatch cannot watch, an internal pull on an input-only pin, and a window too short for the lowest speed', () => {
    expect(errorsOf((b) => (b.pwm[0].tach.pin = 23))).toEqual([
      'pwm[0].tach.pin: Espruino cannot setWatch GPIO23 on the ESP32, so its pulses cannot be counted; use one of 0, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 25, 26, 27, 34, 35, 36, 37, 38, 39',
    ]);
    expect(errorsOf((b) => (b.pwm[0].tach.pull = 'up'))).toEqual(['pwm[0].tach.pull: GPIO39 has no internal pull resistor; wire a pull-up to 3.3 V and say "external"']);
    // 800 rpm x 2 pulses per turn is 26.7 pulses a second: 100 ms sees 2.7 of them.
    expect(errorsOf((b) => (b.pwm[0].tach.measure_ms = 100))).toEqual([
      "pwm[0].tach.measure_ms: at the curve's lowest 800 rpm a 100 ms window sees 2.7 tach pulses; it needs at least 4, so make it 150 ms or more",
    ]);
  });

  it('refuses a curve that is not rising, too few points, and a tolerance or spin-up that is missing', () => {
    expect(errorsOf((b) => (b.pwm[0].tach.curve = [{ duty: 50, rpm: 2000 }, { duty: 40, rpm: 3000 }]))).toEqual([
      'pwm[0].tach.curve[1]: duty must rise (50 then 40) and rpm must not fall (2000 then 3000)',
    ]);
    expect(errorsOf((b) => (b.pwm[0].tach.curve = [{ duty: 100, rpm: 4000 }]))).toEqual(['pwm[0].tach.curve: must list 2..8 points {duty, rpm} in ascending duty']);
    expect(errorsOf((b) => delete b.pwm[0].tach.tolerance_pct)).toEqual([
      "pwm[0].tach.tolerance_pct: must be a percentage 1..50 (how far the measured speed may be from the curve's)",
    ]);
    expect(errorsOf((b) => delete b.pwm[0].tach.spin_up_ms)).toEqual([
      'pwm[0].tach.spin_up_ms: must be a number of ms (1..600000): the time the speed needs to settle after a duty change',
    ]);
  });

  it("refuses a servo whose pulse does not fit its period, an empty angle range, no speed, and a kind it does not know", () => {
    expect(errorsOf((b) => (b.pwm[1].freq_hz = 400) && (b.pwm[1].pulse_us = { min: 500, max: 2500 }))).toEqual([
      'pwm[1].pulse_us.max: a 2500 µs pulse does not fit in the 2500 µs period of 400 Hz',
    ]);
    expect(errorsOf((b) => (b.pwm[1].angle_deg = { min: 90, max: 90 }))).toEqual(['pwm[1].angle_deg: must be {min, max} degrees with min < max (e.g. {"min": 0, "max": 180})']);
    expect(errorsOf((b) => delete b.pwm[1].deg_per_s)).toEqual(["pwm[1].deg_per_s: must be the servo's speed in °/s, above 0 (a datasheet's 0.15 s/60° is 400)"]);
    expect(errorsOf((b) => (b.pwm[1].kind = 'valve'))).toEqual(['pwm[1].kind: must be "fan" or "servo"']);
    expect(errorsOf((b) => (b.pwm[1].id = 'fan'))).toEqual(['pwm[1].id: "fan" is defined twice among the PWM outputs']);
  });
});

describe('what a fan and a servo are expected to do', () => {
  const board = climate();
  const fan = board.pwm![0] as FanDef;
  const vent = board.pwm![1] as ServoDef;

  it('a fan turns at the speed its curve gives, linear between the points; below the first point it is not expected to run', () => {
    expect(PWM.fanRpm(fan.tach!, 60)).toBe(2400);
    expect(PWM.fanRpm(fan.tach!, 100)).toBe(4000);
    expect(PWM.fanRpm(fan.tach!, 0)).toBe(0);
    expect(PWM.fanRpm(fan.tach!, 10)).toBe(-1);
    expect(PWM.checkFan({ id: 'fan', duty: 10 }, board)).toBe('duty 10 % is below 20 %, the lowest duty fan is known to run at (its curve); use 0 to stop it or at least 20');
    expect(PWM.checkFan({ id: 'fan', duty: 100.5 }, board)).toBe('duty must be a number 0..100 (percent; 0 stops the fan), got 100.5');
    expect(PWM.checkFan({ id: 'vent', duty: 50 }, board)).toBe('fan "vent" does not exist on climate-rig; fans: fan');
    expect(PWM.checkFan({ id: 'fan', duty: 0 }, board)).toBeNull();
  });

  it("fan.set's deadline covers spin-up and the window; servo.set's is the pulse write alone", () => {
    expect(KINDS['fan.set'].timing({ id: 'fan', duty: 60 }, board, null)).toEqual({ worstMs: 2000, expectedMs: 2000 });
    expect(KINDS['servo.set'].timing({ id: 'vent', deg: 90 }, board, null)).toEqual({ worstMs: 0, expectedMs: 0 });
    expect(KINDS['servo.set'].evidence).toEqual([]);
  });

  it('a servo move takes |Δangle| / deg_per_s, the whole range from an unknown angle; its pulse is linear in the angle', () => {
    expect(PWM.moveMs(vent, 90, 30)).toBe(200);
    expect(PWM.moveMs(vent, null, 30)).toBe(600);
    expect(PWM.pulseUs(vent, 0)).toBe(500);
    expect(PWM.pulseUs(vent, 90)).toBe(1500);
    expect(PWM.checkServo({ id: 'vent', deg: -1 }, board)).toBe('deg must be a number 0..180 (the angle range of vent), got -1');
    expect(PWM.checkServo({ id: 'fan', deg: 10 }, board)).toBe('servo "fan" does not exist on climate-rig; servos: vent');
  });
});

describe('the simulated fan and servo', () => {
  function rig() {
    const board = climate();
    const clock = new VirtualClock();
    const gpio = new Gpio();
    gpio.setPowered(true);
    const falls: number[] = [];
    gpio.onChange((pin, level, at) => {
      if (pin === 39 && level === 0) falls.push(at ?? clock.now());
    });
    const models = new PwmModels(board, gpio, clock, mulberry32(1));
    return { clock, gpio, models, falls };
  }

  it('a fan spins up with inertia to its curve speed and its tach falls twice per turn; stalled it stops, unplugged it turns without pulses', () => {
    const { clock, gpio, models, falls } = rig();
    gpio.analogWrite(27, 0.6, 25000);
    clock.advance(300);
    expect(models.fan('fan').rpm).toBeLessThan(2400 * 0.9);
    clock.advance(1700);
    expect(Math.abs(models.fan('fan').rpm - 2400)).toBeLessThan(24);
    const n = falls.length;
    clock.advance(1000);
    // 2400 rpm, 2 pulses per turn: 80 falls a second.
    expect(Math.abs(falls.length - n - 80)).toBeLessThanOrEqual(1);

    models.setFault('fan', 'unplugged');
    const m = falls.length;
    clock.advance(1000);
    expect(falls.length).toBe(m);
    expect(models.fan('fan').rpm).toBeGreaterThan(2300);

    models.setFault('fan', 'stalled');
    clock.advance(100);
    expect(models.fan('fan')).toMatchObject({ rpm: 0, fault: 'stalled' });
  });

  it('tach_noise adds glitch pulses the rotor did not make; duty 0 coasts to a stop', () => {
    const { clock, gpio, models, falls } = rig();
    gpio.analogWrite(27, 0.6, 25000);
    clock.advance(2000);
    models.setFault('fan', 'tach_noise');
    const n = falls.length;
    const turns = models.fan('fan').pulses;
    clock.advance(1000);
    const real = models.fan('fan').pulses - turns;
    expect(falls.length - n).toBeGreaterThan(real * 1.3);
    gpio.analogWrite(27, 0, 25000);
    clock.advance(1500);
    expect(models.fan('fan').rpm).toBe(0);
  });

  it('a servo heads for the angle of its pulse at deg_per_s and holds without pulses', () => {
    const { clock, gpio, models } = rig();
    expect(models.servo('vent')).toEqual({ deg: 90, target: null, moving: false });
    gpio.analogWrite(13, (2500 * 50) / 1e6, 50);
    clock.advance(150);
    expect(models.servo('vent')).toMatchObject({ deg: 135, target: 180, moving: true });
    clock.advance(200);
    expect(models.servo('vent')).toMatchObject({ deg: 180, moving: false });
  });

  it('fan faults are named per fan id: --fault climate-rig:fan:stalled', () => {
    expect(resolveFault(climate(), 'fan', 'stalled')).toEqual({ kind: 'fan', id: 'fan', fault: 'stalled' });
    expect(() => resolveFault(climate(), 'fan', 'melted')).toThrow('unknown fault "melted" for fan fan; known: stalled, unplugged, tach_noise (or null to clear)');
    expect(() => resolveFault(climate(), 'vent', 'stalled')).toThrow(/unknown part "vent"; this rig's parts: .*fan/);
  });
});
