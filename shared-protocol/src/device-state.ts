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
}
