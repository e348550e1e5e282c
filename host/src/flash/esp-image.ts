// ESP32 application/bootloader image format (esptool's bin_image / ESP-IDF "app image format"):
// enough to check a release file and to set the bootloader's flash mode/frequency the way
// esptool.py's write_flash does.
import { createHash } from 'node:crypto';

export const ESP_IMAGE_MAGIC = 0xe9;
export const ESP_CHECKSUM_MAGIC = 0xef;
/** Common header (8 bytes) + ESP32 extended header (16 bytes). */
export const IMAGE_HEADER_LEN = 24;
/** Offset of hash_appended in the extended header (8 + 15). */
export const HASH_APPENDED_OFFSET = 23;
export const SHA256_LEN = 32;

export const FLASH_MODES = { qio: 0, qout: 1, dio: 2, dout: 3 } as const;
export const FLASH_FREQS = { '40m': 0x0, '26m': 0x1, '20m': 0x2, '80m': 0xf } as const;
export type FlashMode = keyof typeof FLASH_MODES;
export type FlashFreq = keyof typeof FLASH_FREQS;

export interface ImageSegment {
  address: number;
  /** Offset of the segment's data in the file. */
  offset: number;
  length: number;
}

export interface Esp32ImageInfo {
  segments: ImageSegment[];
  flashMode: number;
  /** High nibble: size, low nibble: frequency. */
  flashSizeFreq: number;
  entry: number;
  hashAppended: boolean;
  /** Where the checksummed image ends: the SHA-256 digest (if any) starts here. */
  dataLength: number;
  checksumOk: boolean;
  /** Present when hashAppended: does the stored digest match the image? */
  digestOk?: boolean;
}

const u32 = (d: Uint8Array, o: number) => (d[o] | (d[o + 1] << 8) | (d[o + 2] << 16) | (d[o + 3] << 24)) >>> 0;

/** Parses an ESP32 image; a reason string when it is not one. */
export function parseEsp32Image(data: Uint8Array): Esp32ImageInfo | string {
  if (data.length < IMAGE_HEADER_LEN) return `only ${data.length} bytes, shorter than an image header`;
  if (data[0] !== ESP_IMAGE_MAGIC) return `starts with 0x${data[0].toString(16).padStart(2, '0')}, not the image magic 0xe9`;
  const count = data[1];
  if (count === 0 || count > 16) return `claims ${count} segments (1..16 expected)`;
  const hashByte = data[HASH_APPENDED_OFFSET];
  if (hashByte > 1) return `hash_appended is ${hashByte} (0 or 1 expected)`;
  const segments: ImageSegment[] = [];
  let offset = IMAGE_HEADER_LEN;
  let checksum = ESP_CHECKSUM_MAGIC;
  for (let i = 0; i < count; i++) {
    if (offset + 8 > data.length) return `segment ${i} header runs past the end of the file`;
    const address = u32(data, offset);
    const length = u32(data, offset + 4);
    if (offset + 8 + length > data.length) return `segment ${i} (${length} bytes) runs past the end of the file`;
    if (length % 4) return `segment ${i} is ${length} bytes, not a multiple of 4`;
    segments.push({ address, offset: offset + 8, length });
    for (let j = offset + 8; j < offset + 8 + length; j++) checksum ^= data[j];
    offset += 8 + length;
  }
  // The checksum byte sits at the end of a 16-byte-aligned block.
  const checksumAt = offset + (15 - (offset % 16));
  if (checksumAt >= data.length) return 'the checksum byte is missing';
  const dataLength = checksumAt + 1;
  const info: Esp32ImageInfo = {
    segments,
    flashMode: data[2],
    flashSizeFreq: data[3],
    entry: u32(data, 4),
    hashAppended: hashByte === 1,
    dataLength,
    checksumOk: data[checksumAt] === checksum,
  };
  if (info.hashAppended) {
    if (dataLength + SHA256_LEN > data.length) return 'hash_appended is set but the SHA-256 digest is missing';
    const digest = createHash('sha256').update(data.subarray(0, dataLength)).digest();
    info.digestOk = Buffer.compare(digest, Buffer.from(data.subarray(dataLength, dataLength + SHA256_LEN))) === 0;
  }
  return info;
}

