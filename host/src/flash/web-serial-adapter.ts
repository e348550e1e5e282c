// A Web-Serial-shaped port, as esptool-js's `Transport` expects, around anything that moves
// bytes and sets modem lines: a real serial port (the `serialport` package) or, in tests, the
// software ROM bootloader in test/helpers/flash/rom-double.ts. The split mirrors node-serialport's bindings
// interface vs its mock binding: `PortLike` is the small contract, `WebSerialAdapter` the shape.
import { SerialPort } from 'serialport';

/** What Web Serial's `SerialPort.getInfo()` returns. */
export interface PortInfo {
  usbVendorId?: number;
  usbProductId?: number;
}

/** Modem control lines, true = asserted. Every `set` carries all of them. */
export interface ModemLines {
  dtr: boolean;
  rts: boolean;
  brk: boolean;
}

/** Where a PortLike delivers what the device sends. */
export interface PortSink {
  data(chunk: Uint8Array): void;
  /** The port went away (unplugged, closed by the other side); `error` when it failed. */
  closed(error?: Error): void;
}

/** Something that moves bytes and sets lines: a serial port or a simulated chip. */
export interface PortLike {
  /** For messages: /dev/ttyUSB0, COM3, rom-double. */
  readonly path: string;
  getInfo(): PortInfo;
  /** Opens at `baudRate`; from then on the device's bytes go to `sink`. */
  open(baudRate: number, sink: PortSink): Promise<void>;
  /** Resolves once the bytes are handed to the OS (or to the simulated chip). */
  write(data: Uint8Array): Promise<void>;
  /** Sets all lines at once: never leave a line out (see serialPortLike). */
  set(lines: ModemLines): Promise<void>;
  /** Changes the host side's baud rate without closing the port. */
  update(baudRate: number): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}

/** The lines a POSIX tty asserts when it is opened (HUPCL): DTR and RTS high, no break. */
export const LINES_AFTER_OPEN: Readonly<ModemLines> = Object.freeze({ dtr: true, rts: true, brk: false });

/** The argument of Web Serial's `open()`; esptool-js passes the other fields as undefined. */
export interface WebSerialOpenOptions {
  baudRate: number;
  dataBits?: number;
  stopBits?: number;
  parity?: string;
  bufferSize?: number;
  flowControl?: string;
}

/** The argument of Web Serial's `setSignals()`: absent members leave that line as it was. */
export interface WebSerialSignals {
  dataTerminalReady?: boolean;
  requestToSend?: boolean;
  break?: boolean;
}

class InvalidStateError extends Error {
  override name = 'InvalidStateError';
}

/**
 * The subset of Web Serial's `SerialPort` that esptool-js 0.7.0's `Transport` uses:
 * getInfo, open, readable, writable, setSignals, close, and setBaudRate (esptool-js calls it
 * when present, so a baud change updates the port in place instead of reopening it).
 */
export class WebSerialAdapter {
  private opened = false;
  private readableStream: ReadableStream<Uint8Array> | null = null;
  private readController: ReadableStreamDefaultController<Uint8Array> | null = null;
  private writableStream: WritableStream<Uint8Array> | null = null;
  private lines: ModemLines = { ...LINES_AFTER_OPEN };
  private baud = 0;

  constructor(readonly port: PortLike) {}

  getInfo(): PortInfo {
    return this.port.getInfo();
  }

  /** The baud rate the host side runs at now (0 while closed). */
  get baudRate(): number {
    return this.baud;
  }

  /** The modem lines as last sent. */
  get signals(): Readonly<ModemLines> {
    return { ...this.lines };
  }

  async open(options: WebSerialOpenOptions): Promise<void> {
    if (this.opened) throw new InvalidStateError(`${this.port.path} is already open`);
    await this.port.open(options.baudRate, {
      data: (chunk) => this.deliver(chunk),
      closed: (error) => this.onPortClosed(error),
    });
    this.opened = true;
    this.baud = options.baudRate;
    this.lines = { ...LINES_AFTER_OPEN };
  }

  /**
   * Like Web Serial: null while closed; a fresh stream when the previous one was cancelled
   * (esptool-js's Transport takes a new reader for every chunk and cancels it to disconnect).
   */
  get readable(): ReadableStream<Uint8Array> | null {
    if (!this.opened) return null;
    if (!this.readableStream) {
      this.readableStream = new ReadableStream<Uint8Array>({
        start: (controller) => {
          this.readController = controller;
        },
        cancel: () => {
          this.readableStream = null;
          this.readController = null;
        },
      });
    }
    return this.readableStream;
  }

