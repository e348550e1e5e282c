// A small client for Espruino's JavaScript console, for what EspruinoTools does not offer: writing the rig
// config to Storage with an answer per chunk, and reading back E.CRC32 of stored files.
//
// Why not EspruinoTools here: its Node API sends code and returns once the board has been quiet for
// 0.5 s; it has no call that returns a value to the caller other than `expr`, which opens and closes the
// port for every expression, logs everything it sends (the config holds the device secret), and gives up
// silently (undefined) on a timeout. This client sends each line with Espruino's "\x10" (no echo, no
// result printed), so the board never echoes the secret back, and wraps every expression so its JSON
// result comes back between markers that are assembled on the board (a stale or echoed command can never
// look like an answer).
import { UploadError } from './errors.js';
import type { Transport } from './transport.js';

/** Bytes per Storage.write: EspruinoTools' SAVE_ON_SEND size; a line stays well inside Espruino's input buffer. */
export const CHUNK_BYTES = 1024;

export interface FileInfo {
  length: number;
  /** E.CRC32 of the stored bytes, unsigned. */
  crc: number;
}

/** A JavaScript string literal Espruino and V8 both read back as exactly these bytes (no octal escapes). */
export function byteLiteral(bytes: Uint8Array): string {
  let s = '"';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x22) s += '\\"';
    else if (b === 0x5c) s += '\\\\';
    else if (b === 0x0a) s += '\\n';
    else if (b === 0x0d) s += '\\r';
    else if (b === 0x09) s += '\\t';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += '\\x' + b.toString(16).padStart(2, '0');
  }
  return s + '"';
}

export class ConsoleClient {
  private rx = '';
  private seq = 0;
  private closed = false;
  private listener: (() => void) | undefined;

