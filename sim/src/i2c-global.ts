// The vm engine's I2C1: Espruino's first hardware I2C bus, bound to the rig's sensors
// (sensor-models.ts). A device that does not acknowledge makes writeTo/readFrom throw, as the
// ESP32 port reports an I2C error; the Espruino engine's shim (espruino-shim.ts) does the same.
import type { Intrinsics, Realm } from './realm.js';

/** What an I2C bus of the rig answers: false / null when nothing acknowledged. */
export interface I2cPort {
  write(addr: number, bytes: number[]): boolean;
  read(addr: number, n: number): number[] | null;
}

function bytesOf(args: unknown[]): number[] {
  const out: number[] = [];
  const add = (x: unknown): void => {
    if (typeof x === 'number') out.push(x & 0xff);
    else if (typeof x === 'string') for (let i = 0; i < x.length; i++) out.push(x.charCodeAt(i) & 0xff);
    else if (x !== null && typeof x === 'object' && typeof (x as ArrayLike<unknown>).length === 'number')
      for (const v of Array.prototype.slice.call(x as ArrayLike<unknown>)) add(v);
  };
  for (const a of args) add(a);
  return out;
}

function addressOf(a: unknown): number {
  return typeof a === 'object' && a !== null ? Number((a as { address?: unknown }).address) : Number(a);
}

/** The I2C1 object for one boot's realm. */
export function createI2c(realm: Realm, C: Intrinsics, port: I2cPort): object {
  const o = new C.Object() as Record<string, unknown>;
  let setUp = false;
  o.setup = realm.fn((opts?: unknown) => {
    if (opts !== undefined && (typeof opts !== 'object' || opts === null)) throw realm.err('Expecting an object for I2C setup options');
    setUp = true;
  });
  o.writeTo = realm.fn((addr: unknown, ...data: unknown[]) => {
    if (!setUp) throw realm.err('I2C device not set up');
    const a = addressOf(addr);
    if (!port.write(a, bytesOf(data))) throw realm.err(`I2C: no ACK from address 0x${a.toString(16)}`);
  });
  o.readFrom = realm.fn((addr: unknown, quantity: unknown) => {
    if (!setUp) throw realm.err('I2C device not set up');
    const a = addressOf(addr);
    const d = port.read(a, Number(quantity) | 0);
    if (!d) throw realm.err(`I2C: no ACK from address 0x${a.toString(16)}`);
    return new C.Uint8Array(d);
  });
  return o;
}
