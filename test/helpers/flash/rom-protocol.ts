// The ESP32 serial bootloader protocol as the ROM double speaks it: command opcodes, registers, status
// codes, the records a test reads back, SLIP framing and the checksum (see rom-double.ts).
import type { Inflate } from 'node:zlib';


export const OP = {
  FLASH_BEGIN: 0x02,
  FLASH_DATA: 0x03,
  FLASH_END: 0x04,
  MEM_BEGIN: 0x05,
  MEM_END: 0x06,
  MEM_DATA: 0x07,
  SYNC: 0x08,
  WRITE_REG: 0x09,
  READ_REG: 0x0a,
  SPI_SET_PARAMS: 0x0b,
  SPI_ATTACH: 0x0d,
  CHANGE_BAUDRATE: 0x0f,
  FLASH_DEFL_BEGIN: 0x10,
  FLASH_DEFL_DATA: 0x11,
  FLASH_DEFL_END: 0x12,
  SPI_FLASH_MD5: 0x13,
  GET_SECURITY_INFO: 0x14,
  ERASE_FLASH: 0xd0,
  ERASE_REGION: 0xd1,
  READ_FLASH: 0xd2,
  RUN_USER_CODE: 0xd3,
} as const;

export const OP_NAMES: Record<number, string> = Object.fromEntries(Object.entries(OP).map(([k, v]) => [v, k]));
export const opName = (op: number) => OP_NAMES[op] ?? `0x${op.toString(16).padStart(2, '0')}`;

/** Read at 0x40001000 by esptool to tell chips apart. */
export const CHIP_DETECT_MAGIC_REG = 0x40001000;
export const ESP32_CHIP_MAGIC = 0x00f01d83;
export const SPI_REG_BASE = 0x3ff42000;
export const SPI_CMD_REG = SPI_REG_BASE;
export const SPI_USR2_REG = SPI_REG_BASE + 0x24;
export const SPI_W0_REG = SPI_REG_BASE + 0x80;
export const SPI_CMD_USR = 1 << 18;
export const EFUSE_BASE = 0x3ff5a000;
export const UART_CLKDIV_REG = 0x3ff40014;
export const APB_CTRL_DATE_REG = 0x3ff66000 + 0x7c;

export const FLASH_SECTOR = 0x1000;
export const SYNC_PAYLOAD = Uint8Array.from([0x07, 0x07, 0x12, 0x20, ...new Array(32).fill(0x55)]);

// ROM status codes (esptool serial-protocol docs) and stub ones (stub_flasher.h).
export const ROM_INVALID_MESSAGE = 0x05;
export const ROM_FAILED = 0x06;
export const ROM_BAD_CHECKSUM = 0x07;
export const ROM_DEFLATE_ERROR = 0x0b;
export const STUB_BAD_DATA_LEN = 0xc0;
export const STUB_BAD_CHECKSUM = 0xc1;
export const STUB_NOT_IN_FLASH_MODE = 0xc6;
export const STUB_INFLATE_ERROR = 0xc7;
export const STUB_NOT_ENOUGH_DATA = 0xc8;
export const STUB_TOO_MUCH_DATA = 0xc9;
export const STUB_NOT_IMPLEMENTED = 0xff;

export type ChipState = 'reset' | 'app' | 'rom' | 'stub';

export interface RomDoubleOptions {
  /** Never answers anything, not even a boot message: no chip on the line, or a charge-only cable. */
  silent?: boolean;
  /** Flips one bit of the n-th flash data block (0-based, FLASH_DATA and FLASH_DEFL_DATA counted together) as it is written. */
  corruptBlock?: number;
  /** Initial flash content (copied) or its size; default 4 MB of erased (0xFF) flash. */
  flash?: Uint8Array | number;
  /** DTR/RTS wired to EN/IO0 through the usual two transistors (dev boards). False for a bare module. Default true. */
  autoReset?: boolean;
  /** What the chip is doing when the port opens. Default 'app'. */
  initialState?: 'app' | 'rom';
  /** USB ids of the bridge; default a CP2102 (10c4:ea60). */
  usbVendorId?: number;
  usbProductId?: number;
  mac?: string;
  /** SPI flash JEDEC id as read by RDID (manufacturer | type << 8 | capacity << 16); default GigaDevice with the capacity of `flash`. */
  flashId?: number;
  path?: string;
}

export interface CommandRecord {
  op: number;
  name: string;
  /** Who answered: the ROM or the stub. */
  by: 'rom' | 'stub';
  /** The host's baud rate when the command arrived. */
  hostBaud: number;
  /** Status byte sent back (0 = success), or 'unsupported'. */
  status: number | 'unsupported';
  error?: number;
  /** Address/size details for flash commands. */
  detail?: string;
}

export interface ResetRecord {
  /** What the chip booted into when EN went high. */
  into: 'app' | 'rom';
  /** IO0 level at that moment. */
  io0: boolean;
}

export interface CorruptionRecord {
  block: number;
  /** Flash address of the flipped bit's byte. */
  address: number;
  bit: number;
}

export interface FlashSession {
  compressed: boolean;
  offset: number;
  /** Bytes the session may still write. */
  remaining: number;
  /** Uncompressed size announced (stub), for FLASH_DEFL_END's completeness check. */
  size: number;
  written: number;
  nextSeq: number;
  inflater?: Inflate;
  inflateError?: Error;
  pending: Uint8Array[];
  corruptNextOutput?: number;
}

export const LE32 = (v: number) => Uint8Array.of(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
export const u32 = (d: Uint8Array, o: number) => (d[o] | (d[o + 1] << 8) | (d[o + 2] << 16) | (d[o + 3] << 24)) >>> 0;
export const later = () => new Promise<void>((resolve) => setImmediate(resolve));

export function slipEncode(frame: Uint8Array): Uint8Array {
  const out: number[] = [0xc0];
  for (const b of frame) {
    if (b === 0xc0) out.push(0xdb, 0xdc);
    else if (b === 0xdb) out.push(0xdb, 0xdd);
    else out.push(b);
  }
  out.push(0xc0);
  return Uint8Array.from(out);
}


export function checksum(data: Uint8Array): number {
  let c = 0xef;
  for (const b of data) c ^= b;
  return c;
}