  constructor(
    private readonly t: Transport,
    /** Raw console text, for --verbose (the caller redacts). */
    private readonly debug: (text: string) => void = () => {},
  ) {
    t.onData((chunk) => {
      this.rx += chunk;
      if (this.rx.length > 200000) this.rx = this.rx.slice(-100000);
      this.debug(chunk);
      this.listener?.();
    });
    t.onClose(() => {
      this.closed = true;
      this.listener?.();
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Get the console's attention: Ctrl-C clears any half-typed line, then a trivial expression must answer. */
  async sync(attempts = 3, timeoutMs = 1500): Promise<void> {
    let last: unknown;
    for (let i = 0; i < attempts; i++) {
      try {
        await this.t.write(Buffer.from('\x03', 'latin1'));
        await delay(50);
        const v = await this.evaluate<number>('6*7', timeoutMs);
        if (v === 42) return;
        last = new Error(`answered ${JSON.stringify(v)} to 6*7`);
      } catch (e) {
        last = e;
        if (this.closed) break;
      }
    }
    throw new UploadError(
      'NO_CONSOLE',
      `connected, but no Espruino console answered (${(last as Error)?.message ?? last}). Is Espruino flashed on the board ` +
        '(`proofrig flash`), and nothing else (a serial monitor, the Espruino IDE) using its console?',
    );
  }

  /**
   * Wait until the board answers again after reset(): a board still resetting drops or garbles what it
   * is sent, so each try starts a fresh line (no Ctrl-C: it could interrupt the boot code reset() runs).
   */
  async afterReset(timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    let last: unknown;
    while (!this.closed && Date.now() < end) {
      try {
        await this.send('\n');
        if ((await this.evaluate<number>('6*7', 1000)) === 42) return;
      } catch (e) {
        last = e;
      }
      await delay(250);
    }
    throw new UploadError('NO_RESPONSE', `the board did not answer within ${timeoutMs} ms of reset() (${(last as Error)?.message ?? 'connection closed'})`);
  }

  /** Evaluate an expression on the board; resolves to its JSON value. Throws NO_RESPONSE, or UPLOAD_FAILED when it threw. */
  async evaluate<T = unknown>(expr: string, timeoutMs = 5000): Promise<T> {
    const tag = 'P' + ++this.seq + 'R' + ((Math.random() * 1e6) | 0);
    // The markers are joined on the board, so the text of the command never contains them.
    const cmd =
      `\x10(function(){var r;try{r="="+JSON.stringify(${expr})}catch(e){r="!"+e}` +
      `print("<<${tag.slice(0, 2)}"+"${tag.slice(2)}|"+r+"|${tag.slice(0, 2)}"+"${tag.slice(2)}>>")})()\n`;
    const re = new RegExp(`<<${tag}\\|([\\s\\S]*?)\\|${tag}>>`);
    this.rx = '';
    await this.send(cmd);
    const marker = () => re.exec(this.rx)?.[1];
    const first = await this.waitFor(() => marker() ?? (/Uncaught /.test(this.rx) ? null : undefined), timeoutMs);
    if (first !== null) return this.parse<T>(first);
    // An error report: a line the board could not even parse (a garbled transport) never prints the marker,
    // but the report may also be the running program's, so the marker gets one more second.
    const report = /Uncaught ([^\r\n]*)/.exec(this.rx)?.[1] ?? '';
    try {
      return this.parse<T>(await this.waitFor(marker, 1000));
    } catch (e) {
      if (e instanceof UploadError && e.code === 'NO_RESPONSE') throw new UploadError('UPLOAD_FAILED', `the board could not run a command: ${report}`);
      throw e;
    }
  }

  private parse<T>(s: string): T {
    if (s[0] === '!') throw new UploadError('UPLOAD_FAILED', `the board threw: ${s.slice(1)}`);
    const body = s.slice(1);
    if (body === 'undefined') return undefined as T;
    try {
      return JSON.parse(body) as T;
    } catch {
      throw new UploadError('UPLOAD_FAILED', `the board answered something that is not JSON: ${body.slice(0, 80)}`);
    }
  }

  /**
   * Write `bytes` to Storage file `name` in chunks, each confirmed by the board (Espruino's write(name, data,
   * offset, size): the first chunk creates the file at its full size, the rest fill it in). `onChunk` sees
   * (bytes written so far, total).
   */
  async writeFile(name: string, bytes: Uint8Array, onChunk?: (done: number, total: number) => void): Promise<void> {
    if (bytes.length === 0) throw new UploadError('WRITE_FAILED', `${name}: Espruino cannot store an empty file`);
    const q = JSON.stringify(name);
    for (let off = 0; off < bytes.length; off += CHUNK_BYTES) {
      const chunk = bytes.subarray(off, Math.min(bytes.length, off + CHUNK_BYTES));
      const args = off === 0 ? `${q},${byteLiteral(chunk)},0,${bytes.length}` : `${q},${byteLiteral(chunk)},${off}`;
      let ok: unknown;
      try {
        ok = await this.evaluate(`require("Storage").write(${args})`, 10000);
      } catch (e) {
        if (e instanceof UploadError && e.code === 'UPLOAD_FAILED')
          throw new UploadError('WRITE_FAILED', `writing ${name} at offset ${off}: ${e.message}`);
        throw e;
      }
      if (ok !== true)
        throw new UploadError(
          'WRITE_FAILED',
          `the board refused to write ${name} at offset ${off} (Storage full? free space with require("Storage").compact() or erase old files)`,
        );
      onChunk?.(Math.min(bytes.length, off + CHUNK_BYTES), bytes.length);
    }
  }

  /** Length and E.CRC32 of a stored file, or null when it does not exist. */
  async fileInfo(name: string): Promise<FileInfo | null> {
    const r = await this.evaluate<[number, number] | null>(
      `(function(d){return d===undefined?null:[d.length,E.CRC32(d)]})(require("Storage").read(${JSON.stringify(name)}))`,
      10000,
    );
    if (r === null) return null;
    if (!Array.isArray(r) || typeof r[0] !== 'number' || typeof r[1] !== 'number')
      throw new UploadError('UPLOAD_FAILED', `unexpected answer reading back ${name}: ${JSON.stringify(r)}`);
    return { length: r[0], crc: r[1] >>> 0 };
  }

  /** Send a statement without waiting for an answer (load(), which restarts the JavaScript). */
  async run(statement: string): Promise<void> {
    await this.send(`\x10${statement}\n`);
  }

  async send(text: string): Promise<void> {
    if (this.closed) throw new UploadError('NO_RESPONSE', 'the console connection closed');
    await this.t.write(Buffer.from(text, 'latin1'));
  }

  close(): Promise<void> {
    this.closed = true;
    return this.t.close();
  }

  private waitFor<R>(check: () => R | undefined, timeoutMs: number): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        this.listener = undefined;
        fn();
      };
      const poll = () => {
        const r = check();
        if (r !== undefined) return done(() => resolve(r));
        if (this.closed) done(() => reject(new UploadError('NO_RESPONSE', 'the console connection closed while waiting for an answer')));
      };
      const timer = setTimeout(
        () => done(() => reject(new UploadError('NO_RESPONSE', `no answer from the board within ${timeoutMs} ms`))),
        timeoutMs,
      );
      this.listener = poll;
      poll();
    });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
