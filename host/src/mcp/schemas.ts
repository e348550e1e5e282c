// zod schemas of what the MCP tools take and return. Lifecycle states, evidence kinds and
// error codes come from the shared protocol, so the tool surface cannot drift from the wire.
import { z } from 'zod';
import { ERROR_CODES, EVIDENCE_KINDS, ID_CHARS, ID_RULE, LIFECYCLE_STATES, MAX_ID_LENGTH, MAX_LABEL_LENGTH, MIN_STEP_HZ, type DeviceState, type ErrorCode } from '@proofrig/protocol';
import type { CommandStatus } from '../core/command-view.js';
import type { deviceViews } from './resources.js';

const errorCodes = Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]];

export const RelayStateSchema = z.object({
  ch: z.number(),
  cmd: z.boolean().nullable().describe('last level commanded since boot; null = never commanded since boot'),
  pin: z.boolean().nullable().describe('output pin read back (on/off); null = not read back on this channel'),
  aux: z.boolean().nullable().describe('auxiliary contact closed; null = no contact wired'),
});

export const AxisStateSchema = z.object({
  axis: z.string(),
  pos: z.number().describe('position measured by the encoder, mm'),
  cmd: z.number().describe('position the step generator believes, mm'),
  moving: z.boolean(),
  homed: z.boolean(),
  fault: z.boolean().describe('driver FAULT asserted now'),
  home: z.boolean().describe('home switch closed now'),
  limit: z.boolean().describe('max limit switch closed now'),
});

export const SensorStateSchema = z.object({
  id: z.string(),
  v: z.number().nullable().describe('the value of the last reading; null unless st is "ok"'),
  st: z.string().describe('"ok", the error code of the last reading (BUS_NAK, SENSOR_CRC, OUT_OF_RANGE), or "none" before the first'),
  at: z.number().describe('device uptime (ms) when it was measured; 0 before the first'),
});

export const FanStateSchema = z.object({
  id: z.string(),
  duty: z.number().describe('duty commanded, % (0 at boot)'),
  rpm: z.number().nullable().describe('the speed its tachometer last measured; null without a tachometer or before the first measurement'),
  at: z.number().describe('device uptime (ms) of that measurement; 0 before the first'),
});

export const ServoStateSchema = z.object({
  id: z.string(),
  deg: z.number().nullable().describe('angle last commanded; null before the first command since boot or after an e-stop (not driven). Nothing measures where it really is'),
  move_ms: z.number().describe('the time that move needs at the servo\'s speed'),
  at: z.number().describe('device uptime (ms) when it was commanded; 0 before the first'),
});

export const DeviceStateSchema = z.object({
  up: z.number().describe('device uptime in ms when observed'),
  relays: z.array(RelayStateSchema),
  axes: z.array(AxisStateSchema).optional(),
  estop: z.boolean().optional().describe('e-stop latched: every output held off until an operator clears it (estop_clear); present when the board has an e-stop input'),
  sensors: z.array(SensorStateSchema).optional().describe('the last reading of each sensor since boot, on a board with sensors (read_sensor reads one now)'),
  fans: z.array(FanStateSchema).optional().describe('every fan\'s duty and last measured speed, on a board with fans (fan_set)'),
  servos: z.array(ServoStateSchema).optional().describe('every servo\'s commanded angle, on a board with servos (servo_set)'),
});

export const CommandStatusSchema = z.object({
  command_id: z.string(),
  request_id: z.string().describe('idempotency key sent to the device; reuse it to retry the same command safely'),
  device_id: z.string(),
  action: z.string(),
  args: z.record(z.string(), z.unknown()),
  state: z.enum(LIFECYCLE_STATES),
  terminal: z.boolean().describe('true once the state will never change again'),
  accepted: z.boolean().describe('the device acknowledged and started the command'),
  executed: z.boolean().describe('the device reported that it drove the hardware'),
  verified: z.boolean().describe('feedback confirmed the target state (only ever true with evidence)'),
  evidence: z.enum(EVIDENCE_KINDS).nullable().describe('what confirmed the outcome; null until terminal'),
  error_code: z.enum(errorCodes).nullable(),
  detail: z.string().nullable(),
  submitted_at: z.string(),
  terminal_at: z.string().nullable(),
  elapsed_ms: z.number(),
  deadline_ms: z.number().nullable().describe('deadline from the timeout formula, ms after submission'),
  estimated_seconds: z.number(),
  estimated_remaining_seconds: z.number().nullable(),
  progress_pct: z.number().nullable(),
  position_mm: z.number().nullable().describe('last position measured by the encoder for a motion command, mm'),
  device_state: DeviceStateSchema.nullable().describe('device state snapshot observed with this command'),
  device_state_observed_at: z.string().nullable(),
  device_state_age_ms: z.number().nullable(),
});

