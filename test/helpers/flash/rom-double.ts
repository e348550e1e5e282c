// A software ESP32 on a USB-serial bridge: the ROM serial bootloader, the flasher stub that
// esptool-js uploads, 4 MB of NOR flash and the DTR/RTS auto-reset circuit of a dev board.
// It implements PortLike, so the real esptool-js drives it through the same WebSerialAdapter
// that drives a real port. Protocol: esptool's serial-protocol docs; what esptool-js 0.7.0
// sends: node_modules/esptool-js/lib/esploader.js. See docs/flashing.md.
import { createHash } from 'node:crypto';
import { createInflate, constants as zlibConstants } from 'node:zlib';
import type { ModemLines, PortInfo, PortLike, PortSink } from '../../../host/src/flash/web-serial-adapter.js';
import { LINES_AFTER_OPEN } from '../../../host/src/flash/web-serial-adapter.js';
import { OP, opName, CHIP_DETECT_MAGIC_REG, ESP32_CHIP_MAGIC, SPI_CMD_REG, SPI_USR2_REG, SPI_W0_REG, SPI_CMD_USR, EFUSE_BASE, UART_CLKDIV_REG, APB_CTRL_DATE_REG, FLASH_SECTOR, SYNC_PAYLOAD, ROM_INVALID_MESSAGE, ROM_FAILED, ROM_BAD_CHECKSUM, ROM_DEFLATE_ERROR, STUB_BAD_DATA_LEN, STUB_BAD_CHECKSUM, STUB_NOT_IN_FLASH_MODE, STUB_INFLATE_ERROR, STUB_NOT_ENOUGH_DATA, STUB_TOO_MUCH_DATA, STUB_NOT_IMPLEMENTED, LE32, u32, later, slipEncode, checksum, type ChipState, type RomDoubleOptions, type CommandRecord, type ResetRecord, type CorruptionRecord, type FlashSession } from './rom-protocol.js';
export { OP, opName, CHIP_DETECT_MAGIC_REG, ESP32_CHIP_MAGIC, SPI_REG_BASE, FLASH_SECTOR } from './rom-protocol.js';
export type { ChipState, RomDoubleOptions, CommandRecord, ResetRecord, CorruptionRecord } from './rom-protocol.js';

/**
 * The simulated chip. Test controls: `silent`, `corruptBlock`, `autoReset`; `flash` (the
 * memory itself), `commands`, `resets`, `corruptions`, `state`, `chipBaud`, `pressReset()`.
 */
export class RomDouble implements PortLike {
  readonly path: string;
  /** The SPI flash, live: NOR semantics (a write can only clear bits; erase sets 0xFF). */
  readonly flash: Uint8Array;
  readonly commands: CommandRecord[] = [];
  readonly resets: ResetRecord[] = [];
  readonly corruptions: CorruptionRecord[] = [];
  /** Everything the chip printed outside SLIP frames (boot messages). */
  readonly console: string[] = [];
  /** Bytes lost because host and chip ran at different baud rates. */
  garbledBytes = 0;

  private readonly opts: RomDoubleOptions;
  private sink: PortSink | null = null;
  private lines: ModemLines = { dtr: false, rts: false, brk: false };
  private hostBaud = 0;
  private _state: ChipState;
  /** null: the ROM auto-detects the host's rate; otherwise the rate the chip's UART runs at. */
  private _chipBaud: number | null = 115200;
  private readonly regs = new Map<number, number>();
  private rx: number[] = [];
  private rxEscape = false;
  private rxInFrame = false;
  private work: Promise<void> = Promise.resolve();
  private mem: { begin?: { size: number; blocks: number; blockSize: number; offset: number; nextSeq: number }; loaded: { offset: number; length: number }[] } = { loaded: [] };
  private session: FlashSession | null = null;
  private dataBlocks = 0;
  private generation = 0;

