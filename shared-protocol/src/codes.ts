// The error-code table: the one place a code is declared. Both sides use the `ErrorCode`
// type; the firmware writes codes as typed string literals so none of the prose below
// is bundled onto the chip.

export interface ErrorInfo {
  /** What the code means to the agent and to a person. */
  meaning: string;
  /** The terminal state a command ends in when this code is the reason. */
  ends: 'failed' | 'rejected' | 'timeout' | 'cancelled' | null;
  /** May the same request be sent again (with the same request_id) without harm? */
  retry: 'same_request_id' | 'after_fresh_state_read' | 'no' | 'fix_input';
  /**
   * A refusal of the moment when the host decides it before sending anything: the reason passes
   * (the device offline, the axis busy with another motion, a state read due after a fault), so it
   * is not the request's answer and a retry with the same request_id is judged anew.
   */
  moment?: true;
}

export const ERROR_CODES = {
  DEVICE_OFFLINE: {
    meaning: 'The device is unknown or not connected; nothing was sent to it.',
    ends: 'rejected',
    retry: 'same_request_id',
    moment: true,
  },
  DEVICE_REBOOTED: {
    meaning:
      'The device restarted (new boot id) while the command was in flight; its outcome is lost with the old boot and the actuator may be in its power-on state.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  INVALID_ARGS: {
    meaning: 'An argument is missing, of the wrong type or out of range; nothing moved.',
    ends: 'rejected',
    retry: 'fix_input',
  },
  UNKNOWN_ACTION: {
    meaning: 'The device does not implement this action; nothing moved.',
    ends: 'rejected',
    retry: 'no',
  },
  BUSY: {
    meaning: 'The actuator is executing another command; this one was refused, not queued.',
    ends: 'rejected',
    retry: 'after_fresh_state_read',
    moment: true,
  },
  READBACK_MISMATCH: {
    meaning: 'The output pin read back a level different from the one written, after the settle time.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  NO_FEEDBACK: {
    meaning:
      'The feedback did not follow the output: an aux contact that did not follow within the settle time (open coil, welded contact, broken wire), a load whose current did not cross its threshold (a blown lamp, a fuse out, a welded contact; the detail gives the amps), an encoder that did not count while the motor stepped, or a fan whose tachometer measured a speed outside the tolerance of its curve after spin-up (stalled, unplugged, a noisy tach line; the measured rpm is in the detail).',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  TIMEOUT: {
    meaning:
      'No terminal evidence arrived by the deadline: the device, asked for its real state, gave none, or could not be asked within a bounded grace, or the host stopped before sending the command (the detail says which). The outcome is unknown, not failed.',
    ends: 'timeout',
    retry: 'after_fresh_state_read',
  },
  UNPROVEN_COMPLETION: {
    meaning:
      'The device claimed completed without verified evidence (verified false or evidence none); the host does not report that as completed, and the detail carries the claim.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  MOTOR_STALL: {
    meaning: 'The motor driver raised FAULT during motion; motion was stopped.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  POSITION_ERROR: {
    meaning: 'The measured position is outside tolerance of the target at the end of the move.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  LIMIT_HIT: {
    meaning: 'A travel limit switch closed during the move; motion was stopped.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  NOT_HOMED: {
    meaning: 'The axis has not been homed since the device booted, so its position is unknown; home it first (stepper_home).',
    ends: 'rejected',
    retry: 'fix_input',
  },
  STATE_READ_REQUIRED: {
    meaning:
      'The axis ended its last move in a fault (stall, limit, position error, reboot); read its real state (get_device_status refresh=true) before moving it again.',
    ends: 'rejected',
    retry: 'after_fresh_state_read',
    moment: true,
  },
  CANCELLED: {
    meaning: 'The command was cancelled before it finished.',
    ends: 'cancelled',
    retry: 'after_fresh_state_read',
  },
  MALFORMED_FRAME: {
    meaning: 'A frame was not valid JSON or a field had the wrong type; it was ignored and changed nothing.',
    ends: null,
    retry: 'no',
  },
  FRAME_TOO_LARGE: {
    meaning:
      'The device could not afford to hold and parse a frame this long in its free memory (JsVars); it refused the frame unread, changed nothing and reconnects for a fresh session.',
    ends: null,
    retry: 'no',
  },
  UNKNOWN_FRAME: {
    meaning: 'A frame had a type the receiver does not know; it was ignored and changed nothing.',
    ends: null,
    retry: 'no',
  },
  AUTH_FAILED: {
    meaning: 'The device could not prove its per-device secret; the connection was refused.',
    ends: null,
    retry: 'no',
  },
  PROTOCOL_VERSION: {
    meaning: 'The peer speaks a protocol version this side does not; the connection was refused.',
    ends: null,
    retry: 'no',
  },
  UNKNOWN_COMMAND: {
    meaning: 'No command with this id is known to this host.',
    ends: null,
    retry: 'no',
  },
  MAX_ON_TIME: {
    meaning:
      'The device switched the output off by itself at its board maximum on-time (max_on_ms) before this command had its result; the output is off.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  MIN_OFF_TIME: {
    meaning:
      'The output was switched off less than its board minimum off-time (min_off_ms) ago, so the device refused to switch it on; nothing was switched. The detail says how long to wait before a new command.',
    ends: 'rejected',
    retry: 'no',
  },
  ESTOP_LATCHED: {
    meaning:
      'The device latched its e-stop: every relay is off and every axis stopped and disabled until an operator clears the latch (estop_clear); the command was refused and nothing moved.',
    ends: 'rejected',
    retry: 'after_fresh_state_read',
  },
  ESTOP_ACTIVE: {
    meaning: 'The e-stop input is still pressed (active), so the latch cannot be cleared; release it at the rig first.',
    ends: 'rejected',
    retry: 'after_fresh_state_read',
  },
  OPERATOR_REQUIRED: {
    meaning:
      'The action is operator-only and the call carried no operator scope (nor a confirmation at the host\'s own terminal); it was refused where it was dispatched and nothing was sent to the device.',
    ends: null,
    retry: 'no',
  },
  COMMAND_PRUNED: {
    meaning: 'The command ended long ago and its record was pruned by the journal\'s retention; only its final state and times are kept.',
    ends: null,
    retry: 'no',
  },
  BUS_NAK: {
    meaning:
      'The sensor did not acknowledge on its bus (unplugged, unpowered, still powering up, wrong address or a broken wire), or answered with no conversion ready (an INA219 just powered up); there is no reading, and no value was reported.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  SENSOR_CRC: {
    meaning: 'The sensor answered but the checksum of its data did not match (noise on the bus, a loose wire); the reading was discarded, no value was reported. Read again with a new request_id (the same one replays this result).',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  OUT_OF_RANGE: {
    meaning: 'The reading lies outside the plausible range of the board (a broken sensor, a floating input); it was discarded, no value was reported.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
  SENSOR_STALE: {
    meaning: 'The last reading is older than the sensor\'s max_age_ms, so it no longer counts as the current value; read the sensor again.',
    ends: null,
    retry: 'no',
  },
  INTERNAL: {
    meaning: 'An unexpected error inside the receiver; the detail says where.',
    ends: 'failed',
    retry: 'after_fresh_state_read',
  },
} as const satisfies Record<string, ErrorInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes whose host-made refusals are of the moment (`moment: true`), in table order. */
export function momentCodes(): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => (ERROR_CODES[c] as ErrorInfo).moment === true);
}

export function isErrorCode(x: unknown): x is ErrorCode {
  return typeof x === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, x);
}