export interface FlashParamsPatch {
  image: Uint8Array;
  /** Offsets (within the image) of the bytes that differ from the input. */
  changed: number[];
  /** Human-readable account of the change, or why nothing changed. */
  note: string;
}

/**
 * Sets flash mode and frequency in a bootloader image's header (bytes 2 and 3, the size nibble
 * kept) and, when the image carries an appended SHA-256 digest, recomputes it: what esptool.py's
 * write_flash does for the image at the bootloader offset.
 *
 * esptool-js 0.7.0 patches bytes 2-3 but never refreshes the digest (it tests hash_appended
 * against the character '1' rather than the value 1), so the flashed bootloader would carry a
 * stale digest; flash.ts patches here and tells esptool-js to keep the header as it is.
 */
export function setBootloaderFlashParams(image: Uint8Array, mode: FlashMode, freq: FlashFreq): FlashParamsPatch {
  const parsed = parseEsp32Image(image);
  if (typeof parsed === 'string') return { image, changed: [], note: `not a valid ESP32 image (${parsed}): header left as it is` };
  const out = new Uint8Array(image);
  out[2] = FLASH_MODES[mode];
  out[3] = (image[3] & 0xf0) | FLASH_FREQS[freq];
  if (parsed.hashAppended) {
    const digest = createHash('sha256').update(out.subarray(0, parsed.dataLength)).digest();
    out.set(digest, parsed.dataLength);
  }
  const changed: number[] = [];
  for (let i = 0; i < out.length; i++) if (out[i] !== image[i]) changed.push(i);
  const note = changed.length
    ? `header set to ${mode.toUpperCase()}, ${freq.replace('m', ' MHz')} (bytes 2-3)${parsed.hashAppended ? `; SHA-256 digest at +0x${parsed.dataLength.toString(16)} recomputed` : ''}`
    : `header already ${mode.toUpperCase()}, ${freq.replace('m', ' MHz')}`;
  return { image: out, changed, note };
}

/** Builds a valid ESP32 image from segments (used to make test fixtures). */
export function buildEsp32Image(opts: {
  segments: { address: number; data: Uint8Array }[];
  entry: number;
  flashMode?: number;
  flashSizeFreq?: number;
  hashAppended?: boolean;
}): Uint8Array {
  const parts: number[] = [];
  const push32 = (v: number) => parts.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  parts.push(ESP_IMAGE_MAGIC, opts.segments.length, opts.flashMode ?? FLASH_MODES.dio, opts.flashSizeFreq ?? 0x20);
  push32(opts.entry);
  // Extended header: wp_pin disabled, drive strengths 0, chip id 0 (ESP32), revisions 0, reserved.
  parts.push(0xee, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, opts.hashAppended === false ? 0 : 1);
  let checksum = ESP_CHECKSUM_MAGIC;
  const chunks: Uint8Array[] = [Uint8Array.from(parts)];
  let length = parts.length;
  for (const s of opts.segments) {
    // Segment lengths are multiples of 4 (esptool pads them; its loaders assume it).
    const data = new Uint8Array(Math.ceil(s.data.length / 4) * 4);
    data.set(s.data);
    const head = new Uint8Array(8);
    new DataView(head.buffer).setUint32(0, s.address, true);
    new DataView(head.buffer).setUint32(4, data.length, true);
    chunks.push(head, data);
    length += 8 + data.length;
    for (const b of data) checksum ^= b;
  }
  const pad = new Uint8Array(16 - (length % 16));
  pad[pad.length - 1] = checksum;
  chunks.push(pad);
  length += pad.length;
  const body = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.length;
  }
  if (opts.hashAppended === false) return body;
  const out = new Uint8Array(length + SHA256_LEN);
  out.set(body);
  out.set(createHash('sha256').update(body).digest(), length);
  return out;
}
