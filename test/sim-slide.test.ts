// The lead-screw slide of the stepper rig: driver inputs → carriage → encoder, switches and FAULT, with faults.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { firmware } from './helpers/sim-script.js';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { AXIS_FAULTS, SimRig, STALL_FAULT_MAX_MS, type AxisFault } from '@proofrig/sim';

const board = JSON.parse(readFileSync(new URL('../boards/stepper-rig.json', import.meta.url), 'utf8')) as BoardDef;
const config = { dev: 'rig1', secret: '00', host: 'ws://127.0.0.1:1/device', board };
// Axis x (pins from the board file): STEP, DIR (1 = +mm), nENBL (low = enabled), nFAULT (active low,
// pull up), encoder A / B (external pull-ups, 25 counts/mm), home and limit (active low, pull up); 200 steps/mm.
const X = board.steppers![0];

/** Espruino-style firmware: driver helpers and an x2 decoder on A (B sampled with setWatch's data). */
const PRELUDE = `
  var ST = ${X.driver.step_pin}, DIR = ${X.driver.dir_pin}, EN = ${X.driver.enable_pin}, FLT = ${X.driver.fault.pin};
  var A = ${X.encoder.a_pin}, B = ${X.encoder.b_pin}, HOME = ${X.home.pin}, LIM = ${X.limit_max!.pin};
  pinMode(EN, 'output'); digitalWrite(EN, 1);
  pinMode(DIR, 'output'); digitalWrite(DIR, 1);
  pinMode(B, 'input'); pinMode(FLT, 'input_pullup'); pinMode(HOME, 'input_pullup'); pinMode(LIM, 'input_pullup');
  var count = 0, edges = 0, times = [];
  setWatch(function (e) { edges++; count += e.state !== e.data ? 1 : -1; times.push(e.time); }, A, { edge: 'both', repeat: true, data: B });
  function enable(on) { digitalWrite(EN, on ? 0 : 1); }
  function dir(plus) { digitalWrite(DIR, plus ? 1 : 0); }
  function run(hz) { analogWrite(ST, 0.5, { freq: hz }); }
  function stop() { digitalWrite(ST, 0); }
  function at(ms, f) { setTimeout(f, ms); }
  function report() { print('count', count, 'edges', edges); }
`;

function rig(actions: string, opts: { seed?: number; setup?: (r: SimRig) => void } = {}) {
  const clock = new VirtualClock(0);
  const lines: string[] = [];
  const motion: string[] = [];
  const r = new SimRig({ firmwarePath: firmware(PRELUDE + actions), clock, seed: opts.seed ?? 7, console: (l) => lines.push(l), config });
  r.on('motion', (what: string, axis: string) => motion.push(`${clock.now()} ${what} ${axis}`));
  opts.setup?.(r);
  r.boot();
  return { rig: r, clock, lines, motion };
}

describe('stepping', () => {
  it('a 4 kHz pulse train for 0.5 s moves 10 mm and gives exactly 250 A edges, each decoded +1', () => {
    const { rig: r, clock, lines, motion } = rig(`enable(true); at(10, function () { run(4000); }); at(510, stop); at(600, report);`);
    clock.advance(300);
    expect(r.axis('x')).toMatchObject({ stepping: true, stepHz: 4000, enabled: true, faultAsserted: false });
    clock.advance(400);
    expect(lines).toEqual(['count 250 edges 250']);
    expect(r.axis('x')).toMatchObject({ pos: 10, steps: 2000, stepping: false, stepHz: 0 });
    expect(motion).toEqual(['10 start x', '510 stop x']);
  });

  it('reversing DIR moves back and the decoder counts down', () => {
    const { rig: r, clock, lines } = rig(`enable(true); run(4000);
      at(500, function () { stop(); dir(false); run(4000); }); at(750, stop); at(800, report);`);
    clock.advance(900);
    expect(r.axis('x').pos).toBe(5);
    expect(r.axis('x').steps).toBe(1000);
    expect(lines).toEqual(['count 125 edges 375']);
  });

  it('several edges inside one physics tick are delivered one by one, their times interpolated', () => {
    // 20 kHz = 100 mm/s: an A edge every 0.4 ms, five per 2 ms tick.
    const { clock, lines } = rig(`enable(true); run(20000);
      at(100, stop); at(150, function () { report(); print(times.slice(0, 6).map(function (t) { return (t * 1000).toFixed(3); }).join(' ')); });`);
    clock.advance(200);
    expect(lines[0]).toBe('count 250 edges 250');
    // Step n is at n/20 ms; A changes every 8 steps, first at step 7 (x = 8 steps after the 0 mm edge).
    expect(lines[1]).toBe('0.350 0.750 1.150 1.550 1.950 2.350');
  });

  it('a rate change keeps the pulse train phase (no step gained or lost)', () => {
    const { rig: r, clock } = rig(`enable(true); run(4000); at(250, function () { run(8000); }); at(500, stop);`);
    clock.advance(600);
    expect(r.axis('x').steps).toBe(1000 + 2000);
    expect(r.axis('x').pos).toBe(15);
  });

  it('a disabled driver ignores the pulse train; enabling it mid-train starts the motion', () => {
    const { rig: r, clock } = rig(`run(4000); at(250, function () { enable(true); }); at(500, stop);`);
    clock.advance(200);
    expect(r.axis('x')).toMatchObject({ pos: 0, steps: 0, enabled: false, stepping: true });
    clock.advance(400);
    expect(r.axis('x')).toMatchObject({ pos: 5, steps: 1000 });
  });

  it('digitalPulse on STEP makes one step per pulse', () => {
    const { rig: r, clock } = rig(`enable(true); for (var i = 0; i < 40; i++) digitalPulse(ST, 1, 0.01);`);
    clock.advance(10);
    expect(r.axis('x')).toMatchObject({ steps: 40, pos: 0.2, stepping: false });
  });

  it('no physics timer runs while the slide is idle', () => {
    const { clock } = rig(`enable(true); run(4000); at(100, stop);`);
    clock.advance(200);
    expect(clock.timers).toBe(0);
  });
});

