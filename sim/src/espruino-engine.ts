// The Espruino engine: the firmware runs in a real Espruino interpreter process (Linux build of the
// same source as the ESP32 port) whose pin functions a `.boot0` shim binds to this rig's model in
// Node (see espruino-shim.ts for the channel). Power loss is SIGKILL and a new process in the same
// folder: Storage (`./espruino.flash`) survives, everything in RAM does not — a genuinely new boot.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { BOOT_CODE_FILE, CONFIG_FILE } from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import { ChipCgroup, type ChipSpeed } from './chip-speed.js';
import { shimSource } from './espruino-shim.js';
import type { Gpio, Level, PinMode } from './gpio.js';
import type { SimNetwork } from './network.js';
import { NetworkProxy } from './network-proxy.js';
import type { I2cPort } from './i2c-global.js';

/** Espruino's default analogWrite frequency (also the vm's). */
const DEFAULT_PWM_HZ = 5000;
/** Most edges in one pull answer (~10 bytes each: well inside a pipe's 64 KB); the rest follow pushed. */
const MAX_PULL = 2000;
/** Shortest gap between two pushes of edges to the interpreter, ms. */
const PUSH_GAP_MS = 4;
/** A read this long (interpreter ms) or less after an output is lined up with it (answerAt); it waits at most that long. */
const ALIGN_WINDOW_MS = 200;

/** The interpreter binary named by PROOFRIG_ESPRUINO, or an error that says how to get one. */
export function espruinoBinary(env: NodeJS.ProcessEnv = process.env): string {
  const bin = env.PROOFRIG_ESPRUINO;
  if (!bin)
    throw new Error(
      'the Espruino engine needs the Espruino interpreter: build it with scripts/build-espruino.sh and set PROOFRIG_ESPRUINO to the path it prints',
    );
  if (!existsSync(bin)) throw new Error(`PROOFRIG_ESPRUINO=${bin}: no such file (build it with scripts/build-espruino.sh)`);
  return bin;
}

export interface EspruinoEngineDeps {
  binary: string;
  gpio: Gpio;
  clock: Clock;
  network: SimNetwork;
  /** Console output of the interpreter (may contain newlines). */
  print: (text: string) => void;
  onWrite: (pin: number, level: Level) => void;
  onPulse: (pin: number, value: Level, times: number[]) => void;
  onPwm: (pin: number, duty: number, freq: number) => void;
  /** The rig's I2C bus (its sensors), answering the shim's I2C1. */
  i2c?: I2cPort;
  /** Folder of the interpreter (its Storage is ./espruino.flash there); default a fresh temp folder. */
  dir?: string;
  /** Serve the interpreter's own console over telnet on this loopback port (--telnet). */
  telnetPort?: number;
  /** The board of the config in the interpreter's Storage at this boot (undefined: none). */
  onBoard?: (board: BoardDef | undefined) => void;
  /** Integrate the rig's motion up to clock time t (ms), so every edge before t has been emitted. */
  catchUp?: (t: number) => void;
  /** Run the interpreter at this chip speed: a CPU quota on its process (chip-speed.ts); the install runs unthrottled. */
  chipSpeed?: ChipSpeed;
}

interface Watch {
  pin: number;
  data: number;
}

export class EspruinoEngine {
  readonly dir: string;
  private child: ChildProcess | undefined;
  private pinServer: net.Server | undefined;
  private pinPort = 0;
  private pinSock: net.Socket | undefined;
  /** Watch edges not yet known to be delivered, in order: seq of the first, then per edge its watch, time (ms) and code. */
  private seq0 = 0;
  private qWatch: number[] = [];
  private qTime: number[] = [];
  private qCode: number[] = [];
  /** How many of the queued edges went out on the pin socket already. */
  private pushed = 0;
  private pushScheduled = false;
  private lastPush = 0;
  private watches = new Map<number, Watch>();
  private timers = new Set<TimerHandle>();
  private busyUntil = new Map<number, number>();
  /** Clock ms minus the interpreter's ms at its last output (wrote()); undefined before one. */
  private lag: number | undefined;
  /** The interpreter's ms at its last output. */
  private wroteAt = 0;
  private stdoutBuf = '';
  private proxy: NetworkProxy | undefined;
  private installed = false;
  private evals: ((v: unknown) => void)[] = [];
  private readonly unsubscribe: () => void;
  private disposed = false;
  private cgroup: ChipCgroup | undefined;
  /** Processes started (boots), for tests. */
  starts = 0;

