// Whether the device can afford a text message of n bytes, judged from its header before a byte of
// the payload is buffered or parsed. An estimate calibrated on Espruino 2v29 with the ESP32's 14-byte
// JsVars (sim/README.md "Memory"): a string takes about 10 characters per JsVar and JSON.parse of a
// frame costs about its length / 10 plus a JsVar or two per key. Receiving (the buffer), unsealing,
// UTF-8 decoding and parsing keep up to four copies alive at once, and answering needs some room.
const CHARS_PER_JSVAR = 10;
const COPIES = 4;
const SPARE = 400;
/** Below this a frame needs under ~600 JsVars: not worth the garbage collection process.memory() runs. */
export const MEM_CHECK_MIN = 1024;

/** JsVars a text message of n bytes needs to be received and parsed. */
export function memNeed(n: number): number {
  return COPIES * Math.ceil(n / CHARS_PER_JSVAR) + SPARE;
}

/** Free JsVars right now (after a garbage collection); very many when the platform cannot say. */
export function memFree(): number {
  const p = process as unknown as EspProcess;
  const m = p.memory ? p.memory() : undefined;
  return m && typeof m.free === 'number' ? m.free : 1e9;
}