  constructor(opts: RomDoubleOptions = {}) {
    this.opts = opts;
    this.path = opts.path ?? 'rom-double';
    const f = opts.flash;
    this.flash = f instanceof Uint8Array ? new Uint8Array(f) : new Uint8Array(f ?? 4 * 1024 * 1024).fill(0xff);
    this._state = opts.initialState ?? 'app';
    this._chipBaud = this._state === 'rom' ? null : 115200;
    this.initRegisters();
  }

  /** What the chip runs now. */
  get state(): ChipState {
    return this._state;
  }

  /** The chip's UART rate (null while the ROM auto-detects it). */
  get chipBaud(): number | null {
    return this._chipBaud;
  }

  get isOpen(): boolean {
    return this.sink !== null;
  }

  /** The ops seen, in order (handy in assertions). */
  get opsSeen(): string[] {
    return this.commands.map((c) => c.name);
  }

  // ---- PortLike -------------------------------------------------------------------------

  getInfo(): PortInfo {
    return { usbVendorId: this.opts.usbVendorId ?? 0x10c4, usbProductId: this.opts.usbProductId ?? 0xea60 };
  }

  async open(baudRate: number, sink: PortSink): Promise<void> {
    await later();
    if (this.sink) throw new Error(`${this.path} is busy: already open`);
    this.sink = sink;
    this.hostBaud = baudRate;
    this.applyLines({ ...LINES_AFTER_OPEN });
  }

  async write(data: Uint8Array): Promise<void> {
    if (!this.sink) throw new Error(`${this.path} is not open`);
    const copy = new Uint8Array(data);
    await later();
    this.receive(copy);
  }

  async set(lines: ModemLines): Promise<void> {
    if (!this.sink) throw new Error(`${this.path} is not open`);
    await later();
    this.applyLines({ ...lines });
  }

  async update(baudRate: number): Promise<void> {
    if (!this.sink) throw new Error(`${this.path} is not open`);
    await later();
    this.hostBaud = baudRate;
  }

  async close(): Promise<void> {
    if (!this.sink) return;
    await later();
    this.sink = null;
    this.hostBaud = 0;
    // A tty drops DTR and RTS when it closes (HUPCL): both lines released, EN and IO0 high.
    this.applyLines({ dtr: false, rts: false, brk: false });
  }

  /** A person on a bare module: hold BOOT (IO0 low) or not, and tap EN/RESET. */
  pressReset(holdBoot: boolean): void {
    this.boot(holdBoot ? 'rom' : 'app', !holdBoot);
  }

  // ---- the board: DTR/RTS → EN/IO0 --------------------------------------------------------

  private en = true;

  private applyLines(lines: ModemLines): void {
    this.lines = lines;
    if (this.opts.autoReset === false) return;
    // Two-transistor auto-reset: EN is pulled low only by RTS without DTR, IO0 only by DTR without RTS.
    const en = !(lines.rts && !lines.dtr);
    const io0 = !(lines.dtr && !lines.rts);
    if (this.en && !en) {
      this.generation++;
      this._state = 'reset';
      this.session = null;
    } else if (!this.en && en) {
      this.boot(io0 ? 'app' : 'rom', io0);
    }
    this.en = en;
  }

  private boot(into: 'app' | 'rom', io0: boolean): void {
    this.generation++;
    this.resets.push({ into, io0 });
    this._state = into;
    this._chipBaud = into === 'rom' ? null : 115200;
    this.session = null;
    this.mem = { loaded: [] };
    this.rx = [];
    this.rxInFrame = false;
    this.rxEscape = false;
    this.initRegisters();
    const rst = 'ets Jun  8 2016 00:22:57\r\n\r\nrst:0x1 (POWERON_RESET),';
    if (into === 'rom') {
      this.print(`${rst}boot:0x3 (DOWNLOAD_BOOT(UART0/UART1/SDIO_REI_REO_V2))\r\nwaiting for download\r\n`);
    } else {
      const valid = this.flash[0x1000] === 0xe9;
      this.print(
        `${rst}boot:0x13 (SPI_FAST_FLASH_BOOT)\r\n` +
          (valid ? 'configsip: 0, SPIWP:0xee\r\nmode:DIO, clock div:2\r\nentry 0x40080000\r\n' : 'flash read err, 1000\r\nets_main.c 371 \r\n'),
      );
    }
  }

