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

export interface DeviceState {
  /** Device uptime in ms when the snapshot was taken. */
  up: number;
  relays: RelayState[];
}
