// SimRig: the simulated hardware. It boots the built firmware file in a fresh Espruino-like context
// and wires it to simulated pins, relays, flash Storage, Wi-Fi and real TCP sockets, with injectable
// faults, power loss and link outages. All time comes from the injected Clock.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { BoardDef } from '@proofrig/protocol';
import type { RigConfig } from '@proofrig/protocol';
import { BOOT_CODE_FILE, CONFIG_FILE } from '@proofrig/protocol';
import { realClock, type Clock, type TimerHandle } from '@proofrig/protocol/clock';
import { Boot } from './boot.js';
import { SAVED_STATE_FILE, SimConsole, type SimConsoleOptions } from './console.js';
import { createFirmwareContext } from './context.js';
import { resolveFault, type AxisFault, type AxisFaultSpec, type RelayFault } from './faults.js';
import { Gpio, isValidPin } from './gpio.js';
import { calibrate, chipSpeedUnavailable } from './chip-speed.js';
import { EspruinoEngine, espruinoBinary, readFirmware } from './espruino-engine.js';
import { DEFAULT_DROP_MS, SimNetwork, type DropDirection } from './network.js';
import { defaultConnect, type ConnectFn } from './net.js';
import { mulberry32, randomSeed, rngStreams, type Rng } from './prng.js';
import { RelayModel, type RelayState } from './relay-model.js';
import { SlideModel, type AxisState } from './slide-model.js';
import { SensorModels, type SensorFault } from './sensor-models.js';
import { PwmModels, type FanFault, type FanTruth, type ServoTruth } from './pwm-models.js';
import { SimStorage } from './storage.js';

export interface SimRigOptions {
  /**
   * File evaluated on every boot (read from disk at each boot). Without it the rig behaves like a chip
   * with Espruino only: each boot runs Storage `.bootcde` if present, else sits idle at the console.
   */
  firmwarePath?: string;
  /** If given, written to the simulated Storage as CONFIG_FILE (JSON) before the first boot. */
  config?: RigConfig;
  /** Default realClock. */
  clock?: Clock;
  /** Seeds the relays' actuation jitter and the slide's draws (default: random); the firmware's E.hwRand / Math.random are Espruino's fixed sequence. Same seed → same run on a VirtualClock. */
  seed?: number;
  /** Firmware console output, one line per call (default: discard). */
  console?: (line: string) => void;
  /** Default net.connect; lets tests inject. */
  connect?: (opts: { host: string; port: number }) => import('node:net').Socket;
  /**
   * Where the firmware runs: 'vm' (default, a node:vm context per boot) or 'espruino' (a real
   * Espruino interpreter process found through PROOFRIG_ESPRUINO, pins bound to this rig's model;
   * needs the real clock).
   */
  engine?: Engine;
  /** Espruino engine: the interpreter binary (default: PROOFRIG_ESPRUINO). */
  espruino?: string;
  /** Espruino engine: serve the interpreter's own console with --telnet on this loopback port. */
  telnetPort?: number;
  /**
   * Espruino engine: run the interpreter no faster than an ESP32 (a CPU quota on its process,
   * calibrated on this machine: chip-speed.ts). Throws, saying why, where a quota cannot be set.
   */
  chipSpeed?: boolean;
}

/** The two engines a rig's firmware can run on. */
export type Engine = 'vm' | 'espruino';
export const ENGINES: readonly Engine[] = ['vm', 'espruino'];

/** Power-off time of powerLoss() when none is given. */
export const DEFAULT_OFF_MS = 300;
/** Time from E.reboot() / a watchdog reset to the firmware running again. */
export const REBOOT_MS = 100;

export class SimRig extends EventEmitter {
  readonly storage: SimStorage;
  /** The seed this rig runs with (log it: a failing run replays with the same seed on a VirtualClock). */
  readonly seed: number;
  bootCount = 0;

