// Sending the firmware with EspruinoTools (the `espruino` package, 0.1.67), the tool the Espruino Web IDE
// and CLI are built on, with Save on Send "Direct to Flash": the code as
// `require("Storage").write(".bootcde", chunk, offset[, size])` lines of 1 KB (plugins/saveOnSend.js).
// Its own `reset()` before sending is off (RESET_BEFORE_SEND): it waits a fixed 250 ms after it, and a
// slow board was still resetting when the writes came (lost); the uploader resets the board itself and
// waits for it to answer before this runs (upload.ts, step 2).
//
// How it is driven here, and why:
// - It is loaded only when an upload runs (createRequire): `init()` sets process-wide globals (Espruino,
//   $, navigator, acorn, require) and loads es6-shim, which the rest of proofrig does not need.
// - Its console.log chatter (it logs every chunk it sends) is captured for --verbose; nothing secret goes
//   through it: the config with the device secret is written by our own console client.
// - Offline: on every connect it asks the board for process.env and then downloads the board's JSON from
//   espruino.com (firmware-update notices), and it downloads any module that `require()` names and the
//   board lacks. An upload must not depend on the internet, so its URL getters answer "not found".
// - LOAD_STORAGE_FILE = 0: it must not `load()` the new code yet; the uploader verifies the CRCs first,
//   registers the device and then reboots it. SET_TIME_ON_WRITE off (the firmware keeps its own clock).
// - Bluetooth (noble, node-ble) is switched off before it scans anything: headless machines have none.
// - Over TCP its per-chunk 250 ms delays are off (TCP has flow control); over serial they stay.
// - TCP goes through its own "Node Socket" device (tcp://HOST:PORT). A serial port goes through a device
//   of ours registered in Espruino.Core.Serial.devices (its documented extension point) over our
//   transport: its own serial device opens a port only if `serialport.list()` reports it (that needs
//   udev on Linux, absent in containers and on some systems) and it brings serialport 10 while the host
//   uses 13. EspruinoTools' line splitting, throttling and Save on Send apply either way.
import { createRequire } from 'node:module';
import { UploadError } from './errors.js';
import { describeTarget, open, type ConsoleTarget, type Transport } from './transport.js';

/** The port name EspruinoTools sees for our transport device. */
export const ADAPTER_PORT = 'proofrig-transport';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Tools = {
  init(cb: () => void): void;
  sendCode(port: string, code: string, cb: (response?: string) => void): void;
};

let tools: Tools | undefined;

function load(): Tools {
  if (tools) return tools;
  try {
    tools = createRequire(import.meta.url)('espruino') as Tools;
  } catch (e) {
    throw new UploadError('UPLOAD_FAILED', `the espruino package (EspruinoTools) cannot be loaded: ${(e as Error).message}. Run: npm install -w host espruino@0.1.67`);
  }
  return tools;
}

/** Run f with console.* captured into `sink` (EspruinoTools only reports through the console). */
async function captured<T>(sink: (line: string) => void, f: () => Promise<T>): Promise<T> {
  const c = console as unknown as Record<string, (...a: unknown[]) => void>;
  const saved: Record<string, (...a: unknown[]) => void> = {};
  for (const k of ['log', 'info', 'warn', 'error', 'debug']) {
    saved[k] = c[k];
    c[k] = (...args: unknown[]) => sink(args.map((a) => (typeof a === 'string' ? a : safeString(a))).join(' '));
  }
  try {
    return await f();
  } finally {
    for (const k of Object.keys(saved)) c[k] = saved[k];
  }
}

function safeString(a: unknown): string {
  try {
    return a instanceof Error ? a.message : JSON.stringify(a) ?? String(a);
  } catch {
    return String(a);
  }
}

let adapterOpen: (() => Promise<Transport>) | undefined;
let adapterInstalled = false;

