// WebSocket masking (RFC 6455 §5.3) in one native pass. A client must XOR every payload byte with
// a 4-byte key; a JavaScript statement per 4 bytes cost ~2.4 M instructions for a 440-byte frame
// on the interpreter (most of a relay command's result), while E.mapInPlace through a 256-entry
// table costs ~0.66 M. A table maps one key byte, so the key is one random byte repeated four
// times, drawn once per boot (building a table takes ~4.8 M instructions, too dear per frame). The
// RFC asks for a fresh unpredictable key per frame so that a script in a browser cannot choose the
// bytes a proxy sees; nothing but the device and its authenticated host puts bytes in these frames,
// and every frame is sealed with its MAC either way (docs/security.md). Where E.mapInPlace is
// missing, the word-at-a-time wsMask with a fresh key per frame does it.
import { IN_PLACE, wsHead, wsMask } from '@proofrig/protocol/wscodec';
import { r32, randMask } from './rand';

let T: Uint8Array | undefined;
let K = '';

/** The table and key of this boot, made at the first frame (after the boot identity seeded r32). */
function table(): Uint8Array {
  let k = r32() & 255;
  if (!k) k = 0x5a; // a zero key would leave the payload as it is
  const t = new Uint8Array(256);
  for (let b = 0; b < 256; b++) t[b] = b ^ k;
  K = String.fromCharCode(k, k, k, k);
  T = t;
  return t;
}

/** One final masked frame of op with payload d (bytes, at most WS_MAX: the caller checks). */
export function maskedFrame(op: number, d: string): string {
  const h = wsHead(op, d.length, true);
  if (typeof E === 'undefined' || !E.mapInPlace) {
    const m = randMask();
    return h + m + wsMask(d, m, 0);
  }
  const t = T || table();
  if (IN_PLACE) {
    // A fresh string (the concatenation) masked in place through a view of its payload.
    const f = h + K + d;
    const v = new Uint8Array((E.toArrayBuffer as (s: string) => ArrayBuffer)(f), h.length + 4);
    E.mapInPlace(v, v, t);
    return f;
  }
  const a = (E.toUint8Array as (s: string) => Uint8Array)(d);
  E.mapInPlace(a, a, t);
  return h + K + E.toString(a);
}