  private readonly opts: SimRigOptions;
  private readonly clock: Clock;
  private readonly gpio = new Gpio();
  private readonly network: SimNetwork;
  private readonly connectFn: ConnectFn;
  private readonly physicsRng: Rng;
  private relays = new Map<number, RelayModel>();
  private faults = new Map<number, RelayFault>();
  private readonly slideRng: Rng;
  private slides = new Map<string, SlideModel>();
  private axisFaults = new Map<string, AxisFaultSpec>();
  private sensorModels: SensorModels | undefined;
  private readonly sensorRng: Rng;
  private pwmModels: PwmModels | undefined;
  private readonly pwmRng: Rng;
  private boardDef: BoardDef | undefined;
  private boardJson = '';
  private current: Boot | undefined;
  private pendingBoot: TimerHandle | undefined;
  private dead = false;
  private consoleServer: SimConsole | undefined;
  private estopPressed = false;
  private estopPin: number | undefined;
  private readonly esp: EspruinoEngine | undefined;

  constructor(opts: SimRigOptions) {
    super();
    if (!opts || (opts.firmwarePath !== undefined && typeof opts.firmwarePath !== 'string'))
      throw new Error('SimRig: options.firmwarePath must be a file path (or absent to boot from Storage .bootcde)');
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.seed = opts.seed === undefined ? randomSeed() : opts.seed >>> 0;
    const streams = rngStreams(this.seed);
    this.physicsRng = streams.physics;
    this.slideRng = streams.slide;
    this.sensorRng = mulberry32(this.seed ^ 0x5e4502);
    this.pwmRng = mulberry32(this.seed ^ 0x9a4f17);
    this.connectFn = opts.connect ?? defaultConnect;
    this.storage = new SimStorage();
    this.network = new SimNetwork(
      this.clock,
      (state) => this.safeEmit('link', state),
      (by, heldMs) => this.safeEmit('nagle', by, heldMs),
    );
    if (opts.config) this.storage.write(CONFIG_FILE, JSON.stringify(opts.config));
    const engine = opts.engine ?? 'vm';
    if (engine !== 'vm' && engine !== 'espruino') throw new Error(`SimRig: engine must be 'vm' or 'espruino', got ${String(engine)}`);
    if (opts.chipSpeed && engine !== 'espruino') throw new Error('SimRig: chip speed needs the Espruino engine');
    if (engine === 'espruino') {
      if (this.clock !== realClock) throw new Error('SimRig: the Espruino engine runs in real time; it cannot use a virtual clock');
      const binary = opts.espruino ?? espruinoBinary();
      const why = opts.chipSpeed ? chipSpeedUnavailable() : undefined;
      if (why) throw new Error(`SimRig: ${why}`);
      this.esp = new EspruinoEngine({
        binary,
        chipSpeed: opts.chipSpeed ? calibrate(binary) : undefined,
        gpio: this.gpio,
        clock: this.clock,
        network: this.network,
        i2c: this.i2cPort(),
        telnetPort: opts.telnetPort,
        print: (text) => this.printLines(text),
        onWrite: (pin, level) => this.safeEmit('write', pin, level),
        onPulse: (pin, value, times) => this.safeEmit('pulse', pin, value, times),
        onPwm: (pin, duty, freq) => this.safeEmit('pwm', pin, duty, freq),
        // What the interpreter's Storage holds is the board (an upload through its console writes it there).
        onBoard: (board) => {
          const cfg = this.storage.readJSON(CONFIG_FILE, true);
          if (board) this.storage.writeJSON(CONFIG_FILE, { ...(typeof cfg === 'object' && cfg ? cfg : {}), board });
          else this.storage.erase(CONFIG_FILE);
          this.loadBoard();
          this.updateRelays();
        },
        catchUp: (t) => {
          for (const s of this.slides.values()) s.catchUp(t);
          this.pwmModels?.catchUp(t);
        },
      });
    }
    this.loadBoard();
  }

  /** The engine the firmware runs on. */
  get engine(): Engine {
    return this.esp ? 'espruino' : 'vm';
  }

  /** The Espruino engine's process side (its folder, evaluate()), or undefined on the vm engine. */
  get espruino(): EspruinoEngine | undefined {
    return this.esp;
  }

  /** The board of the stored config (read again at every boot). */
  get board(): BoardDef | undefined {
    return this.boardDef;
  }

