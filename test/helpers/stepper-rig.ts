// The stepper axis of boards/stepper-rig.json in the vm fake with a scripted host, for the firmware
// stepper specs (firmware-stepper*.test.ts): its pins, the `Slide` stand-in for the mechanics, the
// command frames, and boot / homed / runTo on the built firmware (useStepperFirmware() builds it once
// per spec file).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { recvValidated, useBuiltFirmware } from './firmware-build';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { loadFirmware, type Rig } from '../../firmware/test/espruino-fake';

export const root = resolve(__dirname, '..', '..');
export const board = JSON.parse(readFileSync(join(root, 'boards/stepper-rig.json'), 'utf8')) as BoardDef;
export const relayBoard = JSON.parse(readFileSync(join(root, 'boards/relay-rig-4ch.json'), 'utf8')) as BoardDef;
export const X = board.steppers![0];
export const STEP = X.driver.step_pin;
export const DIR = X.driver.dir_pin;
export const EN = X.driver.enable_pin;
export const FAULT = X.driver.fault.pin;
export const A = X.encoder.a_pin;
export const B = X.encoder.b_pin;
export const HOME = X.home.pin;
export const LIMIT = X.limit_max!.pin;
export const CPM = X.encoder.counts_per_mm;
export const SPM = X.steps_per_mm;
export const config = (b: BoardDef): RigConfig => ({ dev: 'slide-1', secret: '5e'.repeat(32), host: 'ws://10.0.0.2:8787/device', board: b });

/** Every frame the device sends must pass the host's validator. */
export const recv = recvValidated;

/**
 * The test's stand-in for the mechanics: after every slice of time, the carriage moves by the
 * pulses issued since (towards the DIR level's side) × ratio, and the encoder reports it.
 * ratio 1 = follows, 0 = encoder dead, 0.5 = slipping.
 */
export class Slide {
  mm = 0;
  count = 0;
  ratio = 1;
  private last = 0;
  constructor(private rig: Rig) {}
  sync(): void {
    const p = this.rig.pulses(STEP);
    const d = p - this.last;
    this.last = p;
    this.mm += ((d / SPM) * (this.rig.pins[DIR] === X.driver.dir_positive_level ? 1 : -1)) * this.ratio;
    const want = Math.round(this.mm * CPM);
    this.rig.quad(A, B, want - this.count);
    this.count = want;
  }
  /** Advance ms of virtual time in 5 ms slices, the encoder following. */
  run(ms: number): void {
    for (let t = 0; t < ms; t += 5) {
      this.rig.advance(Math.min(5, ms - t));
      this.sync();
    }
  }
  /** Run until the carriage reaches mm (moving either way) or ms pass. */
  until(mm: number, ms = 20000): void {
    const start = this.mm;
    for (let t = 0; t < ms; t += 5) {
      if ((start <= mm && this.mm >= mm) || (start > mm && this.mm <= mm)) return;
      this.run(5);
    }
  }
  /** The homing/home reference: the encoder count is now 0 here. */
  zero(): void {
    this.mm = 0;
    this.count = 0;
  }
}


export const move = (rid: string, mm: number, speed?: number) => ({ t: 'cmd', rid, a: 'stepper.move', p: speed === undefined ? { axis: 'x', mm } : { axis: 'x', mm, speed } });
export const home = (rid: string) => ({ t: 'cmd', rid, a: 'stepper.home', p: { axis: 'x' } });
export const stop = (rid: string, axis?: string) => ({ t: 'cmd', rid, a: 'stop', p: axis ? { axis } : {} });
export const results = (fs: Record<string, any>[]) => fs.filter((f) => f.t === 'res');

/** Registers the firmware build (beforeAll) in the calling spec file; its rigs boot that build. */
export function useStepperFirmware() {
  const builtFirmware = useBuiltFirmware();

  function boot(b: BoardDef = board) {
    const rig = loadFirmware(config(b), builtFirmware());
    const { s } = rig.connectUp(60000);
    rig.input(FAULT, 1);
    rig.input(HOME, 1);
    rig.input(LIMIT, 1);
    return { rig, s, slide: new Slide(rig) };
  }

  /** Boot and home: the carriage starts 5 mm from the switch, homing runs until the switch closes. */
  function homed(bd: BoardDef = board) {
    const b = boot(bd);
    b.rig.send(b.s, home('h1'));
    b.slide.mm = 5;
    b.slide.until(0);
    b.rig.input(HOME, 0);
    b.slide.zero();
    const fs = recv(b.rig, b.s);
    expect(results(fs)[0]).toMatchObject({ rid: 'h1', st: 'completed' });
    b.rig.input(HOME, 1);
    b.slide.sync();
    return b;
  }


  /** Run the slide until the result of rid arrives (or ms pass); every frame seen is returned. */
  function runTo(b: ReturnType<typeof boot>, rid: string, ms = 15000): Record<string, any>[] {
    const seen: Record<string, any>[] = [];
    for (let t = 0; t < ms; t += 5) {
      b.slide.run(5);
      seen.push(...recv(b.rig, b.s));
      if (seen.some((f) => f.t === 'res' && f.rid === rid)) break;
    }
    return seen;
  }
  return { boot, homed, runTo };
}