  private initRegisters(): void {
    const [m0, m1, m2, m3, m4, m5] = (this.opts.mac ?? '24:0a:c4:5e:a1:07').split(':').map((h) => parseInt(h, 16));
    this.regs.clear();
    this.regs.set(CHIP_DETECT_MAGIC_REG, ESP32_CHIP_MAGIC);
    this.regs.set(EFUSE_BASE + 4 * 1, ((m2 << 24) | (m3 << 16) | (m4 << 8) | m5) >>> 0); // MAC low word
    this.regs.set(EFUSE_BASE + 4 * 2, (m0 << 8) | m1); // MAC high bytes
    // Word 3: package version 1 (D0WD) and revision bit 0; word 5 and the APB date: revision 3.
    this.regs.set(EFUSE_BASE + 4 * 3, (1 << 9) | (1 << 15));
    this.regs.set(EFUSE_BASE + 4 * 5, 1 << 20);
    this.regs.set(APB_CTRL_DATE_REG, 0x80000000);
    // The ROM clocks UART0 from the 40 MHz crystal: divider for 115200 baud.
    this.regs.set(UART_CLKDIV_REG, Math.round(40e6 / 115200));
  }

  private get flashId(): number {
    if (this.opts.flashId !== undefined) return this.opts.flashId;
    const capacity = Math.round(Math.log2(this.flash.length)); // 4 MB → 0x16
    return 0xc8 | (0x40 << 8) | (capacity << 16);
  }

  private readReg(addr: number): number {
    return this.regs.get(addr >>> 0) ?? 0;
  }

  private writeReg(addr: number, value: number, mask: number): void {
    const old = this.readReg(addr);
    const v = ((value & mask) | (old & ~mask)) >>> 0;
    this.regs.set(addr >>> 0, v);
    if (addr === SPI_CMD_REG && v & SPI_CMD_USR) {
      // A user SPI command: only RDID (0x9f) is modelled; the command bit clears when done.
      const cmd = this.readReg(SPI_USR2_REG) & 0xff;
      this.regs.set(SPI_W0_REG, cmd === 0x9f ? this.flashId : 0);
      this.regs.set(SPI_CMD_REG, v & ~SPI_CMD_USR);
    }
  }

  // ---- the UART ---------------------------------------------------------------------------

  private get baudMatches(): boolean {
    return this._chipBaud === null || this._chipBaud === this.hostBaud;
  }

  private print(text: string): void {
    const gen = this.generation;
    // The ROM prints while the host still sleeps in its reset sequence.
    setTimeout(() => {
      if (gen !== this.generation || this.opts.silent) return;
      this.console.push(text);
      this.emit(new TextEncoder().encode(text));
    }, 2);
  }

  private emit(bytes: Uint8Array): void {
    if (!this.sink) return;
    if (!this.baudMatches) {
      this.garbledBytes += bytes.length;
      return;
    }
    this.sink.data(bytes);
  }

  private receive(bytes: Uint8Array): void {
    if (this.opts.silent) return;
    if (this._state !== 'rom' && this._state !== 'stub') return; // the app does not speak SLIP
    if (!this.baudMatches) {
      this.garbledBytes += bytes.length;
      return;
    }
    for (const b of bytes) {
      if (b === 0xc0) {
        if (this.rxInFrame && this.rx.length) {
          const frame = Uint8Array.from(this.rx);
          const gen = this.generation;
          this.work = this.work.then(() => (gen === this.generation ? this.handle(frame) : undefined)).catch(() => undefined);
        }
        this.rx = [];
        this.rxInFrame = true;
        this.rxEscape = false;
      } else if (!this.rxInFrame) {
        continue;
      } else if (this.rxEscape) {
        this.rxEscape = false;
        this.rx.push(b === 0xdc ? 0xc0 : b === 0xdd ? 0xdb : b);
      } else if (b === 0xdb) {
        this.rxEscape = true;
      } else {
        this.rx.push(b);
      }
    }
  }

