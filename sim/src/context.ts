// The firmware's vm context: a fresh realm per boot holding only Espruino's globals, bound to the rig.
import { createHash } from 'node:crypto';
import vm from 'node:vm';
import type { Boot } from './boot.js';
import { atobLatin1, btoaLatin1, bufferOf, bytesOf, crc32, latin1Of } from './bytes.js';
import { formatArgs, formatValue } from './format.js';
import { ESP32_PINS, isValidPin, PIN_MODES, type Gpio, type Level, type PinMode } from './gpio.js';
import type { SimNetwork } from './network.js';
import { createNetModule, type ConnectFn } from './net.js';
import { PRELUDE_SOURCE, type PreludeHelpers, type PreludeHost } from './prelude.js';
import { espruinoRand } from './prng.js';
import { Realm, type Intrinsics } from './realm.js';
import { SimStorage } from './storage.js';
import { BootWatches } from './watches.js';
import { createWifiModule } from './wifi.js';
import { estimateUsage } from './memory.js';
import { createI2c, type I2cPort } from './i2c-global.js';

export const ESPRUINO_VERSION = '2v25';
/** Default PWM frequency of the ESP32 port (LEDC). */
export const DEFAULT_PWM_HZ = 5000;
/** JsVars of an ESP32 Espruino with Wi-Fi up (process.memory().total): (free heap − 40 KB) / 14 bytes with ~208 KB free heap at start; at most 16,383. */
export const MEMORY_TOTAL = 12000;
const MEMORY_STALE_MS = 10_000;

/** What the rig lets one boot's globals reach. */
export interface ContextDeps {
  boot: Boot;
  gpio: Gpio;
  storage: SimStorage;
  network: SimNetwork;
  connect: ConnectFn;
  /** Length of the firmware source, for the process.memory() model. */
  sourceLength: number;
  /** Hardware reset requested by the firmware (E.reboot, watchdog). */
  reboot: (why: string) => void;
  /** The rig's I2C bus (its sensors); absent: nothing acknowledges. */
  i2c?: I2cPort;
  onWrite: (pin: number, level: Level) => void;
  onPulse: (pin: number, value: Level, times: number[]) => void;
  onPwm: (pin: number, duty: number, freq: number) => void;
}

function tag(v: unknown): string {
  return Object.prototype.toString.call(v).slice(8, -1);
}

export interface FirmwareContext {
  realm: Realm;
  /** The E object, for the rig to fire E's 'init' event after the firmware ran. */
  E: object;
}