describe('switches', () => {
  it('home reads closed at 0 mm and opens past 0.05 mm; limit_max stays open', () => {
    const { rig: r, clock, lines } = rig(`enable(true);
      print(digitalRead(HOME), digitalRead(LIM));
      for (var i = 0; i < 10; i++) digitalPulse(ST, 1, 0.01);
      at(5, function () { print(digitalRead(HOME)); for (var i = 0; i < 2; i++) digitalPulse(ST, 1, 0.01); });
      at(10, function () { print(digitalRead(HOME)); });`);
    clock.advance(20);
    expect(lines).toEqual(['0 1', '0', '1']);
    expect(r.axis('x')).toMatchObject({ pos: 0.06, home: false, limit: false });
  });

  it('limit_max closes at 199.95 mm; the firmware stops on it', () => {
    // 40 kHz = 200 mm/s from t = 0: step n (n = 0, 1, ...) is at n / 40 ms and leaves the carriage at n + 1 steps.
    const { rig: r, clock, lines } = rig(`enable(true); run(40000);
      setWatch(function (e) { stop(); print('limit at step', Math.round(e.time * 40000) + 1); }, LIM, { edge: 'falling' });`);
    clock.advance(1100);
    expect(lines).toEqual(['limit at step 39990']); // 199.95 mm
    const s = r.axis('x');
    expect(s.limit).toBe(true);
    expect(s.pos).toBeGreaterThanOrEqual(199.95);
    expect(s.pos).toBeLessThan(200.5);
    expect(r.pinLevel(X.limit_max!.pin)).toBe(0);
  });

  it('limit_stuck: limit_max reads closed wherever the carriage is, until cleared', () => {
    const { rig: r, clock, lines } = rig(`at(5, function () { print(digitalRead(LIM)); }); at(15, function () { print(digitalRead(LIM)); });`);
    r.setFault('x', 'limit_stuck');
    expect(r.axis('x')).toMatchObject({ pos: 0, limit: true, home: true });
    clock.advance(10);
    r.setFault('x', null);
    clock.advance(10);
    expect(lines).toEqual(['0', '1']);
    expect(r.axis('x').limit).toBe(false);
  });
});