  /** Sends a response on a later tick, if the chip still runs what produced it. */
  private async send(frame: Uint8Array): Promise<void> {
    const gen = this.generation;
    await later();
    if (gen === this.generation) this.emit(slipEncode(frame));
  }

  private response(op: number, value: number, data: Uint8Array, status: number, error = 0): Uint8Array {
    // Status bytes at the end: four from the ESP32 ROM, two from the stub.
    const statusBytes = this._state === 'stub' ? Uint8Array.of(status, error) : Uint8Array.of(status, error, 0, 0);
    const body = new Uint8Array(data.length + statusBytes.length);
    body.set(data);
    body.set(statusBytes, data.length);
    const frame = new Uint8Array(8 + body.length);
    frame[0] = 0x01;
    frame[1] = op;
    frame[2] = body.length & 0xff;
    frame[3] = body.length >> 8;
    frame.set(LE32(value), 4);
    frame.set(body, 8);
    return frame;
  }

  // ---- commands ---------------------------------------------------------------------------

  private async handle(frame: Uint8Array): Promise<void> {
    if (frame.length < 8 || frame[0] !== 0x00) return; // not a request: ignored, as the ROM does
    const op = frame[1];
    const len = frame[2] | (frame[3] << 8);
    const chk = u32(frame, 4);
    const data = frame.subarray(8);
    const by = this._state === 'stub' ? 'stub' : 'rom';
    const record: CommandRecord = { op, name: opName(op), by, hostBaud: this.hostBaud, status: 0 };
    this.commands.push(record);
    const reply = async (status: number, error = 0, value = 0, payload: Uint8Array = new Uint8Array(0)) => {
      record.status = status;
      if (status) record.error = error;
      await this.send(this.response(op, value, payload, status, error));
    };
    const fail = (romError: number, stubError: number) => reply(1, by === 'stub' ? stubError : romError);
    if (len !== data.length) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);

