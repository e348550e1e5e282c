// What an action plugs into the executor with: relay.set, stepper.move, stepper.home and stop.
import type { BoardDef, DeviceResultState, ErrorCode, Evidence } from '@proofrig/protocol';

/** Report the outcome of the command in ring slot `slot`. Called once per run(). */
export type Done = (slot: number, st: DeviceResultState, ev: Evidence, ver: boolean, code?: ErrorCode, msg?: string) => void;

export interface Action {
  /** Action name as on the wire (`cmd.a`). */
  n: string;
  /** null when the arguments are valid for this board, else the INVALID_ARGS reason. */
  chk: (p: Record<string, unknown>, b: BoardDef) => string | null;
  /** null when the axis is ready, else the NOT_HOMED reason. Checked after chk, before busy. */
  nh?: (p: Record<string, unknown>) => string | null;
  /** null when the actuator is free, else the BUSY reason. Only called with checked arguments. */
  busy: (p: Record<string, unknown>) => string | null;
  /** null when no interlock holds the output (a relay's minimum off-time), else the MIN_OFF_TIME reason. Checked after busy. */
  rest?: (p: Record<string, unknown>) => string | null;
  /** What must happen at once, before the ack (stop: step outputs off). Also run when the outbox is full. */
  pre?: (p: Record<string, unknown>) => void;
  /** Start executing; call done exactly once, now or later. */
  run: (slot: number, p: Record<string, unknown>, done: Done) => void;
  /** Always executes: a repeated rid runs again (never a replay); with the outbox full, pre still runs. */
  al?: boolean;
  /**
   * Acknowledge (`ack` accepted) before running: actions that run for longer than a settle time
   * (moves, homing, a fan's spin-up, a stop waiting for the axes to rest). The others end within their
   * settle time and send only their `res`: an ack would cost two frames (it and the host's answer to it).
   */
  ak?: boolean;
  /** Only reads (sensor.read): it actuates nothing, so it still runs while the e-stop is latched. */
  ro?: boolean;
}