describe('stall against an obstruction or a hard stop', () => {
  it('told to go to 150 mm, the carriage stops at the obstruction at 70 mm and FAULT asserts within 20 ms', () => {
    const { rig: r, clock, lines } = rig(
      `enable(true); at(10, function () { run(6000); });
       setWatch(function (e) { print('FAULT', (e.time * 1000).toFixed(2)); }, FLT, { edge: 'falling' });`,
      { setup: (x) => x.setFault('x', 'stall', '70') },
    );
    clock.advance(3000);
    const s = r.axis('x');
    expect(s.pos).toBe(70);
    expect(s.faultAsserted).toBe(true);
    expect(s.stepping).toBe(true); // the firmware never stopped the train: FAULT stays lit
    expect(r.pinLevel(X.driver.fault.pin)).toBe(0);
    // 14000 steps at 6 kHz from t = 10 ms reach 70 mm; the next one (t = 2343.33 ms) is blocked.
    expect(lines.length).toBe(1);
    const t = Number(lines[0].split(' ')[1]);
    const stalled = 10 + 14000 / 6;
    expect(t).toBeGreaterThan(stalled);
    expect(t - stalled).toBeLessThanOrEqual(20);
    expect(t - stalled).toBeLessThanOrEqual(STALL_FAULT_MAX_MS + 1e-6);
  });

  it('FAULT is released when the step train stops (or the driver is disabled)', () => {
    const { rig: r, clock, lines } = rig(
      `enable(true); dir(false); run(6000); var n = 0;
       setWatch(function () { n++; print('fault', n); if (n === 1) stop(); else enable(false); }, FLT, { edge: 'falling', repeat: true });
       setWatch(function () { print('released', digitalRead(FLT)); if (n === 1) run(6000); }, FLT, { edge: 'rising', repeat: true });`,
      { setup: (x) => x.setFault('x', 'stall', '-1') },
    );
    clock.advance(400);
    expect(lines).toEqual(['fault 1', 'released 1', 'fault 2', 'released 1']);
    expect(r.axis('x')).toMatchObject({ pos: -1, faultAsserted: false, enabled: false, stepping: true, home: true });
  });

  it('the carriage cannot pass an obstruction from either side, and moves freely away from it', () => {
    // 8 kHz = 40 mm/s.
    const { rig: r, clock } = rig(
      `enable(true); run(8000); at(300, function () { stop(); dir(false); run(8000); }); at(400, stop);
       at(500, function () { run(8000); }); at(700, stop);`,
      { setup: (x) => x.setFault('x', 'stall', '5') },
    );
    clock.advance(299);
    expect(r.axis('x')).toMatchObject({ pos: 5, faultAsserted: true });
    clock.advance(151);
    expect(r.axis('x')).toMatchObject({ pos: 1, faultAsserted: false }); // 100 ms back, away from it
    r.setFault('x', 'stall', '0.5'); // an obstruction below the carriage now
    clock.advance(400);
    expect(r.axis('x')).toMatchObject({ pos: 0.5, faultAsserted: false, stepping: false });
  });

  it('driving past the ends hits the hard stops at travel -2 mm and +2 mm and stalls', () => {
    const { rig: r, clock } = rig(`enable(true); dir(false); run(4000);`);
    clock.advance(1000);
    expect(r.axis('x')).toMatchObject({ pos: -2, faultAsserted: true, home: true });
    expect(r.axis('x').steps).toBeLessThan(-400);
  });

  it('clearing the obstruction lets the next train through', () => {
    const { rig: r, clock } = rig(`enable(true); run(8000); at(300, stop); at(400, function () { run(8000); }); at(500, stop);`, {
      setup: (x) => x.setFault('x', 'stall', '1'),
    });
    clock.advance(350);
    expect(r.axis('x')).toMatchObject({ pos: 1, faultAsserted: false });
    r.setFault('x', null);
    clock.advance(200);
    expect(r.axis('x').pos).toBe(1 + 4);
  });
});

describe('encoder and step faults', () => {
  it('missed_steps@5%: 2000 steps move the carriage 9.5 mm and the encoder reports it', () => {
    const { rig: r, clock, lines } = rig(`enable(true); run(4000); at(500, stop); at(600, report);`, {
      setup: (x) => x.setFault('x', 'missed_steps', '5%'),
    });
    clock.advance(700);
    expect(r.axis('x')).toMatchObject({ steps: 2000, pos: 9.5 });
    expect(lines).toEqual(['count 237 edges 237']); // floor(9.5 mm × 25)
  });

  it('encoder_dead: the carriage moves but A and B never change; clearing shows the true position again', () => {
    const { rig: r, clock, lines } = rig(`enable(true); run(4000); at(262, stop); at(300, report);`, {
      setup: (x) => x.setFault('x', 'encoder_dead'),
    });
    const before = [r.pinLevel(X.encoder.a_pin), r.pinLevel(X.encoder.b_pin)];
    expect(before).toEqual([0, 1]); // 0 counts: A = 0, B = floor(-0.5) mod 2 = 1
    clock.advance(400);
    expect(lines).toEqual(['count 0 edges 0']);
    expect(r.axis('x').pos).toBe(5.24);
    expect([r.pinLevel(X.encoder.a_pin), r.pinLevel(X.encoder.b_pin)]).toEqual(before);
    r.setFault('x', null);
    // 5.24 mm = 131 counts: A = 131 mod 2 = 1, B = floor(130.5) mod 2 = 0.
    expect([r.pinLevel(X.encoder.a_pin), r.pinLevel(X.encoder.b_pin)]).toEqual([1, 0]);
  });
});

