// Board files are checked before anything runs, against what the ESP32 and Espruino can do.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { checkBoard } from '@proofrig/protocol';

const dir = new URL('../boards/', import.meta.url);
const load = (f: string) => JSON.parse(readFileSync(new URL(f, dir), 'utf8'));

describe('board definitions', () => {
  it.each(readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'board.schema.json'))('%s passes the board check', (f) => {
    const r = checkBoard(load(f));
    expect(r.ok ? [] : r.errors).toEqual([]);
  });

  it.each([
    ['an input-only pin driving a relay', (b: any) => (b.relays[0].pin = 34), /input-only and cannot drive a relay/],
    ['a flash pin', (b: any) => (b.relays[0].pin = 7), /not a usable ESP32 GPIO/],
    ['two uses of one pin', (b: any) => (b.relays[1].pin = b.relays[0].pin), /already used/],
    ['an internal pull on an input-only pin', (b: any) => (b.relays[0].feedback.pull = 'up'), /no internal pull resistor/],
    ['a settle time shorter than the relay', (b: any) => (b.relays[0].settle_ms = 3), /must cover the worst/],
  ])('refuses %s', (_what, mutate, msg) => {
    const b = load('relay-rig-4ch.json');
    mutate(b);
    const r = checkBoard(b);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.errors.join('\n')).toMatch(msg);
  });

  it.each([
    ['step pulses on a DAC pin', (b: any) => (b.steppers[0].driver.step_pin = 26), /DAC pin/],
    ['a watched switch on a pin Espruino cannot watch', (b: any) => (b.steppers[0].home.pin = 4), /cannot setWatch GPIO4/],
    ['a speed the driver cannot step', (b: any) => (b.steppers[0].driver.max_step_hz = 1000), /above driver.max_step_hz/],
    ['a tolerance finer than the encoder', (b: any) => (b.steppers[0].tolerance_mm = 0.01), /at least 2 encoder counts/],
    ['an empty travel', (b: any) => (b.steppers[0].travel = { min_mm: 5, max_mm: 5 }), /max_mm > min_mm/],
  ])('refuses %s', (_what, mutate, msg) => {
    const b = load('stepper-rig.json');
    mutate(b);
    const r = checkBoard(b);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.errors.join('\n')).toMatch(msg);
  });
});