  constructor(private readonly deps: EspruinoEngineDeps) {
    this.dir = deps.dir ?? mkdtempSync(join(tmpdir(), 'proofrig-espruino-'));
    this.unsubscribe = deps.gpio.onChange((pin, level, atMs) => this.changed(pin, level, atMs));
  }

  get alive(): boolean {
    return this.child !== undefined;
  }

  /**
   * Power on: on the first boot, write Storage (`.boot0` shim, the rig config with its host routed
   * through the network proxy, the firmware as `.bootcde`), then start the interpreter, which boots from
   * Storage as a chip does.
   */
  async start(config: RigConfig | undefined, firmware: string | undefined): Promise<void> {
    if (this.disposed) return;
    if (!this.installed) {
      await this.install(config, firmware);
      this.installed = true;
    }
    if (this.disposed) return;
    const args = this.deps.telnetPort !== undefined ? ['--telnet'] : [];
    const env = { ...process.env, ESPRUINO_TELNET_PORT: String(this.deps.telnetPort ?? 2323) };
    if (this.deps.chipSpeed && !this.cgroup) this.cgroup = new ChipCgroup(this.deps.chipSpeed);
    const child = spawnInterpreter(this.deps.binary, args, { cwd: this.dir, env }, this.cgroup);
    this.starts++;
    this.child = child;
    this.dropEdges();
    this.lag = undefined;
    this.stdoutBuf = '';
    child.stdout!.setEncoding('latin1');
    child.stdout!.on('data', (d: string) => {
      if (this.child === child) this.stdout(d);
    });
    child.stderr!.on('data', () => {}); // the Linux build's own warnings
    child.on('error', (e) => this.deps.print(`sim: cannot start the Espruino interpreter ${this.deps.binary}: ${e.message}`));
    child.on('exit', (code, signal) => {
      // Disposed (the power cut may have come first): the cgroup can go once its interpreter left it.
      if (this.disposed) this.cgroup?.remove();
      if (this.child !== child) return;
      this.child = undefined;
      this.deps.print(`sim: the Espruino interpreter exited (${signal ?? code})`);
    });
  }

  /** Power cut: SIGKILL (the interpreter ignores SIGTERM), every pending pulse and edge dropped. */
  kill(): void {
    const c = this.child;
    this.child = undefined;
    c?.kill('SIGKILL');
    for (const t of this.timers) this.deps.clock.clearTimeout(t);
    this.timers.clear();
    this.busyUntil.clear();
    this.watches.clear();
    this.dropEdges();
    this.pinSock?.destroy();
    this.pinSock = undefined;
    this.proxy?.resetAll();
    for (const r of this.evals) r(undefined);
    this.evals = [];
  }

  /** The chip-speed calibration (undefined at full speed). */
  get chipSpeed(): ChipSpeed | undefined {
    return this.deps.chipSpeed;
  }

  /** The chip-speed cgroup of the interpreter, once started (undefined at full speed). */
  get chipCgroup(): ChipCgroup | undefined {
    return this.cgroup;
  }

  dispose(): void {
    this.disposed = true;
    this.kill();
    // Gone now if no interpreter is left in it, else when the killed one exits (start()'s exit handler).
    this.cgroup?.remove();
    this.unsubscribe();
    this.pinServer?.close();
    this.proxy?.close();
  }

