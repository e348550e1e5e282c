// UTF-8 between JS strings and byte strings (one char per byte, 0..255), ASCII passed through as is.

/**
 * Does this engine's JSON.stringify write every char over 0x7e as a \u escape? Espruino's does (its
 * output is always ASCII); V8's (the vm simulation) writes the char itself.
 */
export const JSON_ESCAPES = JSON.stringify('\u00e9').length > 3;

/** A char over 0x7f. Made once: a regex literal inside a function is compiled on every call on Espruino. */
const HIGH = /[^\x00-\x7f]/;

/**
 * ASCII only? A regex: Espruino runs it natively, about 80 times faster than a loop over the chars
 * (still ~700 x86 instructions per char: the device skips it for the JSON it makes itself, see
 * JSON_ESCAPES).
 */
function ascii(s: string): boolean {
  return !HIGH.test(s);
}

/**
 * Encode a JS string to UTF-8 bytes. Lone surrogates become U+FFFD, as Node's Buffer does. The
 * non-ASCII work is its own function: Espruino lexes a function's whole text at every call, so the
 * ASCII path stays short (the same for utf8Dec).
 */
export function utf8Enc(s: string): string {
  return ascii(s) ? s : enc(s);
}

function enc(s: string): string {
  let o = '';
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) o += String.fromCharCode(c);
    else if (c > 0xffff) {
      // Espruino's own strings give whole code points (length 1, charCodeAt 0x1F511), not surrogates.
      o += String.fromCharCode(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    } else if (c < 0x800) o += String.fromCharCode(0xc0 | (c >> 6), 0x80 | (c & 63));
    else {
      if (c >= 0xd800 && c < 0xe000) {
        const d = i + 1 < n ? s.charCodeAt(i + 1) : 0;
        if (c < 0xdc00 && d >= 0xdc00 && d < 0xe000) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
          o += String.fromCharCode(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
          continue;
        }
        c = 0xfffd;
      }
      o += String.fromCharCode(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
  }
  return o;
}

/** Decode UTF-8 bytes to a JS string. A malformed sequence becomes one U+FFFD per bad byte. */
export function utf8Dec(b: string): string {
  return ascii(b) ? b : dec(b);
}

function dec(b: string): string {
  let o = '';
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b.charCodeAt(i);
    let k = c < 0x80 ? 0 : c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xf0 && c < 0xf5 ? 3 : -1;
    let cp = k === 1 ? c & 31 : k === 2 ? c & 15 : c & 7;
    if (k === 0) cp = c;
    for (let j = 1; j <= k; j++) {
      const d = i + j < n ? b.charCodeAt(i + j) : 0;
      if ((d & 0xc0) !== 0x80) {
        k = -1;
        break;
      }
      cp = (cp << 6) | (d & 63);
    }
    if (k > 1 && (cp < (k === 2 ? 0x800 : 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))) k = -1;
    if (k < 0) {
      cp = 0xfffd;
      k = 0;
    }
    if (cp > 0xffff) o += String.fromCharCode(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 1023));
    else o += String.fromCharCode(cp);
    i += k + 1;
  }
  return o;
}
