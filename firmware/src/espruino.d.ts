// Ambient types for the Espruino globals the firmware uses that Node does not also declare
// (setTimeout, console, require, process and btoa: see firmware/types/espruino-std.d.ts).

/** Firmware version, replaced at build time from firmware/package.json. */
declare const __FW_VERSION__: string;
/** true in the MQTT build (dist/proofrig-mqtt.js: mqtt.ts stands in for ws.ts), false in the WebSocket one. */
declare const __LINK_MQTT__: boolean;

/** Seconds since power-on (float). */
declare function getTime(): number;
declare function digitalWrite(pin: number, value: number | boolean): void;
declare function digitalRead(pin: number | number[]): number | boolean;
declare function pinMode(pin: number, mode: 'output' | 'input' | 'input_pullup' | 'input_pulldown'): void;
/** PWM (on the ESP32: LEDC hardware, 10-bit duty; GPIO25/26 are DAC outputs instead). */
declare function analogWrite(pin: number, value: number, opts?: { freq?: number }): void;
/** What a watch callback receives: the new level, and with the `data` option the data pin's level at the edge. */
interface WatchEvent {
  state: boolean;
  time: number;
  lastTime?: number;
  data?: boolean;
}
interface WatchOptions {
  repeat?: boolean;
  edge?: 'rising' | 'falling' | 'both';
  debounce?: number;
  data?: number;
}
/** Watch id, or undefined when Espruino refused the pin (it only warns). */
declare function setWatch(fn: (e: WatchEvent) => void, pin: number, opts: WatchOptions): number | undefined;
declare function clearWatch(id: number): void;

declare var E: {
  /**
   * C rand() on Espruino (Linux and ESP32 alike): the same fixed sequence after every boot, so it
   * is never the only source of anything that must differ per boot or per device.
   */
  hwRand?: () => number;
  CRC32?: (data: string) => number;
  /** Bytes (ArrayBuffer, typed array, array) as a byte string. */
  toString(data: ArrayBuffer | Uint8Array): string;
  /** A byte string as bytes. */
  toUint8Array?: (s: string) => Uint8Array;
  /** An ArrayBuffer over the string's own bytes (Espruino: a reference, not a copy). */
  toArrayBuffer?: (s: string) => ArrayBuffer;
  /** Each element of `from` looked up in `map` and written to `to`, natively (one pass, no JavaScript per element). */
  mapInPlace?: (from: Uint8Array, to: Uint8Array, map: Uint8Array) => void;
  /** Reset the chip when the idle loop is not reached for `timeout` s (auto-kicked there unless isAuto is false). */
  enableWatchdog?: (timeout: number, isAuto?: boolean) => void;
};

type TimerId = ReturnType<typeof setTimeout>;

interface EspSocket {
  on(ev: 'data', fn: (bytes: string) => void): void;
  on(ev: 'close', fn: (hadError?: boolean) => void): void;
  on(ev: 'error', fn: (err: { code?: number; message?: string }) => void): void;
  on(ev: 'drain', fn: () => void): void;
  write(bytes: string): unknown;
  end(bytes?: string): void;
}
interface EspNet {
  connect(opts: { host: string; port: number }, onConnect: () => void): EspSocket;
}
interface EspStorage {
  readJSON(name: string, noExceptions?: boolean): unknown;
  /** true when written; Espruino may also throw (flash full or failing). */
  write(name: string, data: string): boolean;
}
interface EspWifi {
  connect(ssid: string, opts: { password: string }, cb: (err: unknown) => void): void;
}
interface EspProcess {
  /** gc false: skip the garbage collection Espruino runs first by default. */
  memory?: (gc?: boolean) => { free: number; usage: number; total: number };
}

/** The ADC: 0..1 of its range (on the ESP32 only ADC1 pins 32-39 while Wi-Fi runs). */
declare function analogRead(pin: number): number;
/** Espruino's first hardware I2C bus; writeTo/readFrom may throw when the device does not acknowledge. */
declare var I2C1: {
  setup(o: { sda: number; scl: number; bitrate?: number }): void;
  writeTo(address: number, data: number[]): void;
  readFrom(address: number, quantity: number): Uint8Array | undefined;
};
