// The device state snapshot carried by results and state frames.

export interface RelayState {
  ch: number;
  /** Last level commanded since boot (true = on); null when never commanded since boot. */
  cmd: boolean | null;
  /** Output pin read back, as on/off after the active level; null when the board does not read it back. */
  pin: boolean | null;
  /** Auxiliary contact says the relay is on; null when no contact is wired. */
  aux: boolean | null;
}

export interface AxisState {
  axis: string;
  /** Position measured by the encoder, mm (relative to home; meaningless until homed). */
  pos: number;
  /** Position the step generator believes it is at, mm. */
  cmd: number;
  moving: boolean;
  homed: boolean;
  /** Driver FAULT asserted right now. */
  fault: boolean;
  /** Home switch closed right now. */
  home: boolean;
  /** Max-limit switch closed right now (false when none fitted). */
  limit: boolean;
}

/** The last reading of a sensor since boot, as the device took it (sensor.read). */
export interface SensorState {
  id: string;
  /** The value, only when the reading was good (st "ok"); null otherwise or before the first reading. */
  v: number | null;
  /** "ok", an error code of the reading (BUS_NAK, SENSOR_CRC, OUT_OF_RANGE), or "none" before the first reading. */
  st: string;
  /** Device uptime (ms) when the reading was taken; 0 before the first. */
  at: number;
}

/** A fan as the device last drove and measured it (fan.set). */
export interface FanState {
  id: string;
  /** Duty commanded, percent (0 at boot: the firmware starts every fan stopped). */
  duty: number;
  /** The speed its tachometer last measured, rpm; null without a tachometer or before the first measurement. */
  rpm: number | null;
  /** Device uptime (ms) of that measurement; 0 before the first. */
  at: number;
}

/** A servo as the device last commanded it (servo.set): nothing reports where it really is. */
export interface ServoState {
  id: string;
  /** Angle last commanded, degrees; null before the first command since boot (the servo is not driven). */
  deg: number | null;
  /** The time that move needs at the servo's board speed, ms (0 before the first). */
  move_ms: number;
  /** Device uptime (ms) when it was commanded; 0 before the first. */
  at: number;
}

export interface DeviceState {
  /** Device uptime in ms when the snapshot was taken. */
  up: number;
  relays: RelayState[];
  /** Stepper axes, when the board has any. */
  axes?: AxisState[];
  /** E-stop latched (outputs held off until an operator clears it); present when the board has an e-stop input. */
  estop?: boolean;
  /** The last reading of each sensor, on a board with sensors. */
  sensors?: SensorState[];
  /** Every fan's commanded duty and last measured speed, on a board with fans. */
  fans?: FanState[];
  /** Every servo's commanded angle, on a board with servos. */
  servos?: ServoState[];
}