export const DeviceViewSchema = z.object({
  names: z.array(z.string()).describe("what a person calls this device's outputs (labels, else names); action tools take a name alone when it is unique on the host"),
  area: z.string().nullable().describe('where the device is, from its board file'),
  device_id: z.string(),
  online: z.boolean(),
  board_id: z.string(),
  board_name: z.string(),
  boot_id: z.string().nullable(),
  firmware: z.string().nullable(),
  last_seen: z.string().nullable(),
  last_seen_age_ms: z.number().nullable(),
  rtt_max_ms: z.number(),
  state: DeviceStateSchema.nullable(),
  state_observed_at: z.string().nullable(),
  state_age_ms: z.number().nullable().describe('how old the state is; refresh: true reads it from the device'),
  refused_frames: z
    .object({ by_host: z.number(), by_device: z.number() })
    .nullable()
    .describe('frames refused on the current connection (forged, replayed, reordered or truncated); null while offline'),
  interlock_events: z
    .array(z.object({ at: z.string(), boot_id: z.string(), kind: z.string(), ch: z.number().nullable(), msg: z.string() }))
    .describe('what the device interlocks did by themselves (max_on: a relay switched off after its board maximum on-time; estop: the e-stop latched every output off), newest first'),
  booting: z.boolean().describe('offline but expected online shortly (a simulated rig booting, or a device reconnecting); actions wait briefly for it'),
  outputs: z
    .object({
      relays: z.array(z.object({ ch: z.number(), name: z.string(), label: z.string().nullable() })),
      axes: z.array(z.object({ axis: z.string(), name: z.string(), label: z.string().nullable() })),
    })
    .describe('channels and axes of the board with their names; tools take the number/axis id or the label'),
  sensors: z
    .array(
      z.object({
        id: z.string(),
        label: z.string().nullable(),
        unit: z.string(),
        kind: z.enum(['sht3x', 'ina219', 'adc']),
        max_age_ms: z.number(),
        value: z.number().nullable().describe('the last reading; null unless status is "ok"'),
        status: z.string().describe('"ok", BUS_NAK, SENSOR_CRC, OUT_OF_RANGE, SENSOR_STALE (older than max_age_ms) or "none" (not read since boot)'),
        measured_at: z.string().nullable(),
        age_ms: z.number().nullable(),
      }),
    )
    .describe('the sensors of the board with their last reading, as read_sensor source "cache" gives it (read_sensor takes the id or the label; resource proofrig://devices/{device_id}/sensors/{id})'),
  pwm: z
    .array(z.object({ id: z.string(), label: z.string().nullable(), kind: z.enum(['fan', 'servo']), feedback: z.enum(['tachometer', 'none']) }))
    .describe('the fans (fan_set) and servos (servo_set) of the board, by id or label, and what observes them'),
});

export const DeviceStatusSchema = DeviceViewSchema.extend({
  source: z.enum(['cache', 'device']).describe('device = read from the device by this call; cache = last observation'),
  refresh_error: z.string().nullable(),
});

export const DeviceListSchema = z.object({ devices: z.array(DeviceViewSchema) });

/** Longest an action tool may wait for the outcome: under the 60 s default request timeout of the SDK clients. */
export const MAX_ACTION_WAIT_MS = 55000;

const actionWait = z
  .number({ error: 'wait_ms must be an integer number of milliseconds' })
  .int('wait_ms must be a whole number of milliseconds')
  .min(0, `wait_ms must be 0..${MAX_ACTION_WAIT_MS}`)
  .max(MAX_ACTION_WAIT_MS, `wait_ms must be 0..${MAX_ACTION_WAIT_MS}`)
  .optional()
  .describe(
    `optional: wait up to this long (max ${MAX_ACTION_WAIT_MS} ms) for the terminal outcome and return it in this one call (terminal tells whether it arrived); omitted = answer once the device accepted`,
  );