describe('power', () => {
  it('the carriage keeps its position through a power cut in mid-move and the reboot', () => {
    const { rig: r, clock, motion } = rig(`
      if (!require('Storage').read('moved')) { require('Storage').write('moved', '1'); enable(true); run(4000); }`);
    clock.advance(250);
    r.powerLoss(100);
    const s = r.axis('x');
    expect(s).toMatchObject({ stepping: false, enabled: false, faultAsserted: false });
    expect(s.pos).toBeCloseTo(5, 1);
    clock.advance(500);
    expect(r.bootCount).toBe(2);
    expect(r.axis('x').pos).toBe(s.pos);
    expect(motion).toEqual(['0 start x', '250 stop x']);
    const counts = s.pos * 25;
    expect(r.pinLevel(X.encoder.a_pin)).toBe(Math.floor(counts) % 2); // the encoder shows the kept position
  });
});

describe('setWatch data option', () => {
  it('e.data is the data pin level sampled at the edge; an invalid data pin is ignored', () => {
    // The home switch opens past 0.05 mm (11 steps) and closes again on the way back.
    const { clock, lines } = rig(`
      pinMode(18, 'output'); digitalWrite(18, 1); enable(true);
      setWatch(function (e) { print(e.state, e.data); }, HOME, { edge: 'both', data: 18, repeat: true });
      setWatch(function (e) { print('data' in e); }, HOME, { data: 99 });
      for (var i = 0; i < 12; i++) digitalPulse(ST, 1, 0.01);
      at(5, function () { digitalWrite(18, 0); dir(false); for (var i = 0; i < 12; i++) digitalPulse(ST, 1, 0.01); });`);
    clock.advance(10);
    expect(lines).toEqual(['true true', 'false', 'false false']);
  });
});

describe('determinism on a VirtualClock', () => {
  function trace(seed: number): string[] {
    const { rig: r, clock, lines } = rig(
      `enable(true); run(7000); at(300, function () { run(3000); }); at(700, function () { stop(); dir(false); run(5000); });
       setWatch(function (e) { print('fault', e.time.toFixed(6)); stop(); }, FLT, { edge: 'falling' });`,
      { seed, setup: (x) => x.setFault('x', 'missed_steps', '3%') },
    );
    const out: string[] = [];
    r.pins.onChange((pin, level, at) => out.push(`${clock.now()} ${pin}=${level} @${at}`));
    clock.advance(350);
    r.setFault('x', 'stall', '2');
    clock.advance(1000);
    return out.concat(lines, JSON.stringify(r.axis('x')));
  }

  it('the same seed gives the same edges, times and stall', () => {
    const a = trace(99);
    expect(a.length).toBeGreaterThan(200);
    expect(a.some((l) => l.startsWith('fault'))).toBe(true);
    expect(trace(99)).toEqual(a);
  });

  it('another seed moves the stall detection and the missed-step pattern', () => {
    expect(trace(1)).not.toEqual(trace(2));
  });
});

describe('setFault on an axis', () => {
  it('rejects unknown parts, faults and WHEREs with messages naming what exists', () => {
    const { rig: r } = rig('');
    expect(() => r.setFault('y', 'stall', '5')).toThrow(/unknown part "y".*relay1, x/);
    expect(() => r.setFault('x', 'melted' as AxisFault)).toThrow(
      /unknown fault "melted" for axis x; known: stall@MM, missed_steps@P%, encoder_dead, limit_stuck/,
    );
    expect(() => r.setFault('x', 'stall')).toThrow(/stall needs the obstruction's position in mm between -2 and 202, e\.g\. stall@80/);
    expect(() => r.setFault('x', 'stall', '300')).toThrow(/between -2 and 202/);
    expect(() => r.setFault('x', 'missed_steps', '120%')).toThrow(/missed_steps needs a percentage 0\.\.100/);
    expect(() => r.setFault('x', 'encoder_dead', '3')).toThrow(/encoder_dead takes no @WHERE/);
    expect(() => r.setFault('relay1', 'welded', 'boot2')).toThrow(/relay faults take no @WHERE/);
    expect(() => r.axis('y')).toThrow(/no such axis.*axes: x/);
    expect(AXIS_FAULTS).toEqual(['stall', 'missed_steps', 'encoder_dead', 'limit_stuck']);
  });

  it('accepts the WHERE as parseFault gives it: "80", "80mm", "5%", "5"', () => {
    const { rig: r } = rig('');
    for (const [f, w] of [['stall', '80'], ['stall', '80mm'], ['stall', '-1.5'], ['missed_steps', '5%'], ['missed_steps', '5']] as const)
      expect(() => r.setFault('x', f, w)).not.toThrow();
    r.setFault('relay1', 'welded');
    expect(r.relay(1).contactClosed).toBe(true);
  });
});
