// Mutual authentication and frame integrity on the device link: the strings both sides MAC and
// the envelope every frame after the handshake travels in. Pure string functions with no crypto
// (the firmware MACs with Espruino's native SHA-256, the host with node:crypto), so this file is
// the one definition both sides follow.
//
// Handshake: hello{cn} → chal{sn} → auth{mac = HMAC(secret, authMessage)} (the device proves the
// secret) → ok{hb, mac = HMAC(secret, hostProofMessage)} (the host proves it; the device goes up
// only after checking it). Both then derive K = HMAC(secret, sessionKeyMessage) and every later
// frame, both ways, is the JSON body with a per-direction counter `n` (1, 2, 3 … on this
// connection) and, last, `m` = base64 of the first MAC_BYTES bytes of HMAC(K, macInput(dir, body))
// (base64, not hex: Espruino's btoa is native, a hex loop costs more than the SHA-256 itself).
// A receiver takes exactly the next counter; anything else (forged, replayed, reordered,
// truncated, unsealed) is refused, counted and never acted on.

/** Frames the device sends are MACed with this direction tag, the host's with HOST_DIR. */
export const DEVICE_DIR = 'd';
export const HOST_DIR = 'h';
/** Field carrying the per-direction frame counter. */
export const CTR_FIELD = 'n';
/** Field carrying the frame MAC; always the last field of a sealed frame. */
export const MAC_FIELD = 'm';
/** Bytes of HMAC-SHA256 kept as the frame MAC (128 bits), sent as 24 base64 chars. */
export const MAC_BYTES = 16;
const MAC_B64_LEN = 24;

/** What the host MACs with the device secret in its `ok` to prove it knows the secret too. */
export function hostProofMessage(dev: string, boot: string, clientNonce: string, serverNonce: string, hb: number): string {
  return 'proofrig-host-1|' + dev + '|' + boot + '|' + clientNonce + '|' + serverNonce + '|' + hb;
}

/** HMAC(secret, this) is the session key of one connection (raw 32 bytes). */
export function sessionKeyMessage(dev: string, boot: string, clientNonce: string, serverNonce: string): string {
  return 'proofrig-key-1|' + dev + '|' + boot + '|' + clientNonce + '|' + serverNonce;
}

/** The exact string MACed with the session key for one frame body (the JSON with `n`, without `m`). */
export function macInput(dir: string, body: string): string {
  return 'proofrig-frame-1|' + dir + '|' + body;
}

/** Add the counter as the last field of a serialised JSON object: the body that gets MACed. */
export function withCounter(json: string, n: number): string {
  return json.slice(0, -1) + ',"' + CTR_FIELD + '":' + n + '}';
}

/**
 * The counter a sealed body carries (its last field), or -1 when it carries none: both receivers
 * take a frame only when this is their next counter. One that gets a valid MAC with a counter past
 * the next one knows a frame was lost on this
 * connection: the counters can never line up again, so the link is ended at once instead of
 * refusing every later frame until liveness gives up (chaos seed 3934: a deaf link lost a result).
 */
export function counterOf(body: string): number {
  const end = body.length - 1;
  if (body.charAt(end) !== '}') return -1;
  // Counters are short: the tag is looked for in the last 24 chars with native indexOf (no
  // per-character loop on the device; Espruino strings have lastIndexOf but the bundle check cannot
  // tell it from the Array one Espruino lacks). Its last occurrence there must be followed by digits
  // only, not starting with 0, up to the brace: a digit run ending the body is preceded by the
  // tag's last occurrence when it is preceded by the tag at all. A longer run takes the scan.
  let k = body.indexOf(CTR_TAG, end > 24 ? end - 24 : 0);
  if (k < 0) return counterScan(body, end);
  for (let j = body.indexOf(CTR_TAG, k + 1); j >= 0; j = body.indexOf(CTR_TAG, j + 1)) k = j;
  const d = body.slice(k + CTR_TAG.length, end);
  return COUNTER.test(d) ? Number(d) : -1;
}

/** counterOf by a backward scan over the digits. */
function counterScan(body: string, end: number): number {
  let i = end;
  while (i > 0 && body.charCodeAt(i - 1) >= 48 && body.charCodeAt(i - 1) <= 57) i--;
  if (i === end || body.charAt(i) === '0' || body.slice(i - CTR_TAG.length, i) !== CTR_TAG) return -1;
  return Number(body.slice(i, end));
}
const CTR_TAG = ',"' + CTR_FIELD + '":';
const COUNTER = /^[1-9][0-9]*$/;

/** The sealed frame: the body with the MAC appended as its last field. */
export function seal(body: string, mac: string): string {
  return body.slice(0, -1) + ',"' + MAC_FIELD + '":"' + mac + '"}';
}

/** Length of the `,"m":"<base64>"}` tail of a sealed frame. */
export const SEAL_TAIL = 8 + MAC_B64_LEN;
// No {n} quantifier: Espruino 2v29's regex engine lacks it (/^a{2}$/ never matches); the length is checked apart.
const B64 = /^[A-Za-z0-9+\/]+==$/;

/**
 * Split a sealed frame into the body that was MACed and its MAC, or null when the text does not
 * end in a well-formed MAC field. Verifying the MAC and the body's counter is the caller's job.
 */
export function unseal(text: string): { body: string; mac: string } | null {
  const n = text.length;
  if (n < SEAL_TAIL + 2 || text.slice(n - SEAL_TAIL, n - SEAL_TAIL + 6) !== ',"' + MAC_FIELD + '":"' || text.slice(n - 2) !== '"}') return null;
  const mac = text.slice(n - SEAL_TAIL + 6, n - 2);
  if (mac.length !== MAC_B64_LEN || !B64.test(mac)) return null;
  return { body: text.slice(0, n - SEAL_TAIL) + '}', mac };
}