const deviceId = z.string({ error: 'device_id must be a string' }).min(1, 'device_id must not be empty').max(64);

const outputName = z.string({ error: 'name must be a string such as "bench lamp"' }).min(1).max(MAX_LABEL_LENGTH);

export const RelaySetInput = z.strictObject({
  name: outputName.optional().describe('the output\'s name from list_devices ("bench lamp"), alone when unique on the host; instead of device_id + channel'),
  device_id: deviceId.optional().describe('device id from list_devices'),
  channel: z
    .union([
      z
        .number({ error: 'channel must be an integer channel number such as 1, or a channel label such as "bench lamp"' })
        .int('channel must be a whole number such as 1, not a fraction')
        .min(1, 'channel must be 1 or more')
        .max(64, 'channel must be 64 or less'),
      z.string({ error: 'channel must be an integer channel number such as 1, or a channel label such as "bench lamp"' }).min(1).max(MAX_LABEL_LENGTH),
    ], {
      // A number that breaks a rule gets that rule's message, anything else the general one.
      error: (iss) =>
        typeof iss.input === 'number'
          ? ((iss as { errors?: { message: string }[][] }).errors?.[0]?.[0]?.message ?? 'channel must be a whole number 1..64')
          : 'channel must be an integer channel number such as 1, or a channel label such as "bench lamp"',
    })
    .optional()
    .describe('relay channel as printed on the module (1-based), or its label/name ("bench lamp")'),
  on: z.boolean({ error: 'on must be true or false (a JSON boolean)' }).describe('true = energise the relay, false = release it'),
  request_id: z
    .string()
    .min(1, 'request_id ' + ID_RULE)
    .max(MAX_ID_LENGTH, 'request_id ' + ID_RULE)
    .regex(ID_CHARS, 'request_id ' + ID_RULE)
    .optional()
    .describe('optional idempotency key: sending the same request_id again returns the same command and never switches twice'),
  wait_ms: actionWait,
});

export const ActionStatusInput = z.strictObject({
  command_id: z.string({ error: 'command_id must be a string' }).min(1).max(64).describe('command_id returned by an action tool'),
  wait_ms: z
    .number({ error: 'wait_ms must be an integer number of milliseconds' })
    .int('wait_ms must be a whole number of milliseconds')
    .min(0, 'wait_ms must be 0..5000')
    .max(5000, 'wait_ms must be 0..5000')
    .default(3000)
    .describe('wait up to this long for a terminal state (returns as soon as it is terminal); 0 = answer now'),
});

export const DeviceStatusInput = z.strictObject({
  device_id: deviceId,
  refresh: z
    .boolean({ error: 'refresh must be true or false' })
    .default(false)
    .describe('true = ask the device now (slower, fresh); false = cached state with its age'),
});

const requestId = z
  .string()
  .min(1, 'request_id ' + ID_RULE)
    .max(MAX_ID_LENGTH, 'request_id ' + ID_RULE)
    .regex(ID_CHARS, 'request_id ' + ID_RULE)
  .optional()
  .describe('optional idempotency key: the same request_id again returns the same command and never moves twice');

const axis = z.string({ error: 'axis must be a string such as "x"' }).min(1).max(MAX_LABEL_LENGTH).describe('axis id from the device board ("x"), or its label/name from list_devices ("slide")');