  /** True while a boot of the firmware is running. */
  get running(): boolean {
    if (this.esp) return this.esp.alive;
    return this.current !== undefined && this.current.live;
  }

  // ---- power -------------------------------------------------------------------------------------

  /**
   * Power on: a fresh vm context evaluates the firmware file (or, without firmwarePath, Storage `.bootcde`
   * when present). `runBootCode: false` is Espruino's reset(): a fresh context that runs nothing. Emits 'boot'.
   */
  boot(runBootCode = true): void {
    if (this.dead) throw new Error('SimRig: shut down; create a new rig');
    if (this.esp) return this.bootEspruino();
    let source = '';
    const file = this.opts.firmwarePath;
    if (file !== undefined && runBootCode) {
      try {
        source = readFileSync(file, 'utf8');
      } catch (e) {
        throw new Error(`SimRig: cannot read the firmware file ${file}: ${(e as Error).message}`);
      }
    } else if (runBootCode) {
      // What save() kept (the console's stand-in for a RAM image), then the boot code, as Espruino boots.
      const saved = this.storage.read(SAVED_STATE_FILE);
      const code = this.storage.read(BOOT_CODE_FILE);
      source = [saved, code].filter((x) => x !== undefined).join('\n');
    }
    const gen = this.powerOn();
    const scriptName = file !== undefined ? basename(file) : BOOT_CODE_FILE;
    const boot = new Boot({
      gen,
      clock: this.clock,
      isCurrent: (g) => !this.dead && this.current !== undefined && this.current.gen === g,
      print: (text) => this.printLines(text),
      scriptName,
    });
    this.current = boot;
    const fw = createFirmwareContext({
      boot,
      gpio: this.gpio,
      storage: this.storage,
      network: this.network,
      connect: this.connectFn,
      sourceLength: source.length,
      reboot: (why) => this.hardReset(boot, why),
      i2c: this.i2cPort(),
      onWrite: (pin, level) => this.safeEmit('write', pin, level),
      onPulse: (pin, value, times) => this.safeEmit('pulse', pin, value, times),
      onPwm: (pin, duty, freq) => this.safeEmit('pwm', pin, duty, freq),
    });
    this.safeEmit('boot', gen);
    if (source) boot.evalString(source, file ?? BOOT_CODE_FILE);
    fw.realm.emit(fw.E, 'init'); // Espruino fires E.on('init') once the boot code has run
  }

  /** What every boot does first, on either engine: the old boot gone, the board loaded, power on; returns the boot's generation. */
  private powerOn(): number {
    this.cancelPendingBoot();
    this.teardown();
    this.loadBoard();
    this.gpio.setPowered(true);
    this.updateRelays();
    return ++this.bootCount;
  }

  /** Power on the Espruino engine: a new interpreter process that boots from its Storage. */
  private bootEspruino(): void {
    const esp = this.esp!;
    const gen = this.powerOn();
    const firmware = esp.starts === 0 ? readFirmware(this.opts.firmwarePath) : undefined;
    esp.start(this.opts.config, firmware).catch((e: Error) => this.printLines(e.message));
    this.safeEmit('boot', gen);
  }

  /** Espruino's reset(): stop everything running; a fresh empty context; Storage is kept. */
  reset(): void {
    this.cancelPendingBoot();
    this.boot(false);
  }

  /** Espruino's load(): a soft reboot that runs the boot code again (no power cycle). */
  load(): void {
    this.cancelPendingBoot();
    this.boot(true);
  }

  /** The live boot's vm context (what the console evaluates in), or undefined while the chip is off. */
  get context(): import('node:vm').Context | undefined {
    return this.current !== undefined && this.current.live ? this.current.context : undefined;
  }

  /**
   * Serve the Espruino JavaScript console on a loopback TCP port (as an ESP32 does over telnet), for
   * EspruinoTools' `tcp://HOST:PORT` and `proofrig upload --tcp`. Resolves to the port (0 = any free one).
   */
  async serveConsole(port = 0, options: SimConsoleOptions = {}): Promise<number> {
    if (this.dead) throw new Error('SimRig: shut down; create a new rig');
    if (this.esp) throw new Error('SimRig: on the Espruino engine the interpreter serves its own console (option telnetPort)');
    if (this.consoleServer) throw new Error(`SimRig: the console is already served on port ${this.consoleServer.port}`);
    this.consoleServer = new SimConsole(this, options);
    return this.consoleServer.listen(port);
  }

