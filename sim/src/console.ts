// The Espruino JavaScript console (REPL) of a SimRig, served over TCP as an ESP32 serves it on telnet
// port 23: what EspruinoTools (`espruino -p tcp://HOST:PORT`) and `proofrig upload --tcp` talk to.
//
// Reproduced from Espruino's src/jsinteractive.c (jsiHandleChar, jsiHandleNewLine, jsiConsoleRemoveInputLine,
// jsiConsoleReturnInputLine) as far as a tool that uploads code relies on it:
// - typed characters are echoed; a line executes when its brackets are balanced (outside strings and
//   comments), otherwise the newline is kept and ":" is shown; ESC LF adds a newline without executing;
// - a line starting with DLE (\x10) runs without echo and without printing its result;
// - with echo on, the result is printed as "=value"; then the ">" prompt returns. Anything printed (print,
//   console.log, "Uncaught ..." reports) removes the prompt, which comes back once the output is done;
// - Ctrl-C (\x03) clears the input line; output uses \r\n line ends;
// - reset() (fresh empty context, Storage kept) and load() (soft reboot running Storage .bootcde) take
//   effect after the line that called them, as Espruino's idle loop does; E.reboot() is a hardware reset
//   and, like a telnet session on a real ESP32, drops the TCP connection; so does a power loss;
// - save() stores the code typed since the last boot in Storage `.varimg` (the real one stores a RAM
//   image; this keeps the effect, not the format) and the rig replays it at boot before `.bootcde`.
// Code runs in the rig's CURRENT firmware context (the same globals, timers and Storage the firmware has).
import net from 'node:net';
import vm from 'node:vm';
import type { SimRig } from './rig.js';
import { formatValue, uncaughtLines } from './format.js';
import { ESPRUINO_VERSION } from './context.js';

/** Built-in modules of the ESP32 build (process.env.MODULES); EspruinoTools fetches any others. */
export const ESP32_MODULES = 'Flash,Storage,heatshrink,net,dgram,http,NetworkJS,Wifi,ESP32,TelnetServer,crypto,neopixel';
/** Storage file save() writes (Espruino's RAM image file name). */
export const SAVED_STATE_FILE = '.varimg';
/** A line running longer than this is interrupted (as Ctrl-C would) so the host never hangs. */
export const CONSOLE_EVAL_TIMEOUT_MS = 5000;

export interface SimConsoleOptions {
  /** Address to listen on (default 127.0.0.1: the console is for this machine only). */
  host?: string;
  /**
   * Test hook: sees every complete input line before it runs and may return it changed (e.g. one byte of
   * one Storage write garbled, as a noisy serial line would do). Called only for lines that execute.
   */
  tamper?: (line: string) => string;
}

type Pending = 'reset' | 'load' | undefined;
const CONSOLE_SCRIPT = 'console';

/** Bracket depth of REPL input, Espruino-style: strings, templates and comments hide brackets; an unfinished one counts as open. */
export function countBrackets(code: string): number {
  let depth = 0;
  let i = 0;
  const n = code.length;
  while (i < n) {
    const c = code[i];
    if (c === '"' || c === "'" || c === '`') {
      i++;
      while (i < n && code[i] !== c) {
        if (code[i] === '\\') i++;
        else if (c !== '`' && code[i] === '\n') return depth + 1000; // unfinished string
        i++;
      }
      if (i >= n) return depth + 1000;
      i++;
    } else if (c === '/' && code[i + 1] === '/') {
      while (i < n && code[i] !== '\n') i++;
    } else if (c === '/' && code[i + 1] === '*') {
      const end = code.indexOf('*/', i + 2);
      if (end < 0) return depth + 1000;
      i = end + 2;
    } else {
      if (c === '(' || c === '{' || c === '[') depth++;
      else if (c === ')' || c === '}' || c === ']') depth--;
      i++;
    }
  }
  return depth;
}

export class SimConsole {
  private server: net.Server | undefined;
  private client: net.Socket | undefined;
  private listenPort = 0;
  private input = '';
  private escState: 0 | 27 | 79 | 91 | 92 = 0; // 92: ESC [ digits
  private hadCR = false;
  private echoOffForLine = false;
  private echoOff = false;
  private lineRemoved = false;
  private promptQueued = false;
  private pending: Pending;
  private selfBoot = false;
  /** Lines typed since the last boot (what save() keeps). */
  private transcript: string[] = [];
  private readonly installed = new WeakSet<vm.Context>();
  private readonly onLine = (line: string) => this.printLine(line);
  private readonly onBoot = () => this.booted();
  private readonly onPowerLoss = () => this.dropClient();

