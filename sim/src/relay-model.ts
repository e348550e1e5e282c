// One relay channel of the rig: module input pin → coil → armature (after a seeded delay) → aux contact → input pin.
import type { RelayDef } from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import type { RelayFault } from './faults.js';
import type { Gpio, Level } from './gpio.js';
import type { Rng } from './prng.js';

/** The armature moves after this fraction of operate_ms / release_ms (seeded uniform). */
export const ACTUATION_MIN = 0.4;
export const ACTUATION_MAX = 0.9;

export interface RelayState {
  /** Current flows through the coil (false with coil_open even when driven). */
  energised: boolean;
  /** The contact observed by the aux input (or that would be, on channels without one). */
  contactClosed: boolean;
}

export class RelayModel {
  private fault: RelayFault | null = null;
  private coil = false;
  private armature = false;
  private pending: TimerHandle | undefined;
  private pendingTarget = false;
  private readonly unsubscribe: () => void;
  private readonly activeLevel: Level;
  private readonly auxPin: number | undefined;

  constructor(
    readonly def: RelayDef,
    private readonly gpio: Gpio,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly onContact?: (ch: number, closed: boolean) => void,
  ) {
    this.activeLevel = def.active_low ? 0 : 1;
    const inactive: Level = def.active_low ? 1 : 0;
    // The module's input: pulled to its inactive level when nothing drives it; a stuck fault overrides all.
    gpio.attach(def.pin, {
      stuck: () => (this.fault === 'pin_stuck_low' ? 0 : this.fault === 'pin_stuck_high' ? 1 : undefined),
      pull: () => inactive,
    });
    const fb = def.feedback;
    if (fb.kind === 'aux_contact') {
      this.auxPin = fb.pin;
      const closedLevel: Level = fb.active_low ? 0 : 1;
      const openLevel: Level = fb.active_low ? 1 : 0;
      gpio.attach(fb.pin, {
        drive: () => (this.contactClosed() ? closedLevel : undefined),
        // 'external' means a resistor on the board; 'up'/'down' are the MCU's own pulls, which the
        // firmware has to switch on (input_pullup / input_pulldown) or the open contact reads floating (0).
        pull: () => (fb.pull === 'external' ? openLevel : undefined),
      });
    }
    this.unsubscribe = gpio.onChange((pin) => {
      if (pin === def.pin) this.update();
    });
    this.update();
  }

  get ch(): number {
    return this.def.ch;
  }

  getFault(): RelayFault | null {
    return this.fault;
  }

  setFault(f: RelayFault | null): void {
    const before = this.contactClosed();
    this.fault = f;
    this.gpio.refresh(this.def.pin);
    this.update();
    this.contactMaybeChanged(before);
  }

  contactClosed(): boolean {
    return this.fault === 'welded' || this.armature;
  }

  state(): RelayState {
    return { energised: this.coil, contactClosed: this.contactClosed() };
  }

  /** Re-evaluate the coil after the pin level, the power or a fault changed. */
  update(): void {
    const coil =
      this.gpio.isPowered && this.fault !== 'coil_open' && this.gpio.level(this.def.pin) === this.activeLevel;
    this.coil = coil;
    if (this.pending !== undefined && this.pendingTarget === coil) return; // already on its way
    if (this.pending !== undefined) {
      this.clock.clearTimeout(this.pending);
      this.pending = undefined;
    }
    if (this.armature === coil) return;
    const worst = coil ? this.def.operate_ms : this.def.release_ms;
    const delay = worst * (ACTUATION_MIN + (ACTUATION_MAX - ACTUATION_MIN) * this.rng());
    this.pendingTarget = coil;
    this.pending = this.clock.setTimeout(() => {
      this.pending = undefined;
      const before = this.contactClosed();
      this.armature = coil;
      this.contactMaybeChanged(before);
    }, delay);
  }

  /** Stop for good: cancel the pending move and unplug from the pins. */
  dispose(): void {
    if (this.pending !== undefined) this.clock.clearTimeout(this.pending);
    this.pending = undefined;
    this.unsubscribe();
    this.gpio.detach(this.def.pin);
    if (this.auxPin !== undefined) this.gpio.detach(this.auxPin);
  }

  private contactMaybeChanged(before: boolean): void {
    const now = this.contactClosed();
    if (now === before) return;
    if (this.auxPin !== undefined) this.gpio.refresh(this.auxPin);
    this.onContact?.(this.def.ch, now);
  }
}