  get writable(): WritableStream<Uint8Array> | null {
    if (!this.opened) return null;
    if (!this.writableStream) {
      this.writableStream = new WritableStream<Uint8Array>({
        write: (chunk) => this.port.write(chunk),
        close: () => {
          this.writableStream = null;
        },
        abort: () => {
          this.writableStream = null;
        },
      });
    }
    return this.writableStream;
  }

  /**
   * Web Serial leaves a line it is not told about as it was; serialport's set() would drive it
   * to its default (DTR and RTS high). esptool-js sets DTR and RTS in separate calls, so the
   * adapter remembers both and always sends both.
   */
  async setSignals(signals: WebSerialSignals): Promise<void> {
    if (!this.opened) throw new InvalidStateError(`${this.port.path} is not open`);
    const next: ModemLines = { ...this.lines };
    if (signals.dataTerminalReady !== undefined) next.dtr = Boolean(signals.dataTerminalReady);
    if (signals.requestToSend !== undefined) next.rts = Boolean(signals.requestToSend);
    if (signals.break !== undefined) next.brk = Boolean(signals.break);
    await this.port.set(next);
    this.lines = next;
  }

  async setBaudRate(baudRate: number): Promise<void> {
    if (!this.opened) throw new InvalidStateError(`${this.port.path} is not open`);
    await this.port.update(baudRate);
    this.baud = baudRate;
  }

  async close(): Promise<void> {
    if (!this.opened) return;
    this.opened = false;
    this.baud = 0;
    this.endStreams();
    await this.port.close();
  }

  private deliver(chunk: Uint8Array): void {
    if (!this.opened || !this.readController) return; // nobody reading: dropped, as in a browser
    try {
      this.readController.enqueue(chunk);
    } catch {
      // the stream was closed or cancelled in between
    }
  }

  private onPortClosed(error?: Error): void {
    if (!this.opened) return;
    this.opened = false;
    this.baud = 0;
    const controller = this.readController;
    this.readableStream = null;
    this.readController = null;
    this.writableStream = null;
    try {
      if (error) controller?.error(error);
      else controller?.close();
    } catch {
      // already closed
    }
  }

  private endStreams(): void {
    try {
      this.readController?.close();
    } catch {
      // already closed or cancelled
    }
    this.readableStream = null;
    this.readController = null;
    this.writableStream = null;
  }
}

/**
 * A PortLike around a real serial port from the `serialport` package.
 * `info` (USB vendor/product ids) is what listPorts() found for this path, if anything;
 * `SerialPortClass` is for tests (serialport's SerialPortMock).
 */
export function serialPortLike(path: string, info: PortInfo = {}, SerialPortClass: typeof SerialPort = SerialPort): PortLike {
  let port: SerialPort | null = null;
  const call = (fn: (cb: (err: Error | null | undefined) => void) => void) =>
    new Promise<void>((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));
  const openPort = () => {
    if (!port?.isOpen) throw new Error(`${path} is not open`);
    return port;
  };
  return {
    path,
    getInfo: () => ({ ...info }),
    async open(baudRate, sink) {
      const p = new SerialPortClass({ path, baudRate, autoOpen: false });
      p.on('data', (chunk: Buffer) => sink.data(new Uint8Array(chunk)));
      p.on('close', (err?: Error | null) => sink.closed(err ?? undefined));
      p.on('error', (err: Error) => sink.closed(err));
      await call((cb) => p.open(cb));
      port = p;
    },
    write(data) {
      const p = openPort();
      return call((cb) => p.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength), cb));
    },
    set(lines) {
      const p = openPort();
      // Every line, every time: serialport's set() fills a missing one with its default (high).
      return call((cb) => p.set({ dtr: lines.dtr, rts: lines.rts, brk: lines.brk }, cb));
    },
    update(baudRate) {
      const p = openPort();
      return call((cb) => p.update({ baudRate }, cb));
    },
    async close() {
      const p = port;
      port = null;
      if (!p?.isOpen) return;
      await call((cb) => p.close(cb)).catch(() => undefined);
    },
  };
}
