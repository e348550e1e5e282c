// Status views carry their times as ISO strings, several per view and several views per command:
// Date#toISOString per time added up at full load. Times of one second share
// everything but the milliseconds, so that part is made once per second and the rest appended.

let second = NaN;
let prefix = '';

/** The same string as new Date(ms).toISOString(), for any ms. */
export function isoTime(ms: number): string {
  // Outside years 0000–9999 toISOString has another shape; fractional ms it truncates: leave those to it.
  if (!Number.isInteger(ms) || ms < 0 || ms > 253402300799999) return new Date(ms).toISOString();
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    second = s;
    prefix = new Date(s * 1000).toISOString().slice(0, 20);
  }
  const r = ms - s * 1000;
  return prefix + (r < 10 ? '00' : r < 100 ? '0' : '') + r + 'Z';
}
