// Makes a screenshot PNG small for the docs: decoded, its colours cut to a 256-entry palette
// (the most frequent ones; every other pixel takes the nearest), and written again as an indexed
// PNG. Screenshots of a page are mostly flat colours and anti-aliased text, which this keeps legible.
import { deflateSync, inflateSync } from 'node:zlib';

const SIG = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);

function crc32(buf) {
  let c = ~0;
  for (let i = 0; i < buf.length; i++) {
    c ^= buf[i];
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** RGB pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes). */
function decode(png) {
  if (!png.subarray(0, 8).equals(SIG)) throw new Error('not a PNG');
  let w = 0, h = 0, type = 0;
  const idat = [];
  for (let o = 8; o < png.length; ) {
    const len = png.readUInt32BE(o), t = png.toString('ascii', o + 4, o + 8), d = png.subarray(o + 8, o + 8 + len);
    if (t === 'IHDR') {
      w = d.readUInt32BE(0); h = d.readUInt32BE(4); type = d[9];
      if (d[8] !== 8 || (type !== 2 && type !== 6) || d[12] !== 0) throw new Error('only 8-bit RGB/RGBA non-interlaced PNGs');
    } else if (t === 'IDAT') idat.push(d);
    o += 12 + len;
  }
  const bpp = type === 6 ? 4 : 3, stride = w * bpp, raw = inflateSync(Buffer.concat(idat));
  const px = Buffer.alloc(h * stride), rgb = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1, row = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? px[row + x - bpp] : 0, b = y ? px[row - stride + x] : 0, c = x >= bpp && y ? px[row - stride + x - bpp] : 0;
      let v = raw[src + x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      px[row + x] = v & 255;
    }
    for (let x = 0; x < w; x++) for (let k = 0; k < 3; k++) rgb[(y * w + x) * 3 + k] = px[row + x * bpp + k];
  }
  return { w, h, rgb };
}

export function palettePng(png) {
  const { w, h, rgb } = decode(png);
  const count = new Map();
  for (let i = 0; i < rgb.length; i += 3) {
    const k = (rgb[i] << 16) | (rgb[i + 1] << 8) | rgb[i + 2];
    count.set(k, (count.get(k) ?? 0) + 1);
  }
  const palette = [...count.entries()].sort((x, y) => y[1] - x[1]).slice(0, 256).map(([k]) => k);
  const index = new Map();
  const nearest = (k) => {
    let best = 0, bestD = Infinity;
    for (let j = 0; j < palette.length; j++) {
      const p = palette[j], dr = ((p >> 16) & 255) - ((k >> 16) & 255), dg = ((p >> 8) & 255) - ((k >> 8) & 255), db = (p & 255) - (k & 255);
      const d = 3 * dr * dr + 4 * dg * dg + 2 * db * db;
      if (d < bestD) { bestD = d; best = j; }
    }
    return best;
  };
  const out = Buffer.alloc(h * (w + 1));
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 3, k = (rgb[i] << 16) | (rgb[i + 1] << 8) | rgb[i + 2];
      let j = index.get(k);
      if (j === undefined) index.set(k, (j = nearest(k)));
      out[y * (w + 1) + 1 + x] = j;
    }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 3;
  const plte = Buffer.alloc(palette.length * 3);
  palette.forEach((p, j) => { plte[j * 3] = (p >> 16) & 255; plte[j * 3 + 1] = (p >> 8) & 255; plte[j * 3 + 2] = p & 255; });
  return Buffer.concat([SIG, chunk('IHDR', ihdr), chunk('PLTE', plte), chunk('IDAT', deflateSync(out, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}