  /**
   * Power cut now; everything of the running boot stops dead; boots again after offMs. Emits 'powerloss'. With
   * loseLastStorageWrite the cut came before flash finished the last Storage write: that file reads as before it.
   * Every boot's E.hwRand/Math.random replay Espruino's fixed C rand() sequence, as on the chip.
   */
  powerLoss(offMs: number = DEFAULT_OFF_MS, opts: { loseLastStorageWrite?: boolean } = {}): void {
    if (this.dead) return;
    this.cancelPendingBoot();
    this.teardown();
    if (opts.loseLastStorageWrite) this.storage.loseLastWrite();
    this.gpio.setPowered(false);
    this.updateRelays();
    this.safeEmit('powerloss');
    this.pendingBoot = this.clock.setTimeout(() => {
      this.pendingBoot = undefined;
      this.bootLater();
    }, Math.max(0, Number(offMs) || 0));
  }

  /** Stop for good: the same teardown as a power cut, no reboot. Idempotent. */
  shutdown(): void {
    if (this.dead) return;
    void this.consoleServer?.close();
    this.consoleServer = undefined;
    this.cancelPendingBoot();
    this.teardown();
    this.dead = true;
    this.gpio.setPowered(false);
    this.updateRelays();
    for (const r of this.relays.values()) r.dispose();
    this.relays.clear();
    for (const s of this.slides.values()) s.dispose();
    this.slides.clear();
    this.esp?.dispose();
    this.network.dispose();
  }

  // ---- faults --------------------------------------------------------------------------------------

  /**
   * Inject (or clear, with null) a fault on a relay ('relay1'..'relayN'), an axis ('x'), a sensor or a fan (its id).
   * `where` is parseFault's text after "@": setFault('x', 'stall', '80') puts an obstruction at 80 mm,
   * setFault('x', 'missed_steps', '5%') loses 5 % of the steps; relay faults take none. One fault per
   * part: a new one replaces the old. Throws for an unknown part, fault or WHERE, naming what exists.
   */
  setFault(part: string, fault: RelayFault | AxisFault | SensorFault | FanFault | null, where?: string): void {
    let r;
    try {
      r = resolveFault(this.boardDef, part, fault, where);
    } catch (e) {
      throw new Error(`setFault: ${(e as Error).message}`);
    }
    if (r.kind === 'sensor') return this.setSensorFault(r.id, r.fault);
    if (r.kind === 'fan') return this.pwmModels!.setFault(r.id, r.fault);
    if (r.kind === 'relay') {
      if (r.fault === null) this.faults.delete(r.ch);
      else this.faults.set(r.ch, r.fault);
      this.relays.get(r.ch)?.setFault(r.fault);
      return;
    }
    if (r.spec === null) this.axisFaults.delete(r.axis);
    else this.axisFaults.set(r.axis, r.spec);
    this.slides.get(r.axis)?.setFault(r.spec);
  }

  /**
   * Inject (or clear, with null) a fault on a sensor of the board by its id: 'unplugged', 'stuck',
   * 'crc', 'slow' or 'noisy' (sensor-models.ts). Kept across reboots. Throws for an unknown sensor.
   */
  setSensorFault(id: string, fault: SensorFault | null): void {
    if (!this.sensorModels) throw new Error(`setSensorFault: board ${this.boardDef?.id ?? '(none)'} has no sensors`);
    this.sensorModels.setFault(id, fault);
  }

  /** The rig's sensors (what they measure: setValue), or undefined on a board without any. */
  get sensors(): SensorModels | undefined {
    return this.sensorModels;
  }

  /** The physical truth of a fan (its rotor's rpm, the duty on its pin, tach pulses made, its fault). */
  fan(id: string): FanTruth {
    if (!this.pwmModels) throw new Error(`fan("${id}"): board ${this.boardDef?.id ?? '(none)'} has no PWM outputs`);
    return this.pwmModels.fan(id);
  }

