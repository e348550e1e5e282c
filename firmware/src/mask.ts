// The device's WebSocket frames carry the all-zero masking key (RFC 6455 §5.3): a client must set the
// mask bit and send a key, and the payload XOR a zero key is the payload itself, so no byte of the
// message is touched. Every way of masking for real was measured dear on the interpreter: a
// JavaScript statement per 4 bytes cost ~2.4 M instructions for a 440-byte frame, E.mapInPlace
// through a per-boot table 0.5 M per relay command and ~6.6 M at the first frame (building the
// table). The RFC asks for a fresh unpredictable key so that a script in a browser cannot choose the
// bytes a proxy sees; nothing but the device and its authenticated host puts bytes in these frames,
// and every frame is sealed with its MAC either way (docs/security.md). Plain ws:// is readable on
// the path whatever the key.
import { wsHead } from '@proofrig/protocol/wscodec';

/** The all-zero masking key. */
const KEY = '\0\0\0\0';

/** One final frame of op with payload d (bytes, at most WS_MAX: the caller checks), masked with KEY. */
export function maskedFrame(op: number, d: string): string {
  return wsHead(op, d.length, true) + KEY + d;
}
