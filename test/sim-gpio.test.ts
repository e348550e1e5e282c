// Pins as the firmware and the rig see them: modes, levels, pulls, watches, pulses and PWM.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { firmware } from './helpers/sim-script.js';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { SimRig } from '@proofrig/sim';

const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const config = { dev: 'rig1', secret: '00', host: 'ws://127.0.0.1:1/device', board };

function run(src: string, withBoard = true) {
  const clock = new VirtualClock(0);
  const lines: string[] = [];
  const rig = new SimRig({
    firmwarePath: firmware(src),
    clock,
    seed: 3,
    console: (l) => lines.push(l),
    config: withBoard ? config : undefined,
  });
  rig.boot();
  return { rig, clock, lines };
}

describe('writing and reading pins', () => {
  it('an output pin reads back the level it drives (the ESP32 input buffer stays on)', () => {
    const { rig, lines } = run(`pinMode(21, 'output'); digitalWrite(21, 1); print(digitalRead(21), getPinMode(21));
                                digitalWrite(21, 0); print(digitalRead(21));`);
    expect(lines).toEqual(['1 output', '0']);
    expect(rig.pinLevel(21)).toBe(0);
  });

  it('digitalRead of a pin whose mode was never set turns it into an input, as Espruino does', () => {
    // K3 (GPIO21) is active-low: writing 0 energises it until the read floats the pin.
    const { rig, clock, lines } = run(`digitalWrite(21, 0); print(getPinMode(21)); print(digitalRead(21), getPinMode(21));`);
    expect(lines).toEqual(['output', '1 input']);
    clock.advance(20);
    expect(rig.relay(3).energised).toBe(false);
  });

  it('value truthiness: true/1 drive high, 0/false low', () => {
    const { rig } = run(`pinMode(4, 'output'); digitalWrite(4, true);`, false);
    expect(rig.pinLevel(4)).toBe(1);
  });

  it('an unconnected input reads its pull level', () => {
    const { lines } = run(`
      pinMode(4, 'input_pullup'); pinMode(5, 'input_pulldown'); pinMode(13, 'input');
      print(digitalRead(4), digitalRead(5), digitalRead(13));`, false);
    expect(lines).toEqual(['1 0 0']);
  });

  it('GPIO34-39 are input-only: they never drive and have no internal pulls', () => {
    const { rig, lines } = run(`pinMode(36, 'output'); digitalWrite(36, 1); pinMode(39, 'input_pullup'); print(digitalRead(36), digitalRead(39));`, false);
    expect(lines).toEqual(['0 0']);
    expect(rig.pinLevel(36)).toBe(0);
  });

  it('open-drain only pulls low; released, the line shows its pull', () => {
    const { rig } = run(`pinMode(4, 'opendrain_pullup'); digitalWrite(4, 0);`, false);
    expect(rig.pinLevel(4)).toBe(0);
    const b = run(`pinMode(4, 'opendrain_pullup'); digitalWrite(4, 1);`, false);
    expect(b.rig.pinLevel(4)).toBe(1);
  });

  it('an array of pins is written and read with the last pin as the least significant bit', () => {
    const { rig, lines } = run(`pinMode(4,'output'); pinMode(5,'output'); pinMode(13,'output');
                                digitalWrite([4, 5, 13], 0b101); print(digitalRead([4, 5, 13]));`, false);
    expect([rig.pinLevel(4), rig.pinLevel(5), rig.pinLevel(13)]).toEqual([1, 0, 1]);
    expect(lines).toEqual(['5']);
  });

  it('Pin objects and "D<n>" names work wherever a pin does', () => {
    const { rig, lines } = run(`pinMode(D4, 'output'); D4.set(); print(D4.read(), digitalRead('D4')); D4.toggle(); print(digitalRead(D4));`, false);
    expect(lines).toEqual(['true 1', '0']);
    expect(rig.pinLevel(4)).toBe(0);
  });

  it('invalid pins and unknown modes throw Espruino errors', () => {
    const { lines } = run(`
      try { digitalWrite(20, 1); } catch (e) { print(e.message); }
      try { digitalRead(99); } catch (e) { print(e.message); }
      try { pinMode(4, 'sideways'); } catch (e) { print(e.message); }`, false);
    expect(lines).toEqual(['Invalid pin!', 'Invalid pin!', 'Unknown pin mode']);
  });

  it("writes() counts digitalWrite calls and each one emits 'write' (gpio, level)", () => {
    const seen: [number, number][] = [];
    const clock = new VirtualClock(0);
    const rig = new SimRig({ firmwarePath: firmware(`digitalWrite(4, 1); digitalWrite(4, 0); digitalWrite(5, 1);`), clock, seed: 1 });
    rig.on('write', (pin: number, level: number) => seen.push([pin, level]));
    rig.boot();
    expect(rig.writes(4)).toBe(2);
    expect(rig.writes(5)).toBe(1);
    expect(seen).toEqual([[4, 1], [4, 0], [5, 1]]);
    rig.powerLoss(10);
    clock.advance(10);
    expect(rig.writes(4)).toBe(4); // counted since construction, across boots
  });
});