  /** The physical truth of a servo (where the horn is, where its pulse sends it). */
  servo(id: string): ServoTruth {
    if (!this.pwmModels) throw new Error(`servo("${id}"): board ${this.boardDef?.id ?? '(none)'} has no PWM outputs`);
    return this.pwmModels.servo(id);
  }

  /** What the engines' I2C1 reaches: the sensors of the board loaded now. */
  private i2cPort(): { write(addr: number, bytes: number[]): boolean; read(addr: number, n: number): number[] | null } {
    return {
      write: (addr, bytes) => !!this.sensorModels && this.sensorModels.i2cWrite(addr, bytes),
      read: (addr, n) => (this.sensorModels ? this.sensorModels.i2cRead(addr, n) : null),
    };
  }

  /**
   * Press (true) or release (false) the board's e-stop: the input reads its active level while
   * pressed, its inactive level when released. Kept across reboots, like a mushroom button.
   */
  estop(pressed: boolean): void {
    if (this.estopPin === undefined) throw new Error(`estop: board ${this.boardDef?.id ?? '(none)'} has no e-stop input`);
    this.estopPressed = !!pressed;
    this.gpio.refresh(this.estopPin);
  }

  /**
   * A stalled main loop: a busy loop of `ms` inside the firmware's context, entered like any
   * callback (the auto watchdog of E.enableWatchdog sees it). Needs the real clock: a virtual clock
   * stands still inside a callback, so the loop would never end.
   */
  hang(ms: number): void {
    if (this.clock !== realClock) throw new Error('hang: needs the real clock (a virtual clock stands still inside the loop)');
    if (!this.current?.live) throw new Error('hang: the firmware is not running');
    this.current.evalString(`(function(){var t=getTime();while(getTime()-t<${Number(ms) / 1000}){}})()`, 'hang');
  }

  /** The network swallows bytes for `ms` (default 1500); new connections fail with -9 meanwhile. */
  linkDrop(opts: { direction?: DropDirection; ms?: number } = {}): void {
    if (this.dead) return;
    this.network.drop(opts.direction ?? 'both', opts.ms ?? DEFAULT_DROP_MS);
  }

  // ---- observation ---------------------------------------------------------------------------------

  /** The electrical level of a GPIO right now. */
  pinLevel(gpio: number): 0 | 1 {
    return this.gpio.level(this.checkPin(gpio));
  }

  /** digitalWrite calls to that pin since construction (all boots). */
  writes(gpio: number): number {
    return this.gpio.writes(this.checkPin(gpio));
  }

  relay(ch: number): RelayState {
    const r = this.relays.get(ch);
    if (!r) throw new Error(`relay(${ch}): no such channel on this rig`);
    return r.state();
  }

  /** The physical truth of an axis (true position, driver state, switches), as of the last physics tick. */
  axis(name: string): AxisState {
    const s = this.slides.get(name);
    if (!s) {
      const known = [...this.slides.keys()];
      throw new Error(`axis("${name}"): no such axis on this rig; axes: ${known.length ? known.join(', ') : 'none'}`);
    }
    return s.state();
  }

  /** The pin model (modes, PWM, listeners) for tools that need more than pinLevel. */
  get pins(): Gpio {
    return this.gpio;
  }

  // ---- internals -----------------------------------------------------------------------------------

  private checkPin(n: number): number {
    if (!Number.isInteger(n) || !isValidPin(n)) throw new Error(`GPIO${String(n)} does not exist on an ESP32`);
    return n;
  }

  private bootLater(): void {
    if (this.dead) return;
    try {
      this.boot();
    } catch (e) {
      this.printLines(`sim: boot failed: ${(e as Error).message}`);
    }
  }

  /** E.reboot() or a watchdog: the chip resets (pins float) and runs the firmware again shortly. */
  private hardReset(boot: Boot, why: string): void {
    if (!boot.live) return;
    this.printLines(`sim: ${why}: rebooting`);
    this.teardown();
    this.gpio.setPowered(true);
    this.updateRelays();
    this.cancelPendingBoot();
    this.pendingBoot = this.clock.setTimeout(() => {
      this.pendingBoot = undefined;
      this.bootLater();
    }, REBOOT_MS);
  }

