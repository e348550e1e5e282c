// Flash the Espruino interpreter onto a bare ESP32 with esptool-js, from Node: locate the
// release files, talk to the ROM bootloader through a Web-Serial-shaped adapter, write with MD5
// verification, reset into the new firmware. Failures carry a stable code and say what to do.
import { createHash } from 'node:crypto';
import { access, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { ESPLoader, HardReset, Transport } from 'esptool-js';
import { SerialPort } from 'serialport';
import { setBootloaderFlashParams } from './esp-image.js';
import { ESPRUINO_DOWNLOAD_HINT, loadEspruinoRelease, ReleaseError, type ReleaseFile } from './release.js';
import { serialPortLike, WebSerialAdapter, type PortInfo, type PortLike } from './web-serial-adapter.js';

export type FlashErrorCode =
  | 'NO_SUCH_PORT'
  | 'PERMISSION_DENIED'
  | 'PORT_BUSY'
  | 'NOT_A_SERIAL_PORT'
  | 'NO_BOOTLOADER'
  | 'MISSING_FILE'
  | 'BAD_FIRMWARE'
  | 'VERIFY_MISMATCH'
  | 'BAD_OPTION'
  | 'FLASH_FAILED';

export class FlashError extends Error {
  constructor(
    readonly code: FlashErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FlashError';
  }
}

export const DEFAULT_FLASH_BAUD = 921600;
/** The ESP32 ROM bootloader syncs at this rate before the stub switches to the flashing rate. */
export const ROM_BAUD = 115200;

export const NO_BOOTLOADER_HINT =
  'no answer from the ESP32 ROM bootloader: hold IO0/BOOT while pressing EN/RESET, then retry; check the cable carries data';

export interface FlashProgress {
  /** 0-based index of the file being written. */
  index: number;
  name: string;
  address: number;
  /** Bytes sent so far: compressed bytes when compression is on. */
  written: number;
  total: number;
  compressed: boolean;
}

export interface FlashOptions {
  /** A serial port path (/dev/ttyUSB0, COM3) or any PortLike (the ROM double in tests). */
  port: PortLike | string;
  /** Release folder, .tgz/.tar.gz/.tar or .zip. */
  firmware: string;
  /** Rate for writing once the stub runs; default 921600. */
  baud?: number;
  /** Erase the whole flash first (also wipes Storage, i.e. saved JavaScript). */
  erase?: boolean;
  /** Send deflated data (default true). */
  compress?: boolean;
  onProgress?: (progress: FlashProgress) => void;
  /** esptool-js's output and our own notes, one line at a time. */
  log?: (line: string) => void;
  /** Reset-and-sync attempts before giving up (esptool-js's default: 7, about 6 s). */
  connectAttempts?: number;
  /** esptool-js debug output and transport traces into `log`. */
  debug?: boolean;
}

export interface FlashedRegion {
  name: string;
  address: number;
  /** Bytes written (the file padded to a multiple of 4, as esptool does). */
  size: number;
  /** MD5 of what was written; the chip computed the same over its flash. */
  md5: string;
  verified: true;
  source: string;
}

export interface FlashResult {
  /** As esptool-js describes it, e.g. "ESP32-D0WD-V3 (revision 3)". */
  chip: string;
  mac?: string;
  flashId?: string;
  /** The rate the data went at (esptool-js falls back to 115200 if the higher rate fails). */
  baud: number;
  erased: boolean;
  regions: FlashedRegion[];
  /** What happened to the bootloader header (flash mode/frequency). */
  bootloaderHeader: string;
  durationMs: number;
}

export interface SerialPortListing {
  path: string;
  manufacturer?: string;
  serialNumber?: string;
  /** Hex, as serialport reports it (e.g. "10c4"). */
  vendorId?: string;
  productId?: string;
}

const hex = (n: number) => `0x${n.toString(16)}`;
const md5 = (data: Uint8Array) => createHash('md5').update(data).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resets the chip into the firmware it has in flash: IO0 released (DTR off), EN pulsed low with
 * RTS. esptool-js 0.7.0's own HardReset only releases RTS (no EN pulse after its classic reset
 * left RTS released) and puts DTR back on, which would hold IO0 low: the chip would stay in the
 * stub, or come back in download mode.
 */