export const StepperMoveInput = z.strictObject({
  name: outputName.optional().describe('the axis name from list_devices ("slide"), alone when unique on the host; instead of device_id + axis'),
  device_id: deviceId.optional(),
  axis: axis.optional(),
  target_mm: z
    .number({ error: 'target_mm must be a number of millimetres (absolute)' })
    .finite('target_mm must be a finite number')
    .describe('ABSOLUTE target position in mm from home; the board sets the travel (stepper-rig: 0..200)'),
  speed_mm_s: z
    .number({ error: 'speed_mm_s must be a number of mm/s' })
    .positive('speed_mm_s must be more than 0')
    // Every board's floor is MIN_STEP_HZ / steps_per_mm (0.25 mm/s on stepper-rig); the board check names it exactly.
    .min(0.001, 'speed_mm_s must be at least the axis\'s slowest speed (MIN_STEP_HZ / steps_per_mm, e.g. 0.25 mm/s on stepper-rig)')
    .optional()
    .describe(`cruise speed; defaults to and may not exceed the board's max_speed_mm_s, and may not be below ${MIN_STEP_HZ} steps/s (steps_per_mm from the board: 0.25 mm/s on stepper-rig)`),
  request_id: requestId,
  wait_ms: actionWait,
});

export const StepperHomeInput = z.strictObject({
  name: outputName.optional().describe('the axis name from list_devices ("slide"), alone when unique on the host'),
  device_id: deviceId.optional(),
  axis: axis.optional(),
  request_id: requestId,
  wait_ms: actionWait,
});

const stopWait = z
  .number({ error: 'wait_ms must be an integer number of milliseconds' })
  .int('wait_ms must be a whole number of milliseconds')
  .min(0, `wait_ms must be 0..${MAX_ACTION_WAIT_MS}`)
  .max(MAX_ACTION_WAIT_MS, `wait_ms must be 0..${MAX_ACTION_WAIT_MS}`)
  .default(5000)
  .describe('wait up to this long for the device to confirm (default 5000)');

export const StopDeviceInput = z.strictObject({ device_id: deviceId, wait_ms: stopWait });

export const CancelInput = z.strictObject({
  command_id: z.string({ error: 'command_id must be a string' }).min(1).max(64),
  wait_ms: stopWait,
});

export const ListDevicesInput = z.strictObject({});

export const ListCommandsInput = z.strictObject({
  device_id: deviceId.optional().describe('only commands of this device'),
  state: z
    .array(z.enum(LIFECYCLE_STATES))
    .min(1)
    .optional()
    .describe('only commands in one of these lifecycle states, e.g. ["running"] or ["failed","timeout"]'),
  open: z.boolean({ error: 'open must be true or false' }).optional().describe('true = only commands that are not terminal yet'),
  since: z.iso.datetime({ offset: true, error: 'since must be an ISO 8601 time such as 2026-01-01T10:00:00Z' }).optional().describe('submitted at or after this ISO 8601 time'),
  until: z.iso.datetime({ offset: true, error: 'until must be an ISO 8601 time such as 2026-01-01T10:00:00Z' }).optional().describe('submitted at or before this ISO 8601 time'),
  limit: z.number().int().min(1, 'limit must be 1..200').max(200, 'limit must be 1..200').default(20).describe('most recent first, at most this many (default 20)'),
});

export const CancelResultSchema = z.object({
  command: CommandStatusSchema.describe('the command asked to be cancelled, as it stands after the attempt'),
  cancel_requested: z.boolean().describe('a stop was sent to the device for this command'),
  stop_command_id: z.string().nullable(),
  reason: z.string().nullable().describe('why nothing was sent, when cancel_requested is false'),
});

export const CommandSummarySchema = z.object({
  command_id: z.string(),
  request_id: z.string(),
  device_id: z.string(),
  action: z.string(),
  args: z.record(z.string(), z.unknown()),
  state: z.enum(LIFECYCLE_STATES),
  terminal: z.boolean(),
  verified: z.boolean(),
  evidence: z.enum(EVIDENCE_KINDS).nullable(),
  error_code: z.enum(errorCodes).nullable(),
  submitted_at: z.string(),
  terminal_at: z.string().nullable(),
});

export const CommandListSchema = z.object({ commands: z.array(CommandSummarySchema) });

// The schemas above describe values the core builds from the protocol's types: a compile-time check
// that each accepts exactly those types, so a field added to (or changed in) one and not the other
// fails the build instead of drifting.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agree = <T extends true>(): T | undefined => undefined;
agree<Same<z.infer<typeof DeviceStateSchema>, DeviceState>>();
agree<Same<z.infer<typeof CommandStatusSchema>, CommandStatus>>();
agree<Same<z.infer<typeof DeviceViewSchema>, ReturnType<typeof deviceViews>[number]>>();