  /** Evaluate an expression inside the running interpreter (JSON result), e.g. `process.memory()`. */
  evaluate(expr: string, ms = 3000): Promise<unknown> {
    if (!this.pinSock || /\n/.test(expr)) return Promise.resolve(undefined);
    return new Promise((res) => {
      const t = setTimeout(() => {
        const i = this.evals.indexOf(done);
        if (i >= 0) this.evals.splice(i, 1);
        res(undefined);
      }, ms);
      const done = (v: unknown): void => {
        clearTimeout(t);
        res(v);
      };
      this.evals.push(done);
      this.pinSock!.write('!' + expr + '\n');
    });
  }

  // ---- install -------------------------------------------------------------------------------------

  private async install(config: RigConfig | undefined, firmware: string | undefined): Promise<void> {
    const server = net.createServer((s) => this.pinConnected(s));
    this.pinServer = server;
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(0, '127.0.0.1', () => res());
    });
    this.pinPort = (server.address() as net.AddressInfo).port;
    let cfg = config;
    // The host's gateway (ws://) or the MQTT broker (mqtt://) the firmware dials, behind the proxy.
    const m = config ? /^(ws|mqtt):\/\/([^/:]+):(\d+)(\/.*)?$/.exec(config.host) : null;
    if (config && m) {
      this.proxy = new NetworkProxy(this.deps.network, { host: m[2]!, port: Number(m[3]) });
      const port = await this.proxy.listen();
      cfg = { ...config, host: `${m[1]}://127.0.0.1:${port}${m[4] ?? ''}` };
    }
    const lines = [`var S=require('Storage');`, `S.write('.boot0',${JSON.stringify(shimSource(this.pinPort))});`];
    if (cfg) lines.push(`S.writeJSON(${JSON.stringify(CONFIG_FILE)},${JSON.stringify(cfg)});`);
    if (firmware !== undefined) lines.push(`S.write(${JSON.stringify(BOOT_CODE_FILE)},${JSON.stringify(firmware)});`);
    lines.push(`print('installed');`);
    const fifo = join(this.dir, 'pins.fifo');
    if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
    const setup = join(this.dir, 'install.js');
    writeFileSync(setup, lines.join('\n'));
    // Single-file mode: runs the file without booting from Storage, then exits by itself.
    const out = await new Promise<string>((res) => {
      const c = spawnInterpreter(this.deps.binary, [setup], { cwd: this.dir });
      let text = '';
      c.stdout!.on('data', (d) => (text += d));
      const t = setTimeout(() => c.kill('SIGKILL'), 20000);
      c.on('exit', () => {
        clearTimeout(t);
        res(text);
      });
      c.on('error', (e) => res(String(e)));
    });
    if (!/installed/.test(out)) throw new Error(`sim: installing the firmware into the interpreter's Storage failed: ${out.slice(-300)}`);
  }

  // ---- interpreter → rig (stdout) ------------------------------------------------------------------

  private stdout(d: string): void {
    this.stdoutBuf += d;
    let i = this.stdoutBuf.indexOf('\n');
    while (i >= 0) {
      const line = this.stdoutBuf.slice(0, i).replace(/\r$/, '');
      this.stdoutBuf = this.stdoutBuf.slice(i + 1);
      const k = line.indexOf('\x01');
      if (k < 0) this.deps.print(line);
      else {
        const before = line.slice(0, k).replace(/^>+/, '');
        if (before) this.deps.print(before);
        this.message(line.slice(k + 1));
      }
      i = this.stdoutBuf.indexOf('\n');
    }
  }

  /** The shim's I2C1: "W" writes bytes (answer 1 or 0), "R" reads n bytes (answer them, or '-' for a NAK). */
  private i2c(op: string, addr: number, arg: string): string {
    const port = this.deps.i2c;
    if (op.charAt(0) === 'W') return port && port.write(addr, arg === '-' ? [] : arg.split(',').map(Number)) ? '1' : '0';
    const d = port ? port.read(addr, Number(arg)) : null;
    return d ? d.join(',') : '-';
  }

  private message(m: string): void {
    const kind = m.charAt(0);
    const a = m.slice(1).split(' ');
    const g = this.deps.gpio;
    try {
      switch (kind) {
        case 'W': {
          const p = Number(a[0]);
          const v = (a[1] === '1' ? 1 : 0) as Level;
          this.wrote(Number(a[2]));
          g.write(p, v);
          this.deps.onWrite(p, v);
          break;
        }
        case 'R':
          // "R<pin>" or, for a digitalRead of an array, "R<pin>,<pin>,…": the bits, first pin most significant.
          this.answerAt(Number(a[1]), a[2]!, () => String(a[0]!.split(',').reduce((v, p) => (v << 1) | g.read(Number(p)), 0)));
          break;
        case 'G':
          this.answer(a[1]!, () => g.getMode(Number(a[0])) ?? '-');
          break;
        case 'a':
          this.answerAt(Number(a[1]), a[2]!, () => String(g.analogRead(Number(a[0]))));
          break;
        case 'I':
          this.answerAt(Number(a[2]), a[3]!, () => this.i2c(a[0]!, Number(a[0]!.slice(1)), a[1]!));
          break;
        case 'E':
          this.answer(a[2]!, () => this.pull(Number(a[0]), Number(a[1]) * 1000));
          break;
        case 'M':
          g.setMode(Number(a[0]), a[1] === 'auto' ? undefined : (a[1] as PinMode), a[2] === 'a');
          break;
        case 'A': {
          const p = Number(a[0]);
          const duty = Number(a[1]);
          const freq = Number(a[2]) > 0 ? Number(a[2]) : DEFAULT_PWM_HZ;
          this.wrote(Number(a[3]));
          g.analogWrite(p, duty, freq);
          this.deps.onPwm(p, duty, freq);
          break;
        }
        case 'P':
          this.wrote(Number(a[3]));
          this.pulse(Number(a[0]), (a[1] === '1' ? 1 : 0) as Level, (a[2] ?? '').split(',').map(Number));
          break;
        case 'S':
          g.forceWatchInput(Number(a[1]));
          this.watches.set(Number(a[0]), { pin: Number(a[1]), data: Number(a[2]) });
          break;
        case 'C':
          if (a[0] === '*') this.watches.clear();
          else this.watches.delete(Number(a[0]));
          break;
        case 'V': {
          let v: unknown;
          try {
            v = JSON.parse(m.slice(1));
          } catch {
            v = m.slice(1);
          }
          this.evals.shift()?.(v);
          break;
        }
        case 'J': {
          let board: BoardDef | undefined;
          try {
            board = m.length > 1 ? (JSON.parse(m.slice(1)) as BoardDef) : undefined;
          } catch {
            board = undefined;
          }
          this.deps.onBoard?.(board);
          break;
        }
        case 'B':
          // The shim ran: a boot, or reset()/load() typed at the console, which start the JavaScript
          // afresh (watch ids count from 1 again and no edge has been delivered yet).
          this.watches.clear();
          this.dropEdges();
          this.lag = undefined;
          break;
        default:
          break; // 'H' (pin channel up)
      }
    } catch (e) {
      this.deps.print(`sim: ${(e as Error).message}`);
      if (kind === 'R') this.answer(a[2]!, () => '0');
      if (kind === 'G') this.answer(a[1]!, () => '0');
    }
  }

  /**
   * An output at the interpreter's time t (ms since its shim started): how late this process handles it
   * is the reference for the reads that follow (answerAt).
   */
  private wrote(t: number): void {
    if (!Number.isFinite(t)) return;
    this.lag = this.deps.clock.now() - t;
    this.wroteAt = t;
  }

  /**
   * Answer a read the interpreter made at its time t no earlier than the same time after its last output
   * in this process. The interpreter's lines reach Node through a pipe: when Node is busy, a pin write
   * and the read the firmware made 25 ms later arrive together, and answered at once the read would see
   * the rig 25 ms too early (a relay's armature, driven by the write, not yet moved). The interpreter
   * waits on the pipe meanwhile, as the chip's read would have happened then (never longer than the
   * read came after the output).
   */
  private answerAt(t: number, q: string, value: () => string): void {
    // Only a read soon after the output: what a write sets going in the rig (a relay's armature) is over
    // by then, and a later read would otherwise wait again for every late output before it.
    const wait = this.lag === undefined || !Number.isFinite(t) || t - this.wroteAt > ALIGN_WINDOW_MS ? 0 : t + this.lag - this.deps.clock.now();
    if (wait <= 0) return this.answer(q, value);
    const h = this.deps.clock.setTimeout(() => {
      this.timers.delete(h);
      this.answer(q, value);
    }, wait);
    this.timers.add(h);
  }

  /**
   * Answer a synchronous read through the named pipe the shim is blocked on. Opened non-blocking: if
   * the shim has not opened its end yet (ENXIO), try again shortly; never block Node.
   */
  private answer(q: string, value: () => string): void {
    let v: string;
    try {
      v = value();
    } catch (e) {
      this.deps.print(`sim: ${(e as Error).message}`);
      v = '0';
    }
    const child = this.child;
    const fifo = join(this.dir, 'pins.fifo');
    // The interpreter opens the pipe to read the answer after it wrote the question; until it does,
    // opening for writing fails ENXIO. Waited for as long as this interpreter lives: giving up would
    // leave it blocked on the pipe for good (a stalled interpreter must recover when it runs again).
    const since = Date.now();
    let told = false;
    const attempt = (): void => {
      if (this.child !== child || !child) return;
      let fd: number;
      try {
        fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENXIO') return this.deps.print(`sim: cannot answer a pin read: ${(e as Error).message}`);
        const waited = Date.now() - since;
        if (waited >= 5000 && !told) {
          told = true;
          this.deps.print(`sim: the interpreter has not opened pins.fifo for ${waited} ms after asking "${q}"; still waiting`);
        }
        setTimeout(attempt, waited < 5000 ? 0 : 10);
        return;
      }
      try {
        writeSync(fd, `${q} ${v}`);
      } finally {
        closeSync(fd);
      }
    };
    attempt();
  }

  /** digitalPulse as Espruino does it: levels from a timer, queued after the pin's previous pulse. */
  private pulse(p: number, first: Level, times: number[]): void {
    const g = this.deps.gpio;
    const clock = this.deps.clock;
    g.autoOutput(p);
    let v = first;
    let at = Math.max(clock.now(), this.busyUntil.get(p) ?? 0);
    const later = (fn: () => void, ms: number): void => {
      if (ms <= 0) return fn();
      const h = clock.setTimeout(() => {
        this.timers.delete(h);
        fn();
      }, ms);
      this.timers.add(h);
    };
    for (const t of times) {
      const level = v;
      if (t >= 0) {
        later(() => g.setOut(p, level), at - clock.now());
        at += t;
        later(() => g.setOut(p, (1 - level) as Level), at - clock.now());
      }
      v = (1 - v) as Level;
    }
    this.busyUntil.set(p, at);
    this.deps.onPulse(p, first, times);
  }

  // ---- rig → interpreter (TCP) ---------------------------------------------------------------------

  private pinConnected(s: net.Socket): void {
    s.setNoDelay(true);
    s.setEncoding('latin1');
    s.on('error', () => {});
    if (!this.child) {
      s.destroy();
      return;
    }
    this.pinSock?.destroy();
    this.pinSock = s;
    s.on('close', () => {
      if (this.pinSock === s) this.pinSock = undefined;
    });
    this.flush();
  }

  private changed(pin: number, level: Level, atMs?: number): void {
    if (!this.child || this.watches.size === 0) return;
    const t = atMs ?? this.deps.clock.now();
    for (const [id, w] of this.watches) {
      if (w.pin !== pin) continue;
      // The interrupt samples the data pin at the edge (a quadrature encoder's B when A changes).
      const data = w.data < 0 ? 0 : this.deps.gpio.level(w.data) === 1 ? 4 : 2;
      this.qWatch.push(id);
      this.qTime.push(t);
      this.qCode.push(data + level);
    }
    if (!this.pushScheduled && this.qWatch.length > this.pushed) {
      // At most one push per PUSH_GAP_MS: every push costs the interpreter a socket read and a parse,
      // and while it moves the firmware's timers pull the edges anyway.
      this.pushScheduled = true;
      setTimeout(() => {
        this.pushScheduled = false;
        this.lastPush = Date.now();
        this.flush();
      }, Math.max(0, this.lastPush + PUSH_GAP_MS - Date.now()));
    }
  }

  /** Push the edges not pushed yet, as one batch line. */
  private flush(): void {
    if (!this.pinSock || this.pushed >= this.qWatch.length) return;
    const n = this.qWatch.length;
    this.pinSock.write(this.encode(this.pushed, n) + '\n');
    this.pushed = n;
    // Pushed edges stay queued until a pull says they arrived; without pulls (a firmware with
    // watches and no timers) keep only the last few thousand.
    if (this.pushed > MAX_PULL * 4) this.pull(this.seq0 + this.pushed - MAX_PULL, NaN);
  }

  /**
   * The shim's barrier before a firmware timer: it has dispatched every edge before sequence number
   * `next`; integrate the motion up to its time `t` (ms) and answer every edge from `next` that
   * happened by then (empty when none).
   */
  private pull(next: number, t: number): string {
    const drop = Math.min(Math.max(0, next - this.seq0), this.qWatch.length);
    if (drop > 0) {
      this.qWatch.splice(0, drop);
      this.qTime.splice(0, drop);
      this.qCode.splice(0, drop);
      this.seq0 += drop;
      this.pushed = Math.max(0, this.pushed - drop);
    }
    if (Number.isFinite(t)) this.deps.catchUp?.(Math.min(t, this.deps.clock.now()));
    let end = 0;
    while (end < this.qWatch.length && end < MAX_PULL && this.qTime[end]! <= t) end++;
    if (end === 0) return '';
    this.pushed = Math.max(this.pushed, end); // the shim has them once this answer is read
    return this.encode(0, end);
  }

  /** Queued edges [from, to) as the shim's batch: [seq, count, base ms, (-watch | dt µs·8 + data + state)...]. */
  private encode(from: number, to: number): string {
    let base = Infinity;
    for (let k = from; k < to; k++) base = Math.min(base, this.qTime[k]!);
    const parts: number[] = [this.seq0 + from, to - from, base];
    let id = -1;
    for (let k = from; k < to; k++) {
      if (this.qWatch[k] !== id) {
        id = this.qWatch[k]!;
        parts.push(-id);
      }
      // µs after base, kept under 2^28 so the shim's 32-bit bit operations decode it (a batch spans
      // well under a second; a later edge is clamped rather than wrapped).
      const dt = Math.min(Math.round((this.qTime[k]! - base) * 1000), 2 ** 28 - 1);
      parts.push(dt * 8 + this.qCode[k]!);
    }
    return JSON.stringify(parts);
  }

  private dropEdges(): void {
    this.seq0 = 0;
    this.qWatch = [];
    this.qTime = [];
    this.qCode = [];
    this.pushed = 0;
  }
}

/**
 * The Linux interpreter spins at full CPU once its stdin reaches EOF, so one left behind by a test
 * worker that died (timeout, crash) keeps a core busy for ever and starves every later run: it is
 * started under `setpriv --pdeathsig KILL`, which kills it when the Node thread that started it
 * exits, and every live one is SIGKILLed when this process exits normally.
 */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const live = new Set<ChildProcess>();
let exitHook = false;
function spawnInterpreter(bin: string, args: string[], o: { cwd: string; env?: NodeJS.ProcessEnv }, cgroup?: ChipCgroup): ChildProcess {
  let [cmd, argv] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', bin, ...args]] : [bin, args];
  // At chip speed the process joins its cgroup before it execs the interpreter: not one instruction unthrottled.
  if (cgroup) [cmd, argv] = cgroup.wrap(cmd, argv);
  const c = spawn(cmd, argv, { ...o, stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(c);
  c.on('exit', () => live.delete(c));
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const x of live) x.kill('SIGKILL');
    });
  }
  return c;
}

/** Read the firmware file for an install (the vm engine reads it at every boot instead). */
export function readFirmware(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`SimRig: cannot read the firmware file ${path}: ${(e as Error).message}`);
  }
}
