// The rig config the uploader writes to Espruino Storage (CONFIG_FILE); the firmware reads it at boot.
import type { BoardDef } from './board.js';

export interface RigConfig {
  /** Device id the host knows this rig by. */
  dev: string;
  /** Per-device secret, hex. Never sent over the link; only MACs of it are. */
  secret: string;
  /**
   * How the device reaches the host, which also names the firmware build that can run it:
   * ws://HOST:PORT/device (dist/proofrig.js dials the host directly) or mqtt://HOST:PORT (dist/proofrig-mqtt.js
   * goes through that MQTT broker; docs/mqtt.md). Each build refuses the other's URL at boot, saying so.
   */
  host: string;
  wifi?: { ssid: string; pass: string };
  board: BoardDef;
}
