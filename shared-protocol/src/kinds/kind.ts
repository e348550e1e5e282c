// What the host, MCP and dashboard need to know about an action, declared by the kind that owns
// it (relay.ts, stepper.ts, device.ts) and listed once in index.ts. The firmware's side of each
// kind is its own module too (firmware/src/relay.ts, stepper.ts), listed in firmware/src/exec.ts.
import type { ActionName } from '../actions.js';
import type { BoardDef } from '../board.js';
import type { Evidence } from '../lifecycle.js';
import type { DeviceState } from '../device-state.js';

export interface ActionKind {
  action: ActionName;
  /**
   * Occupies an axis until it ends: one at a time per axis (the host refuses a second BUSY), it can
   * be cancelled by stopping its axis, it runs as an MCP task, and after it ends in a fault the axis
   * refuses motion until its real state was read (STATE_READ_REQUIRED).
   */
  motion: boolean;
  /** What it acts on, so views can attach it: a relay channel (args.ch), an axis (args.axis), or the whole device. */
  target: 'relay' | 'axis' | 'device';
  /** Evidence a completed command of this action carries. */
  evidence: readonly Evidence[];
  /** null when the arguments are valid for this board, else the INVALID_ARGS detail. */
  check(args: Record<string, unknown>, board: BoardDef): string | null;
  /**
   * Deadline inputs once the arguments are valid: the actuator's worst case (the `actuator_worst`
   * term of the timeout formula) and the time it is expected to take, both ms without the link.
   */
  timing(args: Record<string, unknown>, board: BoardDef, state: DeviceState | null): { worstMs: number; expectedMs: number };
  /** What it does, in words, for a person: "switch relay channel 4 of rig-1 on". */
  phrase(args: Record<string, unknown>, device: string): string;
  /** The same, short, for a row of a table, with the output's label when it has one: "relay 1 (bench lamp) on". */
  short(args: Record<string, unknown>, label: string | null): string;
  /** How to stop a running one (motion kinds): the action and arguments that end it cancelled. */
  cancel?(args: Record<string, unknown>): { action: ActionName; args: Record<string, unknown> };
}