class BootFromFlashReset extends HardReset {
  constructor(
    transport: Transport,
    private readonly usbOtg = false,
  ) {
    super(transport, usbOtg);
  }

  override async reset(): Promise<void> {
    await this.transport.setDTR(false);
    await this.transport.setRTS(true);
    await sleep(this.usbOtg ? 200 : 100);
    await this.transport.setRTS(false);
  }
}

/** Splits esptool-js's terminal output into lines. */
class LineSplitter {
  private partial = '';
  constructor(private readonly onLine: (line: string) => void) {}
  write(text: string): void {
    this.partial += text;
    const parts = this.partial.split(/\r?\n|\r/);
    this.partial = parts.pop() ?? '';
    for (const p of parts) if (p.trim()) this.onLine(p.trimEnd());
  }
  writeLine(text: string): void {
    this.write(`${text}\n`);
  }
  flush(): void {
    if (this.partial.trim()) this.onLine(this.partial.trimEnd());
    this.partial = '';
  }
}

/** Writes the Espruino ESP32 release onto the chip behind `options.port` and verifies it. */
export async function flashEspruino(options: FlashOptions): Promise<FlashResult> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const baud = options.baud ?? DEFAULT_FLASH_BAUD;
  if (!Number.isInteger(baud) || baud < 9600 || baud > 5_000_000) {
    throw new FlashError('BAD_OPTION', `baud must be an integer from 9600 to 5000000, got ${baud}`);
  }
  const attempts = options.connectAttempts ?? 7;
  const compress = options.compress ?? true;

  // 1. The files first: nothing touches the port until we know what to write.
  let files: ReleaseFile[];
  try {
    files = await loadEspruinoRelease(options.firmware);
  } catch (e) {
    if (e instanceof ReleaseError) throw new FlashError(e.code, e.message, e.details, { cause: e });
    throw e;
  }
  for (const f of files) log(`${f.name}: ${f.data.length} bytes from ${f.source}, to ${hex(f.address)}`);
  const boot = files.find((f) => f.address === 0x1000)!;
  const patch = setBootloaderFlashParams(boot.data, 'dio', '40m');
  boot.data = patch.image;
  log(`bootloader.bin: ${patch.note}`);

  // 2. The port.
  const port = typeof options.port === 'string' ? await portForPath(options.port) : options.port;
  const adapter = new WebSerialAdapter(port);
  const transport = new Transport(adapter as unknown as ConstructorParameters<typeof Transport>[0], false);
  // esptool-js's Transport.trace() prints to stdout (console.log) even with tracing off.
  transport.trace = (message: string) => {
    if (options.debug) log(`TRACE ${message}`);
  };

  const sniffed: { mac?: string; flashId?: string; flashMd5?: string } = {};
  const lines = new LineSplitter((line) => {
    let m: RegExpExecArray | null;
    if ((m = /^MAC: (\S+)/.exec(line))) sniffed.mac = m[1];
    else if ((m = /^Flash ID: (\S+)/.exec(line))) sniffed.flashId = m[1];
    else if ((m = /^Flash md5: ([0-9a-f]+)/i.exec(line))) sniffed.flashMd5 = m[1].toLowerCase();
    log(line);
  });
  const loader = new ESPLoader({
    transport,
    baudrate: baud,
    romBaudrate: ROM_BAUD,
    debugLogging: Boolean(options.debug),
    terminal: { clean: () => undefined, write: (s: string) => lines.write(s), writeLine: (s: string) => lines.writeLine(s) },
    resetConstructors: { hardReset: (t: Transport, usbOtg?: boolean) => new BootFromFlashReset(t, usbOtg) },
  });
  // main() has no attempts parameter; it calls detectChip(mode) with esptool-js's default of 7.
  const detectChip = loader.detectChip.bind(loader);
  loader.detectChip = (mode) => detectChip(mode, attempts);

  try {
    // 3. Connect: reset into the ROM bootloader, sync, identify, upload the stub, raise the rate.
    let chip: string;
    try {
      chip = await loader.main();
    } catch (e) {
      throw await classifyConnectError(e, port.path);
    }

    // 4. Write and verify.
    const md5s: string[] = [];
    let current = 0;
    try {
      await loader.writeFlash({
        fileArray: files.map((f) => ({ data: f.data, address: f.address })),
        flashMode: 'dio',
        flashFreq: '40m',
        flashSize: 'keep',
        eraseAll: Boolean(options.erase),
        compress,
        reportProgress: (index: number, written: number, total: number) => {
          current = index;
          const f = files[index];
          options.onProgress?.({ index, name: f.name, address: f.address, written, total, compressed: compress });
        },
        calculateMD5Hash: (image: Uint8Array) => {
          const sum = md5(image);
          md5s.push(sum);
          return sum;
        },
      });
    } catch (e) {
      const f = files[current];
      const msg = (e as Error)?.message ?? String(e);
      if (/MD5 of file does not match/i.test(msg)) {
        const expected = md5s[current];
        const actual = sniffed.flashMd5 ?? 'unknown';
        throw new FlashError(
          'VERIFY_MISMATCH',
          `verification failed for ${f.name} at ${hex(f.address)} (${f.data.length} bytes): expected MD5 ${expected}, ` +
            `the chip's flash holds ${actual}. The data did not land intact: retry; if it repeats, lower --baud ` +
            `(e.g. 460800 or 115200) or use a shorter USB cable that carries data.`,
          { region: f.name, address: f.address, size: f.data.length, expected, actual },
          { cause: e },
        );
      }
      throw new FlashError('FLASH_FAILED', `writing ${f.name} at ${hex(f.address)} failed: ${msg}`, { region: f.name, address: f.address }, { cause: e });
    }

    // 5. Run the new firmware.
    await loader.after('hard_reset');
    lines.flush();
    return {
      chip,
      mac: sniffed.mac,
      flashId: sniffed.flashId,
      baud: adapter.baudRate,
      erased: Boolean(options.erase),
      regions: files.map((f, i) => ({
        name: f.name,
        address: f.address,
        size: padded4(f.data.length),
        md5: md5s[i],
        verified: true as const,
        source: f.source,
      })),
      bootloaderHeader: patch.note,
      durationMs: Date.now() - started,
    };
  } finally {
    lines.flush();
    await transport.disconnect().catch(() => undefined);
  }
}