describe('pulses and PWM (hook points for steppers)', () => {
  it('digitalPulse drives the train on the clock and leaves the pin at the opposite level', () => {
    const clock = new VirtualClock(0);
    const trace: string[] = [];
    const rig = new SimRig({ firmwarePath: firmware(`pinMode(4, 'output'); digitalPulse(4, 1, [5, 2, 4]);`), clock, seed: 1 });
    const pulses: unknown[] = [];
    rig.on('pulse', (pin: number, value: number, times: number[]) => pulses.push([pin, value, times]));
    rig.pins.onChange((pin, level) => {
      if (pin === 4) trace.push(`${clock.now()}:${level}`);
    });
    rig.boot();
    clock.advance(20);
    expect(trace).toEqual(['0:1', '5:0', '7:1', '11:0']);
    expect(pulses).toEqual([[4, 1, [5, 2, 4]]]);
  });

  it('analogWrite records duty and frequency (5 kHz by default)', () => {
    const { rig } = run(`analogWrite(25, 0.25); analogWrite(26, 0.75, { freq: 1000 });`, false);
    expect(rig.pins.pwm(25)).toEqual({ duty: 0.25, freq: 5000 });
    expect(rig.pins.pwm(26)).toEqual({ duty: 0.75, freq: 1000 });
    expect(rig.pins.getMode(26)).toBe('output');
  });
});

describe('setWatch', () => {
  it('calls back on an input edge produced by the rig, with state, time and lastTime', () => {
    // K1 drives aux contact GPIO34 (active low, external pull-up).
    const { clock, lines } = run(`
      pinMode(23, 'output'); digitalWrite(23, 1);
      setWatch(function (e) { print(e.state, e.time > e.lastTime, e.time <= getTime()); }, 34, { repeat: true, edge: 'both' });
      setTimeout(function () { digitalWrite(23, 0); }, 100);
      setTimeout(function () { digitalWrite(23, 1); }, 200);`);
    clock.advance(300);
    expect(lines).toEqual(['false true true', 'true true true']);
  });

  it('the callback never runs inside the code that caused the edge', () => {
    const { clock, lines } = run(`
      pinMode(4, 'output'); digitalWrite(4, 0);
      setWatch(function (e) { print('edge', e.state); }, 4, { repeat: true });
      pinMode(4, 'output'); digitalWrite(4, 1); print('after write');`, false);
    expect(lines).toEqual(['after write']);
    clock.advance(0);
    // setWatch left GPIO4 an input with pull-up (the ESP32 port does that), so pinMode drove it low first.
    expect(lines).toEqual(['after write', 'edge false', 'edge true']);
  });

  it("edge 'falling' filters, a non-repeating watch fires once, lastTime is the previous change of the pin", () => {
    const { clock, lines } = run(`
      pinMode(23, 'output'); digitalWrite(23, 1);
      setWatch(function (e) { print('once', e.state); }, 34, { edge: 'falling' });
      setWatch(function (e) { print('fall', (e.time - e.lastTime).toFixed(3)); }, 34, { edge: 'falling', repeat: true });
      setTimeout(function () { digitalWrite(23, 0); }, 100);
      setTimeout(function () { digitalWrite(23, 1); }, 200);
      setTimeout(function () { digitalWrite(23, 0); }, 300);`);
    clock.advance(400);
    expect(lines.filter((l) => l.startsWith('once'))).toEqual(['once false']);
    const falls = lines.filter((l) => l.startsWith('fall'));
    expect(falls).toHaveLength(2);
    const gap = Number(falls[1].split(' ')[1]);
    expect(gap).toBeGreaterThan(0.09); // since the rising edge near t=200 ms
    expect(gap).toBeLessThan(0.11);
  });

  it('clearWatch(id), clearWatch(undefined) throws, unknown id throws, clearWatch() clears all', () => {
    const { clock, lines } = run(`
      pinMode(23, 'output'); digitalWrite(23, 1);
      var a = setWatch(function () { print('a'); }, 34, true);
      var b = setWatch(function () { print('b'); }, 34, true);
      print(a, b);
      clearWatch(a);
      try { clearWatch(undefined); } catch (e) { print(e.message); }
      try { clearWatch(77); } catch (e) { print(e.message); }
      setTimeout(function () { digitalWrite(23, 0); }, 10);
      setTimeout(function () { clearWatch(); digitalWrite(23, 1); }, 50);`);
    clock.advance(100);
    expect(lines).toEqual(['1 2', 'clearWatch(undefined) not allowed. Use clearWatch() instead.', 'Unknown Watch 77', 'b']);
  });

  it('debounce reports only a level that stayed put for the debounce time', () => {
    const { clock, lines } = run(`
      pinMode(4, 'output'); digitalWrite(4, 0);
      setWatch(function (e) { print('state', e.state, getTime()); }, 4, { repeat: true, debounce: 10 });
      pinMode(4, 'output');
      setTimeout(function () { digitalWrite(4, 1); }, 100);
      setTimeout(function () { digitalWrite(4, 0); }, 103);
      setTimeout(function () { digitalWrite(4, 1); }, 105);`, false);
    clock.advance(200);
    // 'false' at 10 ms: pinMode pulled the line down from setWatch's pull-up; the 100..105 ms bounce is one edge.
    expect(lines).toEqual(['state false 0.01', 'state true 0.115']);
  });
});
