// Board definitions: the JSON files in boards/ and the `board` field of a rig config.
// Pins are ESP32 GPIO numbers (Espruino accepts a number wherever it takes a pin).

export type RelayFeedback =
  /** An auxiliary (mirror) contact of the relay wired to an input pin. */
  | { kind: 'aux_contact'; pin: number; active_low: boolean; pull: 'up' | 'down' | 'external' }
  /** Only the MCU output pin is read back. */
  | { kind: 'pin_readback' }
  /** Nothing observes this output. */
  | { kind: 'none' };

export interface RelayDef {
  /** Channel number as printed on the module, 1-based. */
  ch: number;
  name: string;
  /** GPIO driving the module input. */
  pin: number;
  /** true when the module energises the coil on a LOW input (most opto-isolated modules). */
  active_low: boolean;
  /** Datasheet worst-case operate and release times of the relay. */
  operate_ms: number;
  release_ms: number;
  /** Wait after writing before feedback is read; must cover operate/release plus contact bounce. */
  settle_ms: number;
  feedback: RelayFeedback;
}

export interface BoardDef {
  /** Stable identifier, also the default device id of a simulated rig. */
  id: string;
  name: string;
  mcu: 'esp32';
  /** The dev board, e.g. "ESP32-DevKitC-32E". */
  module: string;
  /** Worst case from receiving a frame to starting the action, measured on the device. */
  device_processing_max_ms: number;
  relays: RelayDef[];
  notes?: string[];
}

/** Worst-case actuator time of a relay channel, the `actuator_worst` term of the timeout formula. */
export function relayWorstMs(r: RelayDef): number {
  return Math.max(r.settle_ms, r.operate_ms, r.release_ms);
}

export function findRelay(board: BoardDef, ch: number): RelayDef | undefined {
  for (let i = 0; i < board.relays.length; i++) if (board.relays[i].ch === ch) return board.relays[i];
  return undefined;
}