  private teardown(): void {
    this.esp?.kill();
    const b = this.current;
    this.current = undefined;
    b?.kill();
  }

  private cancelPendingBoot(): void {
    if (this.pendingBoot !== undefined) this.clock.clearTimeout(this.pendingBoot);
    this.pendingBoot = undefined;
  }

  /** Read the board of the stored config; rebuild the relay models when it changed. */
  private loadBoard(): void {
    let board: BoardDef | undefined;
    try {
      const cfg = this.storage.readJSON(CONFIG_FILE, true) as Partial<RigConfig> | undefined;
      if (cfg && typeof cfg.board === 'object' && cfg.board !== null && Array.isArray(cfg.board.relays)) board = cfg.board;
    } catch {
      board = undefined;
    }
    const json = board ? JSON.stringify(board) : '';
    if (json === this.boardJson) return;
    for (const r of this.relays.values()) r.dispose();
    this.relays.clear();
    // The carriages do not move when the board is re-read: their mechanics carry over by axis name.
    const carried = new Map<string, { p: number; steps: number }>();
    for (const s of this.slides.values()) {
      carried.set(s.axis, s.mechanics());
      s.dispose();
    }
    this.slides.clear();
    const sensorCarry = this.sensorModels?.carry();
    this.sensorModels?.dispose();
    this.sensorModels = undefined;
    const pwmCarry = this.pwmModels?.carry();
    this.pwmModels?.dispose();
    this.pwmModels = undefined;
    this.boardJson = json;
    this.boardDef = board;
    if (this.estopPin !== undefined) this.gpio.detach(this.estopPin);
    this.estopPin = undefined;
    if (!board) return;
    if (board.estop) {
      const sw = board.estop;
      const activeLevel = sw.active_low ? 0 : 1;
      this.estopPin = sw.pin;
      this.gpio.attach(sw.pin, { drive: () => (this.estopPressed ? activeLevel : ((1 - activeLevel) as 0 | 1)) });
    }
    for (const def of board.relays) {
      const model = new RelayModel(def, this.gpio, this.clock, this.physicsRng, (ch, closed) => {
        this.sensorModels?.contact(ch, closed);
        this.safeEmit('contact', ch, closed);
      });
      const f = this.faults.get(def.ch);
      if (f) model.setFault(f);
      this.relays.set(def.ch, model);
    }
    if (board.sensors?.length) {
      const closed = (ch: number) => this.relays.get(ch)?.state().contactClosed ?? false;
      const openLoad = (ch: number) => this.faults.get(ch) === 'open_load';
      this.sensorModels = new SensorModels(board, this.gpio, this.clock, this.sensorRng, closed, sensorCarry?.faults, sensorCarry?.values, openLoad, sensorCarry?.loads);
      this.sensorModels.observer = (id, good, amps) => this.safeEmit('sensor', id, good, amps);
    }
    if (board.pwm?.length) this.pwmModels = new PwmModels(board, this.gpio, this.clock, this.pwmRng, pwmCarry);
    for (const def of board.steppers ?? []) {
      const motion = (what: 'start' | 'stop', axis: string): void => this.safeEmit('motion', what, axis);
      const model = new SlideModel(def, this.gpio, this.clock, this.slideRng, motion, carried.get(def.axis));
      const f = this.axisFaults.get(def.axis);
      if (f) model.setFault(f);
      this.slides.set(def.axis, model);
    }
  }

  private updateRelays(): void {
    for (const r of this.relays.values()) r.update();
  }

  private printLines(text: string): void {
    for (const line of text.split('\n')) {
      try {
        this.opts.console?.(line);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
      this.safeEmit('console', line);
    }
  }

  /** Emit to Node-side listeners; a throwing listener must not surface inside the firmware. */
  private safeEmit(event: string, ...args: unknown[]): void {
    try {
      this.emit(event, ...args);
    } catch (e) {
      queueMicrotask(() => {
        throw e;
      });
    }
  }
}
