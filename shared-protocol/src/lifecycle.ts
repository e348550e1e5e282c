// Command lifecycle and evidence.
//   submitted → sent → accepted → running → one terminal state

export const LIFECYCLE_STATES = [
  'submitted',
  'sent',
  'accepted',
  'running',
  'completed',
  'unverified',
  'failed',
  'rejected',
  'timeout',
  'cancelled',
] as const;
export type LifecycleState = (typeof LIFECYCLE_STATES)[number];

export const TERMINAL_STATES = ['completed', 'unverified', 'failed', 'rejected', 'timeout', 'cancelled'] as const;
export type TerminalState = (typeof TERMINAL_STATES)[number];

export function isTerminal(s: LifecycleState): s is TerminalState {
  return (TERMINAL_STATES as readonly string[]).indexOf(s) >= 0;
}

/** Terminal states a device may report in a result frame (timeout is only ever the host's verdict). */
export const DEVICE_RESULT_STATES = ['completed', 'unverified', 'failed', 'rejected', 'cancelled'] as const;
export type DeviceResultState = (typeof DEVICE_RESULT_STATES)[number];

export const EVIDENCE_KINDS = ['pin_readback', 'aux_contact', 'encoder', 'sensor', 'load_current', 'tachometer', 'none'] as const;
export type Evidence = (typeof EVIDENCE_KINDS)[number];

/** What each state means and does not mean; the README table and the MCP tool descriptions come from here. */
export const STATE_MEANING: Record<LifecycleState, { means: string; does_not_mean: string }> = {
  submitted: {
    means: 'The host recorded the command in its journal.',
    does_not_mean: 'That anything was sent to the device.',
  },
  sent: {
    means: 'The command frame was written to the device link.',
    does_not_mean: 'That the device received it.',
  },
  accepted: {
    means: 'The device received the command, checked its arguments and started it.',
    does_not_mean: 'That the actuator moved.',
  },
  running: {
    means: 'The device reported the action in progress.',
    does_not_mean: 'That it will finish.',
  },
  completed: {
    means: 'The device executed the action and feedback (evidence) confirmed the target state.',
    does_not_mean: 'Anything about the load beyond what the evidence observes (e.g. a contact closing, not the lamp lighting).',
  },
  unverified: {
    means: 'The device executed the action on an output that has no feedback.',
    does_not_mean: 'That the actuator reached the target: nothing observed it.',
  },
  failed: {
    means: 'The device tried and the evidence contradicts the target, the device rebooted mid-command, or it claimed completed without verified evidence; error_code says which.',
    does_not_mean: 'That the actuator is back where it was: read the device state.',
  },
  rejected: {
    means: 'Refused before acting (invalid args, offline, busy, unknown action, not homed, state read required); nothing moved.',
    does_not_mean: 'That the device is faulty.',
  },
  timeout: {
    means: 'No terminal evidence by the deadline: the device, asked for its real state, gave none, or could not be asked within a bounded grace, or the host stopped before sending the command.',
    does_not_mean: 'That the action failed: the outcome is unknown.',
  },
  cancelled: {
    means: 'The command was stopped before it finished.',
    does_not_mean: 'That the actuator is in a safe or known position: read the device state.',
  },
};

export const EVIDENCE_MEANING: Record<Evidence, { means: string; does_not_mean: string }> = {
  aux_contact: {
    means: 'An auxiliary contact, or a switch such as an axis home switch, wired to an input confirmed the target after the settle time.',
    does_not_mean: 'That the load is powered or the mechanism is right beyond what that one contact or switch shows.',
  },
  pin_readback: {
    means: 'The output pin was read back at the written level after the settle time.',
    does_not_mean: 'That the relay coil or contact moved: only the MCU pin is observed.',
  },
  encoder: {
    means: 'The encoder measured the axis within tolerance of the target.',
    does_not_mean: 'That the carriage did not slip against the screw beyond what the encoder sees.',
  },
  sensor: {
    means: 'The sensor answered on its bus with data whose checksum matched and whose value lies in the plausible range of the board.',
    does_not_mean: 'That the sensor is calibrated or measures what it should (a sensor hanging in the wrong place still reads).',
  },
  load_current: {
    means: "A current sensor in series with the load measured it drawing more than the relay's on_above (switched on) or less than its off_below (switched off) after the settle time.",
    does_not_mean: 'That the load works as it should beyond drawing that current (a heater drawing its current may still be in the wrong place).',
  },
  tachometer: {
    means: 'The fan\'s tachometer pulses, counted after its spin-up time, gave a speed within the board\'s tolerance of the speed its curve expects at that duty (or, at duty 0, a stopped fan).',
    does_not_mean: 'That air moves as it should (a fan spinning in a blocked duct still turns), or that the curve of the board matches this fan.',
  },
  none: {
    means: 'Nothing observed the outcome.',
    does_not_mean: 'Success: a result with no evidence is never completed.',
  },
};
