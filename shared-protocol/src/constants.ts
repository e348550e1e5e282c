// Numbers both sides must agree on.

/**
 * 2: the host proves the secret in `ok`, and every later frame is sealed (seal.ts).
 * 3: actions that end within their own short settle time send no `ack` (the `res` says it all), and a
 * `cmd` may carry the host's `rack` of an earlier result (`k`): 2 frames per relay command instead of 5.
 * 4: a snapshot's relays travel as three bit masks (`s.r`, relay-wire.ts) the host reads with the board.
 */
export const PROTOCOL_VERSION = 4;
/** Recent request_ids the device remembers with their outcomes (a fixed ring). */
export const DEDUPE_RING_SIZE = 32;
/** Heartbeat period the host asks for in its welcome frame unless configured otherwise. */
export const DEFAULT_HEARTBEAT_MS = 2000;
/** A peer silent for this many heartbeat periods is considered gone. */
export const LIVENESS_MISSES = 3;
/** HTTP path of the device WebSocket gateway. */
export const DEVICE_PATH = '/device';
/** Espruino Storage file holding the rig config (names are limited to 28 chars). */
export const CONFIG_FILE = 'proofrig.json';
/** Espruino Storage file holding the firmware that runs at boot. */
export const BOOT_CODE_FILE = '.bootcde';
/** Longest request_id / command id accepted on the wire. */
export const MAX_ID_LENGTH = 64;
/** Longest human-readable message (`msg` of res/prog/err) accepted on the wire; senders clip to it. */
export const MAX_MSG_LENGTH = 1000;
/** Longest piece of received input a message may quote back (an axis name, an action name...). */
export const MAX_ECHO_LENGTH = 40;
/** Bounds of a state snapshot: more relays or axes than this is not a real rig. */
export const MAX_STATE_RELAYS = 64;
export const MAX_STATE_AXES = 16;
export const MAX_STATE_SENSORS = 16;
export const MAX_STATE_PWM = 16;

/** The string both sides MAC with the device secret (HMAC-SHA256, hex) to prove the device. The host's proof: seal.ts. */
export function authMessage(dev: string, boot: string, clientNonce: string, serverNonce: string): string {
  return 'proofrig-auth-1|' + dev + '|' + boot + '|' + clientNonce + '|' + serverNonce;
}

/**
 * Slowest step rate a moving axis runs at (the firmware floors its profile here so a move always
 * finishes). A cruise speed below MIN_STEP_HZ / steps_per_mm would not be the speed driven, so the
 * estimate and deadline would be wrong: it is refused (minSpeedMmS).
 */
export const MIN_STEP_HZ = 50;

/** After a motion's last step (or a stop), the wait before the encoder is read for the verdict, ms: the firmware waits it, the host's deadlines count it. */
export const MOTION_SETTLE_MS = 100;

/** Longest label of an output and longest area of a device (a name a person says; the MCP tools take the same). */
export const MAX_LABEL_LENGTH = 40;