/** Our transport as an EspruinoTools serial device (getPorts/open/write/close, data as ArrayBuffers). */
function installAdapter(E: any): void {
  if (adapterInstalled) return;
  adapterInstalled = true;
  let current: Transport | undefined;
  E.Core.Serial.devices.push({
    name: 'proofrig transport',
    getPorts: (cb: (ports: unknown[], instant: boolean) => void) =>
      cb(adapterOpen ? [{ path: ADAPTER_PORT, description: 'proofrig console transport', type: 'usb' }] : [], true),
    open: (_path: string, openCb: (info?: unknown) => void, receiveCb: (data: ArrayBuffer) => void, disconnectCb: () => void) => {
      if (!adapterOpen) return openCb(undefined);
      adapterOpen().then(
        (t) => {
          current = t;
          console.log(`proofrig transport: connected (${ADAPTER_PORT})`);
          t.onData((chunk) => receiveCb(Uint8Array.from(Buffer.from(chunk, 'latin1')).buffer));
          t.onClose(() => {
            if (current === t) current = undefined;
            disconnectCb();
          });
          openCb({ ok: true });
        },
        (e: Error) => {
          console.error(`Unable to connect: ${e.message}`);
          openCb(undefined);
        },
      );
    },
    write: (data: string, cb: () => void) => {
      if (!current) return cb();
      current.write(Buffer.from(data, 'latin1')).then(cb, (e: Error) => {
        console.error(`RECEIVE ERROR: write failed: ${e.message}`);
        cb();
      });
    },
    close: () => {
      void current?.close();
    },
  });
}

export interface SaveBootCodeOptions {
  target: ConsoleTarget;
  /** Send through our transport device even over TCP (tests use it to exercise the serial path). */
  viaTransport?: boolean;
  /** The file's bytes as a latin1 string (EspruinoTools passes char codes 0..255 through unchanged). */
  code: string;
  /** EspruinoTools' own log lines. */
  debug: (line: string) => void;
  /** Give up after this long (default: 30 s plus the time the chunk delays need). */
  timeoutMs?: number;
}

/** Write `code` to Storage `.bootcde` with EspruinoTools' Save on Send (the board already reset). Resolves to its warnings. */
export async function saveBootCode(o: SaveBootCodeOptions): Promise<string[]> {
  const t = load();
  const errors: string[] = [];
  const sink = (line: string) => {
    if (/^(ERROR|Unable|Prompt not detected|serial: Port .* not found|RECEIVE ERROR)/.test(line)) errors.push(line);
    o.debug(line);
  };
  const where = describeTarget(o.target);
  const viaTransport = o.viaTransport === true || o.target.kind === 'serial';
  const port = viaTransport ? ADAPTER_PORT : where;
  const chunks = Math.ceil(o.code.length / 1024);
  const timeoutMs = o.timeoutMs ?? 30000 + (o.target.kind === 'serial' ? chunks * 1000 : 0) + o.code.length / 5;
  return captured(sink, async () => {
    await new Promise<void>((r) => t.init(r));
    const E = (globalThis as any).Espruino;
    const offline = (url: string, cb: (x?: unknown) => void) => {
      o.debug(`(offline: not fetching ${url})`);
      setTimeout(() => cb(undefined), 0);
    };
    E.Core.Utils.getURL = offline;
    E.Core.Utils.getJSONURL = offline;
    E.Core.Utils.getBinaryURL = offline;
    Object.assign(E.Config, {
      BLUETOOTH_LOW_ENERGY: false,
      BLUETOOTH_LOW_ENERGY_DBUS: false,
      WEB_BLUETOOTH: false,
      SAVE_ON_SEND: 1,
      LOAD_STORAGE_FILE: 0,
      RESET_BEFORE_SEND: false,
      SET_TIME_ON_WRITE: false,
      MINIFICATION_LEVEL: '',
      MODULE_MINIFICATION_LEVEL: '',
      COMPILATION: false,
      PRETOKENISE: 0,
      ENV_ON_CONNECT: true,
      BAUD_RATE: o.target.kind === 'serial' ? o.target.baud : 115200,
      SERIAL_TCPIP: viaTransport ? [] : [where],
      STORAGE_UPLOAD_METHOD: o.target.kind === 'tcp' ? 1 : 0,
    });
    installAdapter(E);
    const target = o.target;
    adapterOpen = viaTransport ? () => open(target) : undefined;
    // Refresh its port table now, so a second upload in the same process finds the new address at once.
    await new Promise<void>((r) => E.Core.Serial.getPorts(() => r()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        try {
          E.Core.Serial.close();
        } catch {
          // already closed
        }
        reject(new UploadError('UPLOAD_FAILED', `EspruinoTools did not finish sending .bootcde to ${where} within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      t.sendCode(port, o.code, (response) => {
        clearTimeout(timer);
        if (response === undefined && errors.some((l) => /Unable to connect|not found/.test(l)))
          reject(new UploadError('NO_CONSOLE', `EspruinoTools could not connect to ${where}: ${errors.join('; ')}`));
        else resolve();
      });
    });
    return errors;
  });
}