const padded4 = (n: number) => Math.ceil(n / 4) * 4;

/** Turns what esptool-js or serialport threw while connecting into an actionable FlashError. */
async function classifyConnectError(e: unknown, path: string): Promise<FlashError> {
  const msg = (e as Error)?.message ?? String(e);
  const opts = { cause: e };
  if (/Failed to connect with the device/i.test(msg)) {
    return new FlashError('NO_BOOTLOADER', `${NO_BOOTLOADER_HINT} (port ${path})`, { port: path }, opts);
  }
  const open = classifyOpenError(msg, path);
  if (open) {
    const details = { port: path };
    if (open === 'NO_SUCH_PORT') return new FlashError(open, await noSuchPortMessage(path), details, opts);
    return new FlashError(open, openErrorMessage(open, path, msg), details, opts);
  }
  return new FlashError('FLASH_FAILED', `talking to the ESP32 on ${path} failed: ${msg}`, { port: path }, opts);
}

function classifyOpenError(msg: string, _path: string): FlashErrorCode | null {
  if (/No such file or directory|ENOENT|File not found|cannot find the file/i.test(msg)) return 'NO_SUCH_PORT';
  // Windows says "Access denied" when another program holds the COM port.
  if (process.platform === 'win32' && /Access denied/i.test(msg)) return 'PORT_BUSY';
  if (/Permission denied|EACCES|Access denied/i.test(msg)) return 'PERMISSION_DENIED';
  if (/Cannot lock port|Resource temporarily unavailable|EBUSY|busy|already open/i.test(msg)) return 'PORT_BUSY';
  if (/Inappropriate ioctl|ENOTTY|not a serial port/i.test(msg)) return 'NOT_A_SERIAL_PORT';
  return null;
}

function openErrorMessage(code: FlashErrorCode, path: string, raw: string): string {
  switch (code) {
    case 'PERMISSION_DENIED':
      return (
        `permission denied opening ${path}: add your user to the group that owns it ` +
        `(Debian/Ubuntu: sudo usermod -aG dialout $USER; Arch: uucp; then log out and back in) ` +
        `or install a udev rule for the USB-serial bridge. (${raw})`
      );
    case 'PORT_BUSY':
      return `${path} is in use by another program (a serial monitor, an IDE, another proofrig): close it and retry. (${raw})`;
    case 'NOT_A_SERIAL_PORT':
      return `${path} is not a serial port (${raw}). Run \`proofrig flash --list\` to see the serial ports.`;
    default:
      return raw;
  }
}