/** Build the context for one boot. The firmware is evaluated into it afterwards by the rig. */
export function createFirmwareContext(deps: ContextDeps): FirmwareContext {
  const { boot, gpio, storage } = deps;
  const clock = boot.clock;
  const sandbox: Record<string, unknown> = {};
  const context = vm.createContext(sandbox, {
    name: `espruino boot ${boot.gen}`,
    codeGeneration: { strings: true, wasm: false },
  });
  const C = vm.runInContext('({ Object, Array, Error, TypeError, JSON, Uint8Array, ArrayBuffer })', context) as Intrinsics;

  // E.hwRand and Math.random share Espruino's C rand(), which restarts its fixed sequence at every boot.
  const rand = espruinoRand();
  let timeOffsetMs = 0;
  const nowMs = (): number => clock.now() + timeOffsetMs;

  const preludeHost: PreludeHost = {
    now: nowMs,
    random: () => rand() / 2147483648,
    defer: (fn) => boot.defer(() => boot.call(fn, undefined, [])),
    unhandled: (reason) => boot.print('Unhandled promise rejection: ' + formatValue(reason)),
    pins: ESP32_PINS,
    outputValue: (pin) => gpio.outputValue(pin),
  };
  const runPrelude = vm.runInContext(PRELUDE_SOURCE, context, { filename: 'espruino-prelude.js' }) as (
    host: PreludeHost,
  ) => PreludeHelpers;
  const helpers = runPrelude(preludeHost);
  const realm = new Realm(boot, C, helpers);
  boot.context = context;

  const define = (name: string, value: unknown): void => {
    Object.defineProperty(sandbox, name, { value, writable: true, configurable: true, enumerable: false });
  };
  const fn = realm.fn.bind(realm) as Realm['fn'];

  // ---- pins ------------------------------------------------------------------------------------
  const pinOf = (v: unknown, message = 'Invalid pin!'): number => {
    let n = NaN;
    if (typeof v === 'number') n = v;
    else if (typeof v === 'string') {
      const m = /^D([0-9]{1,2})$/.exec(v);
      if (m) n = Number(m[1]);
    } else if (typeof v === 'object' && v !== null) n = Number(v);
    if (!Number.isInteger(n) || !isValidPin(n)) throw realm.err(message);
    return n;
  };
  const bit = (v: unknown): Level => {
    const n = Math.trunc(Number(v));
    return n !== 0 && !Number.isNaN(n) ? 1 : 0;
  };
  const writeOne = (pin: number, level: Level): void => {
    gpio.write(pin, level);
    deps.onWrite(pin, level);
  };
  const busyUntil = new Map<number, number>();

  define(
    'digitalWrite',
    fn((pin: unknown, value: unknown) => {
      if (Array.isArray(pin)) {
        let v = Math.trunc(Number(value)) || 0;
        for (let i = pin.length - 1; i >= 0; i--) {
          writeOne(pinOf(pin[i]), (v & 1) as Level);
          v >>= 1;
        }
        return;
      }
      writeOne(pinOf(pin), bit(value));
    }),
  );
  define(
    'digitalRead',
    fn((pin: unknown) => {
      if (Array.isArray(pin)) {
        let v = 0;
        for (const p of pin) v = (v << 1) | gpio.read(pinOf(p));
        return v;
      }
      return gpio.read(pinOf(pin));
    }),
  );
  define(
    'pinMode',
    fn((pin: unknown, mode?: unknown, automatic?: unknown) => {
      const p = pinOf(pin, 'Invalid pin');
      if (mode === undefined || mode === 'auto') return gpio.setMode(p, undefined);
      if (typeof mode !== 'string' || PIN_MODES.indexOf(mode as PinMode) < 0) {
        gpio.setMode(p, undefined);
        throw realm.err('Unknown pin mode');
      }
      gpio.setMode(p, mode as PinMode, !!automatic);
    }),
  );
  define(
    'getPinMode',
    fn((pin: unknown) => gpio.getMode(pinOf(pin, 'Invalid pin'))),
  );
  define(
    'analogRead',
    fn((pin: unknown) => gpio.analogRead(pinOf(pin))),
  );
  define('I2C1', createI2c(realm, C, deps.i2c ?? { write: () => false, read: () => null }));
  define(
    'analogWrite',
    fn((pin: unknown, value: unknown, options?: unknown) => {
      const p = pinOf(pin);
      let freq = Number((options as { freq?: unknown } | undefined)?.freq);
      if (!(freq > 0)) freq = DEFAULT_PWM_HZ;
      const duty = Math.min(1, Math.max(0, Number(value) || 0));
      gpio.analogWrite(p, duty, freq);
      deps.onPwm(p, duty, freq);
    }),
  );
  define(
    'digitalPulse',
    fn((pin: unknown, value: unknown, time: unknown) => {
      const p = pinOf(pin);
      let times: number[];
      if (typeof time === 'number') {
        if (!(time >= 0)) throw realm.err('Pulse Time given for digitalPulse is less than 0, or not a number');
        if (time === 0) return; // "wait for the previous pulse": the simulator cannot block, it returns at once
        times = [time];
      } else if (Array.isArray(time) || (ArrayBuffer.isView(time) && tag(time) !== 'DataView')) {
        times = Array.prototype.map.call(time as ArrayLike<number>, Number) as number[];
      } else {
        throw realm.err(`Expecting a number or array, got ${typeof time}`);
      }
      const first: Level = value ? 1 : 0;
      gpio.autoOutput(p);
      let v = first;
      let at = Math.max(clock.now(), busyUntil.get(p) ?? 0);
      for (const t of times) {
        const level = v;
        if (t >= 0) {
          const start = at - clock.now();
          if (start <= 0) gpio.setOut(p, level);
          else boot.defer(() => gpio.setOut(p, level), start);
          at += t;
          boot.defer(() => gpio.setOut(p, (1 - level) as Level), at - clock.now());
        }
        v = (1 - v) as Level;
      }
      busyUntil.set(p, at);
      deps.onPulse(p, first, times);
    }),
  );

  const watches = new BootWatches(
    realm,
    gpio,
    (atMs) => (atMs === undefined ? nowMs() : atMs + timeOffsetMs) / 1000,
    (line) => boot.print(line),
  );
  define(
    'setWatch',
    fn((f: unknown, pin: unknown, options?: unknown) => {
      let p: number;
      try {
        p = pinOf(pin, 'Invalid pin');
      } catch {
        boot.print('ERROR: Invalid pin');
        return undefined;
      }
      // options.data: a pin sampled at every edge; Espruino ignores one that is not a valid pin.
      let dataPin: number | undefined;
      const data = typeof options === 'object' && options !== null ? (options as { data?: unknown }).data : undefined;
      if (data !== undefined) {
        try {
          dataPin = pinOf(data);
        } catch {
          dataPin = undefined;
        }
      }
      return watches.set(f, p, options, dataPin);
    }),
  );
  define(
    'clearWatch',
    fn((...args: unknown[]) => watches.clear(args)),
  );

  // ---- time ------------------------------------------------------------------------------------
  const checkCallback = (f: unknown): Function | string => {
    if (typeof f !== 'function' && typeof f !== 'string') throw realm.err('Function or String not supplied!');
    return f as Function | string;
  };
  define(
    'setTimeout',
    fn((f: unknown, ms?: unknown, ...args: unknown[]) => boot.timers.add(checkCallback(f), Number(ms), args, false)),
  );
  define(
    'setInterval',
    fn((f: unknown, ms?: unknown, ...args: unknown[]) => boot.timers.add(checkCallback(f), Number(ms), args, true)),
  );
  const clearer = (name: string) =>
    fn((...args: unknown[]) => {
      if (args.length === 0) return boot.timers.clearAll();
      if (args[0] === undefined) throw realm.err(`${name}(undefined) not allowed. Use ${name}() instead.`);
      boot.timers.clear(args[0]); // an unknown or stale id is ignored, as in Espruino since 2v01
    });
  define('clearTimeout', clearer('clearTimeout'));
  define('clearInterval', clearer('clearInterval'));
  define(
    'changeInterval',
    fn((id: unknown, ms: unknown) => {
      if (!boot.timers.change(id, Number(ms))) throw realm.err('Unknown Interval');
    }),
  );
  define(
    'getTime',
    fn(() => nowMs() / 1000),
  );
  define(
    'setTime',
    fn((t: unknown) => {
      timeOffsetMs = Number(t) * 1000 - clock.now();
    }),
  );

  // ---- console -----------------------------------------------------------------------------------
  const print = fn((...args: unknown[]) => boot.print(formatArgs(args)));
  define('print', print);
  define('console', realm.obj({ log: print, debug: print, info: print, warn: print, error: print, trace: print }));

  // ---- E, process, misc ------------------------------------------------------------------------
  let watchdog: { timeoutMs: number; due: number } | undefined;
  const armWatchdog = (): void => {
    if (!watchdog) return;
    const due = clock.now() + watchdog.timeoutMs;
    watchdog.due = due;
    boot.defer(() => {
      if (watchdog && watchdog.due === due) deps.reboot('watchdog');
    }, watchdog.timeoutMs);
  };
  const E = realm.obj({
    hwRand: fn(() => rand()),
    CRC32: fn((data: unknown) => crc32(bytesOf([data]))),
    toString: fn((...args: unknown[]) => latin1Of(args)),
    toUint8Array: fn((...args: unknown[]) => new C.Uint8Array(bytesOf(args))),
    toArrayBuffer: fn((s: unknown) => new C.Uint8Array(bytesOf([String(s)])).buffer),
    // Only the table form the firmware uses (a typed array or array as map, one element to one).
    mapInPlace: fn((from: unknown, to: unknown, map: unknown, bits?: unknown) => {
      if (bits !== undefined && bits !== 0) throw new Error('E.mapInPlace: bits is not simulated');
      const f = from as ArrayLike<number>;
      const t = to as { [i: number]: number; length: number };
      const m = map as ArrayLike<number> | undefined;
      for (let i = 0; i < f.length && i < t.length; i++) t[i] = m ? m[f[i]!]! : f[i]!;
    }),
    reboot: fn(() => deps.reboot('E.reboot()')),
    getErrorFlags: fn(() => realm.arr([])),
    enableWatchdog: fn((timeout: unknown, isAuto?: unknown) => {
      if (isAuto === false) {
        boot.stallLimitMs = undefined;
        watchdog = { timeoutMs: Math.max(1, Number(timeout) * 1000 || 1000), due: 0 };
        armWatchdog();
      } else {
        // Kicked by the idle loop: it fires when one callback runs longer than the timeout, which
        // the ESP32 port rounds to whole seconds (esp_task_wdt_init((int)(timeout+0.5))).
        watchdog = undefined;
        const t = Number(timeout);
        boot.stallLimitMs = Math.max(1, Math.round(t >= 0 ? t : 1)) * 1000;
        boot.onStall = (ms) => deps.reboot(`watchdog: the main loop stalled ${ms} ms (limit ${boot.stallLimitMs} ms)`);
      }
    }),
    kickWatchdog: fn(() => armWatchdog()),
  });
  define('E', E);

  let lastMemory: { at: number; usage: number } | undefined;
  const proc = realm.obj({
    version: ESPRUINO_VERSION,
    env: realm.obj({ BOARD: 'ESP32', VERSION: ESPRUINO_VERSION }),
    // memory(false) (no GC on Espruino) may answer the last estimate if it is under 10 s of clock
    // old: an estimate costs milliseconds of wall time and the firmware asks with every heartbeat.
    memory: fn((gc?: unknown) => {
      const now = clock.now();
      if (gc !== false || !lastMemory || now - lastMemory.at > MEMORY_STALE_MS) lastMemory = { at: now, usage: estimateUsage(deps.sourceLength, sandbox, boot.timers.held()) };
      const usage = Math.min(MEMORY_TOTAL, lastMemory.usage);
      return realm.obj({ free: MEMORY_TOTAL - usage, usage, total: MEMORY_TOTAL, history: 0, gc: 0, gctime: 0, blocksize: 14 });
    }),
  });
  define('process', proc);
  boot.uncaughtHandler = (e) => {
    if (helpers.count(proc, 'uncaughtException') === 0) return false;
    helpers.emit(proc, 'uncaughtException', [e]);
    return true;
  };

  define(
    'btoa',
    fn((s: unknown) => realm.rethrow(() => btoaLatin1(String(s)))),
  );
  define(
    'atob',
    fn((s: unknown) => atobLatin1(String(s))),
  );
  define(
    'getSerial',
    fn(() => '240ac4000001'),
  );

  // ---- require ---------------------------------------------------------------------------------
  const modules: Record<string, Record<string, unknown>> = {};
  const makers: Record<string, () => Record<string, unknown>> = {
    Storage: () => createStorageModule(realm, storage),
    net: () => createNetModule({ realm, network: deps.network, connect: deps.connect }),
    Wifi: () => createWifiModule(realm),
    // Espruino's native crypto (ESP32 and Linux builds): SHA256 of a byte string or bytes, as an ArrayBuffer of 32 bytes.
    crypto: () =>
      realm.obj({
        SHA256: fn((m: unknown) => {
          const d = createHash('sha256').update(bufferOf(m)).digest();
          return new C.Uint8Array(d).buffer;
        }),
      }),
  };
  define(
    'require',
    fn((name: unknown) => {
      const n = String(name);
      const make = Object.prototype.hasOwnProperty.call(makers, n) ? makers[n] : undefined;
      if (!make) throw realm.err(`Module ${n} not found`);
      return (modules[n] ??= make());
    }),
  );

  return { realm, E };
}

