// The rig config the uploader writes to Espruino Storage (CONFIG_FILE); the firmware reads it at boot.
import type { BoardDef } from './board.js';

export interface RigConfig {
  /** Device id the host knows this rig by. */
  dev: string;
  /** Per-device secret, hex. Never sent over the link; only MACs of it are. */
  secret: string;
  /** ws://HOST:PORT/device */
  host: string;
  wifi?: { ssid: string; pass: string };
  board: BoardDef;
}