async function noSuchPortMessage(path: string): Promise<string> {
  let ports: SerialPortListing[] = [];
  try {
    ports = await listPorts();
  } catch {
    // listing is a courtesy here
  }
  const available = ports.length
    ? `Available ports: ${ports.map(describePort).join('; ')}.`
    : 'No serial ports were found: is the board plugged in, and does its USB cable carry data (not a charge-only cable)?';
  return `no serial port at ${path}. ${available}`;
}

export function describePort(p: SerialPortListing): string {
  const ids = p.vendorId && p.productId ? `${p.vendorId}:${p.productId}` : '';
  const extra = [p.manufacturer, ids].filter(Boolean).join(', ');
  return extra ? `${p.path} (${extra})` : p.path;
}

/** A PortLike for a path, with its USB ids when the port list has them. */
async function portForPath(path: string): Promise<PortLike> {
  if (process.platform !== 'win32') {
    try {
      await stat(path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new FlashError('NO_SUCH_PORT', await noSuchPortMessage(path), { port: path });
      if (code === 'EACCES') throw new FlashError('PERMISSION_DENIED', openErrorMessage('PERMISSION_DENIED', path, (e as Error).message), { port: path });
    }
  }
  return serialPortLike(path, await usbInfoFor(path));
}

async function usbInfoFor(path: string): Promise<PortInfo> {
  try {
    const real = await realpath(path).catch(() => path);
    for (const p of await listPorts()) {
      const other = await realpath(p.path).catch(() => p.path);
      if (other === real && p.vendorId && p.productId) {
        return { usbVendorId: parseInt(p.vendorId, 16), usbProductId: parseInt(p.productId, 16) };
      }
    }
  } catch {
    // unknown ids only matter for USB-JTAG chips, not for the classic ESP32
  }
  return {};
}

/**
 * Serial ports with their USB details (serialport's SerialPort.list()). On Linux that spawns
 * `udevadm`; where it is missing (containers, minimal systems) serialport would crash the
 * process with an unhandled spawn error, so the ports are read from sysfs instead.
 */
export async function listPorts(): Promise<SerialPortListing[]> {
  if (process.platform === 'linux' && !(await onPath('udevadm'))) return listPortsFromSysfs();
  const ports = await SerialPort.list();
  return ports.map((p) => ({
    path: p.path,
    manufacturer: p.manufacturer,
    serialNumber: p.serialNumber,
    vendorId: p.vendorId?.toLowerCase(),
    productId: p.productId?.toLowerCase(),
  }));
}

async function onPath(cmd: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      await access(join(dir, cmd), fsConstants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

async function listPortsFromSysfs(root = '/sys/class/tty'): Promise<SerialPortListing[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const out: SerialPortListing[] = [];
  for (const name of names.sort()) {
    if (!/^(ttyUSB|ttyACM|ttyAMA|ttyS|ttyWCH|ttyXRUSB|rfcomm)\d+$/.test(name)) continue;
    let dir: string;
    try {
      dir = await realpath(join(root, name, 'device'));
    } catch {
      continue; // virtual tty
    }
    const usb = await findUsbDevice(dir);
    if (!usb && name.startsWith('ttyS')) continue; // legacy 8250 ports exist whether wired or not
    out.push({ path: `/dev/${name}`, ...usb });
  }
  return out;
}

async function findUsbDevice(start: string): Promise<Omit<SerialPortListing, 'path'> | undefined> {
  let dir = start;
  for (let i = 0; i < 5; i++) {
    const read = (f: string) => readFile(join(dir, f), 'utf8').then((s) => s.trim()).catch(() => undefined);
    const vendorId = await read('idVendor');
    if (vendorId) {
      return { vendorId, productId: await read('idProduct'), manufacturer: await read('manufacturer'), serialNumber: await read('serial') };
    }
    dir = dirname(dir);
  }
  return undefined;
}

export { ESPRUINO_DOWNLOAD_HINT };
