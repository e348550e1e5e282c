// Relay physics of the rig (coil → armature → aux contact) and the faults that can be injected into it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { firmware } from './helpers/sim-script.js';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { SimRig, type RelayFault } from '@proofrig/sim';

const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const config = { dev: 'rig1', secret: '00', host: 'ws://127.0.0.1:1/device', board };
// K1: GPIO23 active-low, operate 10 ms / release 5 ms, aux contact on GPIO34 (active-low, external pull-up).

/** Firmware that drives K1; `actions` schedules what the test needs from inside the firmware. */
function rig(seed = 11, actions = '') {
  const clock = new VirtualClock(0);
  const lines: string[] = [];
  const src = `
    pinMode(23, 'output'); digitalWrite(23, 1);
    pinMode(34, 'input');
    function k1(on) { digitalWrite(23, on ? 0 : 1); }
    function readback() { return [digitalRead(23), digitalRead(34)].join(' '); }
    function at(ms, f) { setTimeout(f, ms); }
    ${actions}`;
  const r = new SimRig({ firmwarePath: firmware(src), clock, seed, console: (l) => lines.push(l), config });
  r.boot();
  return { rig: r, clock, lines };
}

/** Time (ms) until the aux contact of K1 (GPIO34, active low) reads `level`, stepping 0.1 ms. */
function msUntil(r: SimRig, clock: VirtualClock, level: 0 | 1, limit = 50): number {
  const t0 = clock.now();
  while (r.pinLevel(34) !== level) {
    if (clock.now() - t0 > limit) throw new Error(`GPIO34 never reached ${level}`);
    clock.advance(0.1);
  }
  return clock.now() - t0;
}

describe('coil, armature and aux contact', () => {
  it('the contact closes 40..90 % of operate_ms after the coil is energised, and opens within release_ms', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const { rig: r, clock } = rig(seed, 'at(100, function () { k1(true); }); at(200, function () { k1(false); });');
      expect(r.pinLevel(34)).toBe(1);
      clock.advance(100);
      expect(r.relay(1).energised).toBe(true);
      const op = msUntil(r, clock, 0);
      expect(op).toBeGreaterThanOrEqual(4 - 0.1);
      expect(op).toBeLessThanOrEqual(9 + 0.1);
      expect(r.relay(1).contactClosed).toBe(true);
      clock.advance(200 - clock.now());
      const rel = msUntil(r, clock, 1);
      expect(rel).toBeGreaterThanOrEqual(2 - 0.1);
      expect(rel).toBeLessThanOrEqual(4.5 + 0.1);
    }
  });

  it('a pulse shorter than the operate time never closes the contact', () => {
    const { rig: r, clock } = rig(11, 'k1(true); at(1, function () { k1(false); });');
    clock.advance(30);
    expect(r.pinLevel(34)).toBe(1);
    expect(r.relay(1).contactClosed).toBe(false);
  });

  it('the firmware reads the aux contact through digitalRead after settle_ms', () => {
    const { clock, lines } = rig(11, 'k1(true); at(25, function () { print(readback()); });');
    clock.advance(30);
    expect(lines).toEqual(['0 0']);
  });

  it('with pull "up" the firmware must enable the internal pull-up or the open contact floats low', () => {
    const up = { ...board, relays: [{ ...board.relays[0], feedback: { kind: 'aux_contact', pin: 18, active_low: true, pull: 'up' } }] } as BoardDef;
    const clock = new VirtualClock(0);
    const lines: string[] = [];
    const r = new SimRig({
      firmwarePath: firmware(`pinMode(23,'output'); digitalWrite(23,1); pinMode(18,'input'); print(digitalRead(18));
                             pinMode(18,'input_pullup'); print(digitalRead(18));`),
      clock,
      seed: 1,
      console: (l) => lines.push(l),
      config: { ...config, board: up },
    });
    r.boot();
    expect(lines).toEqual(['0', '1']);
  });

  it('power loss de-energises every coil and the contacts open after the release time', () => {
    const { rig: r, clock } = rig(11, 'k1(true);');
    clock.advance(20);
    expect(r.relay(1).contactClosed).toBe(true);
    r.powerLoss(1000);
    expect(r.relay(1).energised).toBe(false);
    clock.advance(10);
    expect(r.relay(1).contactClosed).toBe(false);
  });
});

describe('faults', () => {
  it('coil_open: the pin is driven and reads back, but the armature never moves', () => {
    const { rig: r, clock, lines } = rig(11, 'at(10, function () { k1(true); }); at(35, function () { print(readback()); });');
    r.setFault('relay1', 'coil_open');
    clock.advance(40);
    expect(lines).toEqual(['0 1']);
    expect(r.relay(1)).toEqual({ energised: false, contactClosed: false });
    expect(r.pinLevel(23)).toBe(0);
  });

  it('welded: the contact stays closed whatever the coil does', () => {
    const { rig: r, clock, lines } = rig(11, 'k1(true); at(20, function () { k1(false); }); at(60, function () { print(readback()); });');
    r.setFault('relay1', 'welded');
    expect(r.pinLevel(34)).toBe(0);
    clock.advance(70);
    expect(lines).toEqual(['1 0']);
    expect(r.relay(1)).toEqual({ energised: false, contactClosed: true });
  });

  it('pin_stuck_high: writes do not change the line, digitalRead returns the stuck level, the coil stays off', () => {
    const { rig: r, clock, lines } = rig(11, 'at(10, function () { k1(true); }); at(35, function () { print(readback()); });');
    r.setFault('relay1', 'pin_stuck_high');
    clock.advance(40);
    expect(lines).toEqual(['1 1']);
    expect(r.relay(1).energised).toBe(false);
  });

  it('pin_stuck_low: the coil of an active-low relay follows the stuck level even when the firmware releases it', () => {
    const { rig: r, clock, lines } = rig(11, 'at(20, function () { k1(false); }); at(45, function () { print(readback()); });');
    r.setFault('relay1', 'pin_stuck_low');
    clock.advance(50);
    expect(lines).toEqual(['0 0']);
    expect(r.relay(1)).toEqual({ energised: true, contactClosed: true });
  });

  it('a fault can be injected at any time and cleared with null', () => {
    const { rig: r, clock } = rig(11, 'k1(true);');
    clock.advance(20);
    r.setFault('relay1', 'pin_stuck_high');
    expect(r.pinLevel(23)).toBe(1);
    clock.advance(10);
    expect(r.relay(1).contactClosed).toBe(false);
    r.setFault('relay1', null);
    expect(r.pinLevel(23)).toBe(0);
    clock.advance(10);
    expect(r.relay(1).contactClosed).toBe(true);
  });

  it('faults survive reboots (they are in the hardware)', () => {
    const { rig: r, clock } = rig();
    r.setFault('relay2', 'welded');
    r.powerLoss(50);
    clock.advance(60);
    expect(r.bootCount).toBe(2);
    expect(r.relay(2).contactClosed).toBe(true);
  });

  it('setFault rejects an unknown part or fault with a message naming what exists', () => {
    const { rig: r } = rig();
    expect(() => r.setFault('relay9', 'welded')).toThrow(/unknown part "relay9".*relay1, relay2, relay3, relay4/);
    expect(() => r.setFault('motor1', 'welded')).toThrow(/unknown part "motor1"/);
    expect(() => r.setFault('relay1', 'melted' as RelayFault)).toThrow(/unknown fault "melted".*coil_open, welded, pin_stuck_low, pin_stuck_high/);
    expect(() => r.relay(9)).toThrow(/no such channel/);
  });
});
