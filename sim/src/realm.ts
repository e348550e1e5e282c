// The firmware's JavaScript realm seen from the host: making objects, errors and events that belong to it.
import type { Boot } from './boot.js';
import type { PreludeHelpers } from './prelude.js';

/** Constructors of the context's own realm (so `instanceof Error` etc. hold inside the firmware). */
export interface Intrinsics {
  Object: ObjectConstructor;
  Array: ArrayConstructor;
  Error: ErrorConstructor;
  TypeError: TypeErrorConstructor;
  JSON: JSON;
  Uint8Array: Uint8ArrayConstructor;
  ArrayBuffer: ArrayBufferConstructor;
}

export class Realm {
  constructor(
    readonly boot: Boot,
    readonly C: Intrinsics,
    readonly helpers: PreludeHelpers,
  ) {}

  /** A new plain object of the firmware's realm with the given own properties. */
  obj(props: Record<string, unknown> = {}): Record<string, unknown> {
    const o = new this.C.Object() as Record<string, unknown>;
    for (const k of Object.keys(props)) o[k] = props[k];
    return o;
  }

  /** An array of the firmware's realm. */
  arr(items: readonly unknown[]): unknown[] {
    const a = new this.C.Array() as unknown[];
    for (const x of items) a.push(x);
    return a;
  }

  /** Deep copy of JSON-able data into the firmware's realm. */
  clone<T>(v: T): T {
    return v === undefined ? v : (this.C.JSON.parse(JSON.stringify(v)) as T);
  }

  err(message: string, type: 'Error' | 'TypeError' = 'Error'): Error {
    return type === 'TypeError' ? new this.C.TypeError(message) : new this.C.Error(message);
  }

  /** Run a host function for the firmware; a host Error thrown inside becomes an Error of the realm. */
  rethrow<R>(f: () => R): R {
    try {
      return f();
    } catch (e) {
      // Host-realm errors (from SimStorage etc.) are re-made in the firmware's realm; its own pass through.
      if (e instanceof Error) throw this.err(e.message);
      throw e;
    }
  }

  /** Deliver an event to a firmware object through the boot's gate (dead boot: nothing happens). */
  emit(target: object, event: string, ...args: unknown[]): void {
    this.boot.call(this.helpers.emit, undefined, [target, event, args]);
  }

  /** Wrap a host function for the firmware (a no-op once the boot is dead). */
  fn<A extends unknown[], R>(f: (...args: A) => R): (...args: A) => R | undefined {
    return this.boot.guard(f);
  }
}