    switch (op) {
      case OP.SYNC: {
        if (data.length !== SYNC_PAYLOAD.length || !data.every((b, i) => b === SYNC_PAYLOAD[i])) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);
        if (by === 'stub') return reply(0);
        // The ROM answers a SYNC eight times, with a non-zero value (the stub's is 0).
        record.status = 0;
        for (let i = 0; i < 8; i++) await this.send(this.response(op, 0x20120707, new Uint8Array(0), 0));
        return;
      }
      case OP.READ_REG:
        return reply(0, 0, this.readReg(u32(data, 0)));
      case OP.WRITE_REG: {
        if (data.length < 16 || data.length % 16) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);
        for (let o = 0; o < data.length; o += 16) this.writeReg(u32(data, o), u32(data, o + 4), u32(data, o + 8));
        return reply(0);
      }
      case OP.SPI_ATTACH:
      case OP.SPI_SET_PARAMS:
        return reply(0);
      case OP.MEM_BEGIN: {
        const [size, blocks, blockSize, offset] = [0, 4, 8, 12].map((o) => u32(data, o));
        this.mem.begin = { size, blocks, blockSize, offset, nextSeq: 0 };
        record.detail = `0x${offset.toString(16)} +${size}`;
        return reply(0);
      }
      case OP.MEM_DATA: {
        const begin = this.mem.begin;
        const size = u32(data, 0);
        const seq = u32(data, 4);
        const payload = data.subarray(16);
        if (!begin) return fail(ROM_FAILED, STUB_NOT_IN_FLASH_MODE);
        if (payload.length !== size) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);
        if (checksum(payload) !== (chk & 0xff)) return fail(ROM_BAD_CHECKSUM, STUB_BAD_CHECKSUM);
        if (seq !== begin.nextSeq) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);
        begin.nextSeq++;
        this.mem.loaded.push({ offset: begin.offset + seq * begin.blockSize, length: size });
        return reply(0);
      }
      case OP.MEM_END: {
        const stay = u32(data, 0);
        const entry = u32(data, 4);
        await reply(0);
        if (stay === 0) {
          const inLoaded = this.mem.loaded.some((m) => entry >= m.offset && entry < m.offset + m.length);
          if (!inLoaded) {
            // Jumping into nothing: the chip crashes and goes quiet.
            this.generation++;
            this._state = 'reset';
            return;
          }
          const gen = this.generation;
          setTimeout(() => {
            if (gen !== this.generation) return;
            this._state = 'stub';
            // The stub announces itself with an unsolicited SLIP packet.
            this.emit(slipEncode(new TextEncoder().encode('OHAI')));
          }, 1);
        }
        return;
      }
      case OP.FLASH_BEGIN:
      case OP.FLASH_DEFL_BEGIN: {
        const [size, blocks, blockSize, offset] = [0, 4, 8, 12].map((o) => u32(data, o));
        void blocks;
        void blockSize;
        const compressed = op === OP.FLASH_DEFL_BEGIN;
        if (offset + size > this.flash.length) return fail(ROM_FAILED, STUB_TOO_MUCH_DATA);
        this.erase(offset, size);
        const session: FlashSession = { compressed, offset, remaining: size, size, written: 0, nextSeq: 0, pending: [] };
        if (compressed) {
          const inflater = createInflate();
          inflater.on('data', (chunk: Buffer) => session.pending.push(new Uint8Array(chunk)));
          inflater.on('error', (e) => (session.inflateError = e));
          session.inflater = inflater;
        }
        this.session = session;
        record.detail = `0x${offset.toString(16)} +${size}`;
        return reply(0);
      }
      case OP.FLASH_DATA:
      case OP.FLASH_DEFL_DATA: {
        const s = this.session;
        const size = u32(data, 0);
        const seq = u32(data, 4);
        const payload = data.subarray(16);
        if (!s || s.compressed !== (op === OP.FLASH_DEFL_DATA)) return fail(ROM_FAILED, STUB_NOT_IN_FLASH_MODE);
        if (payload.length !== size) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);
        if (checksum(payload) !== (chk & 0xff)) return fail(ROM_BAD_CHECKSUM, STUB_BAD_CHECKSUM);
        if (seq !== s.nextSeq) return fail(ROM_INVALID_MESSAGE, STUB_BAD_DATA_LEN);
        s.nextSeq++;
        const block = this.dataBlocks++;
        const corrupt = block === this.opts.corruptBlock;
        record.detail = `block ${block} seq ${seq}`;
        if (!s.compressed) {
          // The ROM writes the whole (0xFF-padded) block; the stub stops at the announced size.
          const bytes = new Uint8Array(by === 'stub' ? payload.subarray(0, Math.min(payload.length, s.remaining)) : payload);
          if (corrupt) this.corrupt(bytes, 0, s.offset + s.written, block);
          this.program(s, bytes);
          return reply(0);
        }
        if (corrupt) s.corruptNextOutput = block;
        s.inflater!.write(Buffer.from(payload));
        await new Promise<void>((resolve) => s.inflater!.flush(zlibConstants.Z_SYNC_FLUSH, () => resolve()));
        await later();
        if (s.inflateError) return fail(ROM_DEFLATE_ERROR, STUB_INFLATE_ERROR);
        for (const chunk of s.pending.splice(0)) {
          const bytes = chunk.subarray(0, Math.min(chunk.length, s.remaining));
          if (s.corruptNextOutput !== undefined && bytes.length) {
            this.corrupt(bytes, 0, s.offset + s.written, s.corruptNextOutput);
            s.corruptNextOutput = undefined;
          }
          this.program(s, bytes);
          if (chunk.length > bytes.length) return fail(ROM_INVALID_MESSAGE, STUB_TOO_MUCH_DATA);
        }
        return reply(0);
      }
      case OP.FLASH_END:
      case OP.FLASH_DEFL_END: {
        const s = this.session;
        if (!s) return fail(ROM_FAILED, STUB_NOT_IN_FLASH_MODE);
        this.session = null;
        s.inflater?.end();
        if (by === 'stub' && s.compressed && s.written < s.size) return fail(ROM_FAILED, STUB_NOT_ENOUGH_DATA);
        await reply(0);
        // FLASH_END with 0 asks the chip to run the flashed code.
        if (u32(data, 0) === 0) this.runUserCode();
        return;
      }
      case OP.SPI_FLASH_MD5: {
        const addr = u32(data, 0);
        const size = u32(data, 4);
        record.detail = `0x${addr.toString(16)} +${size}`;
        if (addr + size > this.flash.length) return fail(ROM_FAILED, STUB_TOO_MUCH_DATA);
        const digest = createHash('md5').update(this.flash.subarray(addr, addr + size)).digest();
        // The ROM answers in 32 hex characters, the stub in 16 raw bytes.
        const payload = by === 'stub' ? new Uint8Array(digest) : new TextEncoder().encode(digest.toString('hex'));
        return reply(0, 0, 0, payload);
      }
      case OP.CHANGE_BAUDRATE: {
        const baud = u32(data, 0);
        record.detail = `${baud}`;
        // Answered at the old rate; the UART switches right after.
        await reply(0);
        this._chipBaud = baud;
        return;
      }
      case OP.ERASE_FLASH:
        if (by !== 'stub') return this.unsupported(record);
        this.flash.fill(0xff);
        return reply(0);
      case OP.ERASE_REGION: {
        if (by !== 'stub') return this.unsupported(record);
        const offset = u32(data, 0);
        const size = u32(data, 4);
        if (offset % FLASH_SECTOR || size % FLASH_SECTOR || offset + size > this.flash.length) return fail(ROM_FAILED, STUB_BAD_DATA_LEN);
        this.flash.fill(0xff, offset, offset + size);
        return reply(0);
      }
      case OP.RUN_USER_CODE:
        if (by !== 'stub') return this.unsupported(record);
        this.runUserCode();
        return;
      default:
        if (by === 'stub') return reply(1, STUB_NOT_IMPLEMENTED);
        return this.unsupported(record);
    }
  }

  /**
   * The ESP32 ROM has no GET_SECURITY_INFO (and no stub-only commands). Its answer to an
   * unknown command carries status 1 / 0x05 in a packet whose op byte does not match the request
   * (modelled as 0x00), and it repeats it eight times; esptool-js 0.7.0's readPacket turns that
   * into UnsupportedCommandError and drains the repeats. (Assumption: the op byte of the real
   * ROM's reply is not documented; esptool and esptool-js only rely on it differing.)
   */
  private async unsupported(record: CommandRecord): Promise<void> {
    record.status = 'unsupported';
    for (let i = 0; i < 8; i++) {
      await this.send(this.response(0x00, 0, new Uint8Array(0), 1, ROM_INVALID_MESSAGE));
    }
  }

  private runUserCode(): void {
    this.generation++;
    this._state = 'app';
    this._chipBaud = 115200;
  }

  private erase(offset: number, size: number): void {
    const start = offset - (offset % FLASH_SECTOR);
    const end = Math.min(this.flash.length, Math.ceil((offset + size) / FLASH_SECTOR) * FLASH_SECTOR);
    this.flash.fill(0xff, start, end);
  }

  /** NOR flash: programming can only clear bits. */
  private program(s: FlashSession, bytes: Uint8Array): void {
    const at = s.offset + s.written;
    for (let i = 0; i < bytes.length && at + i < this.flash.length; i++) this.flash[at + i] &= bytes[i];
    s.written += bytes.length;
    s.remaining -= bytes.length;
  }

  private corrupt(bytes: Uint8Array, index: number, address: number, block: number): void {
    const bit = 0;
    bytes[index] ^= 1 << bit;
    this.corruptions.push({ block, address: address + index, bit });
  }
}