/** The firmware's require('Storage') over the rig's SimStorage. */
function createStorageModule(realm: Realm, storage: SimStorage): Record<string, unknown> {
  const C = realm.C;
  const fn = realm.fn.bind(realm) as Realm['fn'];
  const name = (n: unknown): string => String(n);
  const filter = (re: unknown): RegExp | string | undefined => {
    if (re === undefined || re === null) return undefined;
    if (tag(re) === 'RegExp') {
      const r = re as RegExp;
      return new RegExp(r.source, r.flags);
    }
    return String(re);
  };
  return realm.obj({
    read: fn((n: unknown, offset?: unknown, length?: unknown) =>
      realm.rethrow(() => storage.read(name(n), Number(offset) || 0, Number(length) || 0)),
    ),
    readJSON: fn((n: unknown, noExceptions?: unknown) =>
      realm.rethrow(() => {
        const s = storage.read(name(n));
        if (s === undefined) return undefined;
        try {
          return C.JSON.parse(s) as unknown;
        } catch (e) {
          if (noExceptions) return undefined;
          throw e;
        }
      }),
    ),
    readArrayBuffer: fn((n: unknown) =>
      realm.rethrow(() => {
        const b = storage.readBytes(name(n));
        return b ? new C.Uint8Array(b).buffer : undefined;
      }),
    ),
    write: fn((n: unknown, data: unknown, offset?: unknown, size?: unknown) =>
      realm.rethrow(() => {
        let off = Number(offset) || 0;
        let sz = Number(size) || 0;
        let d: string | number[];
        if (typeof data === 'string') d = data;
        else if (Array.isArray(data) || ArrayBuffer.isView(data) || tag(data) === 'ArrayBuffer') d = bytesOf([data]);
        else if (typeof data === 'object' && data !== null) {
          d = C.JSON.stringify(data);
          off = 0;
          sz = 0;
        } else d = String(data);
        return storage.write(name(n), d, off, sz);
      }),
    ),
    writeJSON: fn((n: unknown, data: unknown) =>
      realm.rethrow(() => storage.write(name(n), C.JSON.stringify(data) ?? 'undefined')),
    ),
    list: fn((re?: unknown) => realm.rethrow(() => realm.arr(storage.list(filter(re))))),
    erase: fn((n: unknown) => realm.rethrow(() => storage.erase(name(n)))),
    eraseAll: fn(() => storage.eraseAll()),
    getFree: fn(() => storage.getFree()),
    getStats: fn(() => realm.obj({ ...storage.getStats() })),
    compact: fn(() => storage.compact()),
  });
}