  constructor(
    private readonly rig: SimRig,
    private readonly opts: SimConsoleOptions = {},
  ) {}

  get port(): number {
    return this.listenPort;
  }

  listen(port = 0): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = net.createServer((sock) => this.accept(sock));
      server.once('error', reject);
      server.listen(port, this.opts.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        this.server = server;
        this.listenPort = (server.address() as net.AddressInfo).port;
        this.rig.on('console', this.onLine);
        this.rig.on('boot', this.onBoot);
        this.rig.on('powerloss', this.onPowerLoss);
        resolve(this.listenPort);
      });
    });
  }

  async close(): Promise<void> {
    this.rig.off('console', this.onLine);
    this.rig.off('boot', this.onBoot);
    this.rig.off('powerloss', this.onPowerLoss);
    this.dropClient();
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }

  // ---- connection --------------------------------------------------------------------------------

  /** One console: a new connection takes it over from the previous one (which is closed). */
  private accept(sock: net.Socket): void {
    this.dropClient();
    this.client = sock;
    this.input = '';
    this.escState = 0;
    this.echoOffForLine = false;
    this.lineRemoved = false;
    sock.setNoDelay(true);
    sock.on('data', (buf: Buffer) => {
      if (this.client !== sock) return;
      this.receive(buf.toString('latin1'));
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      if (this.client === sock) this.client = undefined;
    });
  }

  private dropClient(): void {
    const c = this.client;
    this.client = undefined;
    c?.destroy();
  }

  private write(text: string): void {
    const c = this.client;
    if (c && !c.destroyed) c.write(Buffer.from(text, 'latin1'));
  }

  // ---- Espruino's input handling -----------------------------------------------------------------

  private receive(data: string): void {
    for (let k = 0; k < data.length; k++) this.handleChar(data[k]);
    this.returnPrompt();
  }

  private get echo(): boolean {
    return !this.echoOff && !this.echoOffForLine;
  }

  private get showInputLine(): boolean {
    return this.echo && !this.lineRemoved;
  }

  private handleChar(ch: string): void {
    const code = ch.charCodeAt(0);
    if (this.escState === 27) {
      this.escState = code === 91 ? 91 : code === 79 ? 79 : 0;
      if (code === 10) this.newLine(false); // Alt-Enter: newline without executing
      return;
    }
    if (this.escState === 79) {
      this.escState = 0;
      return;
    }
    if (this.escState === 91 || this.escState === 92) {
      // cursor keys and "ESC [ 1234 d" line numbers: nothing to do for a non-interactive console
      this.escState = code >= 48 && code <= 57 ? 92 : 0;
      return;
    }
    const afterCR = this.hadCR;
    this.hadCR = false;
    if (code === 27) this.escState = 27;
    else if (code === 3) this.ctrlC();
    else if (code === 16 && this.input.length === 0) this.echoOffForLine = true;
    else if (code === 21 || code === 23) this.input = '';
    else if (code === 8 || code === 127) {
      if (this.input.length > 0) {
        this.input = this.input.slice(0, -1);
        if (this.showInputLine) this.write('\b \b');
      }
    } else if (code === 10 && afterCR) {
      // \r\n: already handled at the \r
    } else if (code === 13 || code === 10) {
      this.hadCR = code === 13;
      this.newLine(true);
    } else if (code >= 32 || code === 9) {
      const s = code === 9 ? '    ' : ch;
      this.input += s;
      if (this.showInputLine) this.write(s);
    }
  }

  private ctrlC(): void {
    const shown = this.input.length > 0 && this.showInputLine;
    this.input = '';
    this.echoOffForLine = false;
    if (shown) {
      this.write('\r\n');
      this.lineRemoved = true;
    }
  }

  private newLine(execute: boolean): void {
    if (!execute || countBrackets(this.input) > 0) {
      if (this.showInputLine) this.write('\r\n:');
      this.input += '\n';
      return;
    }
    if (this.showInputLine) this.write('\r\n');
    if (!this.echoOffForLine) this.lineRemoved = true;
    let line = this.input.replace(/\s+$/, '');
    this.input = '';
    if (line.length > 0 && this.opts.tamper) line = this.opts.tamper(line);
    const printResult = this.echo && line.length > 0;
    this.execute(line, printResult);
    this.echoOffForLine = false;
    this.runPending();
  }

  private execute(line: string, printResult: boolean): void {
    const ctx = this.rig.context;
    if (!ctx || line.length === 0) return;
    this.install(ctx);
    let value: unknown;
    try {
      value = new vm.Script(line, { filename: CONSOLE_SCRIPT }).runInContext(ctx, { timeout: CONSOLE_EVAL_TIMEOUT_MS });
    } catch (e) {
      this.printLine(uncaughtLines(e, CONSOLE_SCRIPT)[0]); // Espruino's report; host stack frames would only confuse
      return;
    }
    if (!/\bsave\s*\(/.test(line)) this.transcript.push(line);
    if (printResult) this.write('=' + formatValue(value) + '\r\n');
  }

  /** reset()/load() run after the line that asked for them, as Espruino's idle loop does. */
  private runPending(): void {
    const p = this.pending;
    this.pending = undefined;
    if (!p) return;
    this.selfBoot = true;
    try {
      if (p === 'reset') this.rig.reset();
      else this.rig.load();
    } finally {
      this.selfBoot = false;
    }
    this.lineRemoved = true;
  }

  /** Output from the chip: remove the prompt, print, and bring the prompt back afterwards. */
  private printLine(line: string): void {
    if (!this.client) return;
    if (!this.lineRemoved) {
      this.lineRemoved = true;
      if (this.echo && this.input.length > 0) this.write('\r\x1b[J');
    }
    this.write(line + '\r\n');
    this.queuePrompt();
  }

  private queuePrompt(): void {
    if (this.promptQueued) return;
    this.promptQueued = true;
    setImmediate(() => {
      this.promptQueued = false;
      this.returnPrompt();
    });
  }

  private returnPrompt(): void {
    if (!this.lineRemoved || !this.client) return;
    this.lineRemoved = false;
    if (this.echo) this.write('>' + this.input.replace(/\n/g, '\r\n:'));
  }

  /** A boot the console did not ask for (E.reboot, watchdog, power back): a real telnet session dies with it. */
  private booted(): void {
    this.transcript = [];
    if (!this.selfBoot) this.dropClient();
  }

  // ---- Espruino's interactive globals ------------------------------------------------------------

  /** Add what the firmware context lacks and a console needs: reset/load/save/echo, E.setTimeZone, a fuller process.env. */
  private install(ctx: vm.Context): void {
    if (this.installed.has(ctx)) return;
    this.installed.add(ctx);
    const g = vm.runInContext('globalThis', ctx) as Record<string, unknown>;
    const define = (obj: Record<string, unknown>, name: string, value: unknown) =>
      Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: false });
    define(g, 'reset', () => {
      this.pending = 'reset';
    });
    define(g, 'load', (file?: unknown) => {
      if (file !== undefined) throw new (g.Error as ErrorConstructor)('sim: load(file) is not simulated; load() runs .bootcde');
      this.pending = 'load';
    });
    define(g, 'save', () => {
      this.rig.storage.write(SAVED_STATE_FILE, this.transcript.join('\n') || ';');
    });
    define(g, 'echo', (on: unknown) => {
      this.echoOff = !on;
    });
    const E = g.E as Record<string, unknown> | undefined;
    if (E && typeof E === 'object') {
      if (!E.setTimeZone) define(E, 'setTimeZone', () => undefined);
      if (!E.setConsole) define(E, 'setConsole', () => undefined);
    }
    const proc = g.process as { env?: Record<string, unknown> } | undefined;
    if (proc && proc.env && typeof proc.env === 'object') {
      const env = proc.env;
      const extra: Record<string, unknown> = {
        VERSION: ESPRUINO_VERSION,
        GIT_COMMIT: 'simulated',
        BOARD: 'ESP32',
        RAM: 524288,
        SERIAL: '240ac4000001',
        CONSOLE: 'Telnet',
        MODULES: ESP32_MODULES,
        EXPTR: 1073484860,
      };
      for (const k of Object.keys(extra)) if (env[k] === undefined) env[k] = extra[k];
    }
  }
}
