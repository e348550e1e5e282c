// A mixed command load for memory measurements on a rig running the real interpreter, driven at the
// host core and at the protocol level (no MCP in the loop), and process.memory() readings taken
// with the rig idle. Used by test/espruino-memory.test.ts and by the memory figures
// (bench/src/espruino-memory.ts, and bench/src/run.ts's firmware part over a console port).
import { type ToDeviceFrame, type ToHostFrame } from '@proofrig/protocol';
import type { Running } from '@proofrig/host/tools';
import type { CommandStatus } from '@proofrig/host/core';
import { ConsoleClient, openTcp } from '@proofrig/host/tools';

export interface Mem {
  free: number;
  usage: number;
  total: number;
  blocksize?: number;
}

/** Frames that reached the device, by kind. */
export interface LoadTotals {
  /** Every command or query frame the device received. */
  frames: number;
  /** relay.set through the host core (journaled, executed, result racked). */
  relaySet: number;
  /** A command frame repeating the request_id (and action, args) of a completed relay.set: the ring replays it. */
  repeat: number;
  /** A command frame with invalid arguments or an unknown action (rejected by the device, nothing done), or no argument object (an `err`). */
  badArgs: number;
  /** A state query (`q`, as get_device_status refresh=true sends it). */
  stateRead: number;
  /** relay.set on an aux-contact channel whose contact the rig model closed late (failed NO_FEEDBACK). */
  noFeedback: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(f: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms`);
    await sleep(5);
  }
}

/** process.memory() of the rig's interpreter (one reading, Espruino collects garbage first). */
export async function memoryNow(running: Running, rig: string): Promise<Mem> {
  const esp = running.rigs.get(rig)?.espruino;
  if (!esp) throw new Error(`rig ${rig} does not run on the Espruino engine`);
  const m = (await esp.evaluate('process.memory()')) as Mem | undefined;
  if (!m || typeof m.usage !== 'number') throw new Error('no process.memory() answer from the interpreter');
  return m;
}

/**
 * The lowest of three readings, 150 ms apart, with nothing in flight: a frame caught in a socket
 * buffer at the moment of one reading is not a leak.
 */
export async function lowestReading(read: () => Promise<Mem>): Promise<Mem> {
  let best: Mem | undefined;
  for (let i = 0; i < 3; i++) {
    await sleep(150);
    const m = await read();
    if (!best || m.usage < best.usage) best = m;
  }
  return best!;
}

/** memoryReading of a rig this process runs on the Espruino engine (read through its pin shim). */
export function memoryReading(running: Running, rig: string): Promise<Mem> {
  return lowestReading(() => memoryNow(running, rig));
}

/**
 * memoryReading of an interpreter in another process, through its own JavaScript console on a TCP
 * port (the --telnet console `proofrig sim --engine espruino` serves, as an ESP32 serves telnet),
 * with the console client `proofrig upload --tcp` uses. The firmware is running: no Ctrl-C first
 * (ConsoleClient.sync): Espruino takes it as a break and could interrupt the next firmware callback;
 * a fresh connection's input line is empty anyway.
 */
export async function consoleMemoryReading(port: number, host = '127.0.0.1'): Promise<Mem> {
  const cc = new ConsoleClient(await openTcp(host, port, 5000));
  try {
    return await lowestReading(async () => {
      const m = await cc.evaluate<Mem>('process.memory()', 10000);
      if (!m || typeof m.usage !== 'number') throw new Error(`no process.memory() answer on the console at ${host}:${port}`);
      return m;
    });
  } finally {
    await cc.close().catch(() => {});
  }
}

type Waiter = { rid: string; resolve: (f: ToHostFrame) => void };

/**
 * Drive `relay.set` on every channel of a 4-channel relay rig (one lane per channel, each command
 * waiting for its verified result), and beside them a lane of raw frames through the authenticated
 * session: repeats of the last completed request_id, invalid arguments, an unknown action, a command
 * without arguments, and state queries. Every answer is checked as it arrives.
 */
export function mixedCommands(running: Running, rig: string, channels = [1, 2, 3, 4]) {
  const core = running.core;
  const waiters: Waiter[] = [];
  const orig = core.frame.bind(core);
  // Tap the device's frames after the host has handled them (journal, rack), to hear raw-frame answers.
  core.frame = (s, f) => {
    orig(s, f);
    const rid = f.t === 'res' || f.t === 'ack' ? f.rid : f.t === 'err' ? f.ref : f.t === 'state' ? f.q : undefined;
    if (f.t === 'ack') return;
    for (let i = 0; i < waiters.length; i++)
      if (waiters[i]!.rid === rid) {
        waiters.splice(i, 1)[0]!.resolve(f);
        break;
      }
  };
  const totals: LoadTotals = { frames: 0, relaySet: 0, repeat: 0, badArgs: 0, stateRead: 0, noFeedback: 0 };
  const on = new Map<number, boolean>();
  let lastDone: { rid: string; ch: number; on: boolean } | undefined;
  let raws = 0;
  const board = core.devices.board(rig);
  if (!board) throw new Error(`${rig} is not provisioned`);
  const relays = new Map(board.relays.map((r) => [r.ch, r.feedback.kind]));

  /** Send a frame through the authenticated session; resolves to the device's answer naming `key` (its rid, or a query's q). */
  const raw = async (f: ToDeviceFrame, key: string): Promise<ToHostFrame> => {
    const s = core.devices.session(rig);
    if (!s) throw new Error(`${rig} is offline`);
    const p = new Promise<ToHostFrame>((resolve, reject) => {
      const w: Waiter = { rid: key, resolve };
      waiters.push(w);
      setTimeout(() => {
        const i = waiters.indexOf(w);
        if (i >= 0) {
          waiters.splice(i, 1);
          reject(new Error(`no answer from the device to ${JSON.stringify(f)}`));
        }
      }, 15000);
    });
    s.send(f);
    return p;
  };

  const relay = async (ch: number): Promise<void> => {
    const want = !(on.get(ch) ?? false);
    const first: CommandStatus = await core.submit({ device_id: rig, action: 'relay.set', args: { ch, on: want } });
    if (first.state === 'rejected') throw new Error(`relay.set ch ${ch} rejected: ${first.detail}`);
    const final = await core.waitTerminal(first.command_id, 15000);
    const r = final && relays.get(ch);
    // Executed every time. A channel nothing observes ends unverified; one read back at the pin,
    // completed. An aux contact is the rig model's physics in Node, whose timing a loaded machine
    // can stretch past settle_ms: NO_FEEDBACK is then the firmware's honest verdict (counted).
    const ok =
      final?.executed === true &&
      (r === 'none' ? final.state === 'unverified' : final.state === 'completed' || (r === 'aux_contact' && final.state === 'failed' && final.error_code === 'NO_FEEDBACK'));
    if (!ok) throw new Error(`relay.set ch ${ch} ended ${JSON.stringify(final)}`);
    on.set(ch, want);
    if (final!.state === 'completed') lastDone = { rid: final!.request_id, ch, on: want };
    else if (final!.state === 'failed') totals.noFeedback++;
  };

  const side = async (k: number): Promise<void> => {
    const rid = `mem-raw-${++raws}`;
    switch (k % 6) {
      case 0:
      case 3: {
        if (!lastDone) return side(k + 1);
        const d = lastDone;
        const f = await raw({ t: 'cmd', rid: d.rid, a: 'relay.set', p: { ch: d.ch, on: d.on } }, d.rid);
        if (f.t !== 'res' || f.st !== 'completed') throw new Error(`a repeated request_id was not replayed: ${JSON.stringify(f)}`);
        totals.repeat++;
        return;
      }
      case 1: {
        const f = await raw({ t: 'cmd', rid, a: 'relay.set', p: k % 12 === 1 ? { ch: 9, on: true } : { ch: 1, on: 'yes' } }, rid);
        if (f.t !== 'res' || f.st !== 'rejected' || f.code !== 'INVALID_ARGS') throw new Error(`invalid arguments were not refused: ${JSON.stringify(f)}`);
        totals.badArgs++;
        return;
      }
      case 2: {
        // A state query as get_device_status refresh=true sends it (at the protocol level: the host's
        // own refresh gives up after about a second, which a loaded machine can exceed).
        const f = await raw({ t: 'q', q: rid }, rid);
        if (f.t !== 'state' || !Array.isArray(f.s.relays)) throw new Error(`state query not answered with the state: ${JSON.stringify(f)}`);
        totals.stateRead++;
        return;
      }
      case 4: {
        const f = await raw({ t: 'cmd', rid, a: 'relay.toggle' as 'relay.set', p: { ch: 1 } }, rid);
        if (f.t !== 'res' || f.st !== 'rejected' || f.code !== 'UNKNOWN_ACTION') throw new Error(`an unknown action was not refused: ${JSON.stringify(f)}`);
        totals.badArgs++;
        return;
      }
      default: {
        const f = await raw({ t: 'cmd', rid, a: 'relay.set', p: 5 as unknown as Record<string, unknown> }, rid);
        if (f.t !== 'err' || f.code !== 'MALFORMED_FRAME') throw new Error(`a command without arguments was not refused: ${JSON.stringify(f)}`);
        totals.badArgs++;
        return;
      }
    }
  };

  let sides = 0;
  return {
    totals: (): LoadTotals => ({ ...totals }),
    /**
     * A burst: `k` frames with invalid arguments sent at once beside one relay.set per channel, and
     * memory readings taken while they are in flight. Resolves to the highest reading.
     */
    async burst(k: number): Promise<Mem> {
      const frames: Promise<ToHostFrame>[] = [];
      for (let i = 0; i < k; i++) {
        const rid = `mem-burst-${++raws}`;
        frames.push(raw({ t: 'cmd', rid, a: 'relay.set', p: { ch: 9, on: true } }, rid));
      }
      let done = false;
      const all = Promise.all([...frames, ...channels.map((ch) => relay(ch))]).finally(() => (done = true));
      let peak: Mem | undefined;
      while (!done) {
        const m = await memoryNow(running, rig);
        if (!peak || m.usage > peak.usage) peak = m;
      }
      await all;
      await until(() => waiters.length === 0, 5000, 'burst answered');
      return peak ?? (await memoryNow(running, rig));
    },
    /**
     * Send `n` more frames: the relay lanes and the raw lane run side by side until n have been sent
     * and answered. With `peek`, a memory reading is taken every `peekEvery` frames while the load runs.
     */
    async run(n: number, o: { peek?: (m: Mem) => void; peekEvery?: number } = {}): Promise<LoadTotals> {
      const before = { ...totals };
      let sent = 0;
      const take = (): boolean => {
        if (sent >= n) return false;
        sent++;
        totals.frames++;
        return true;
      };
      const lane = async (fn: () => Promise<void>) => {
        while (take()) await fn();
      };
      let peeking = Promise.resolve();
      if (o.peek) {
        const peek = o.peek;
        const every = o.peekEvery ?? 25;
        peeking = (async () => {
          let next = every;
          while (sent < n) {
            if (sent >= next) {
              next += every;
              peek(await memoryNow(running, rig));
            } else await sleep(5);
          }
        })();
      }
      await Promise.all([
        ...channels.map((ch) =>
          lane(async () => {
            await relay(ch);
            totals.relaySet++;
          }),
        ),
        lane(() => side(sides++)),
        lane(() => side(sides++)),
      ]);
      await peeking;
      // Every answer is in and the host has racked every result (the ring holds no pending slot).
      await until(() => waiters.length === 0, 5000, 'raw frames answered');
      return {
        frames: totals.frames - before.frames,
        relaySet: totals.relaySet - before.relaySet,
        repeat: totals.repeat - before.repeat,
        badArgs: totals.badArgs - before.badArgs,
        stateRead: totals.stateRead - before.stateRead,
        noFeedback: totals.noFeedback - before.noFeedback,
      };
    },
  };
}

/** Drop the link `n` times (both ways; its TCP connection is reset) and wait for the rig to come back online each time. */
export async function reconnects(running: Running, rig: string, n: number): Promise<void> {
  const sim = running.rigs.get(rig)!;
  let online = 0;
  const seen = (e: { device_id: string; online: boolean }) => {
    if (e.device_id === rig && e.online) online++;
  };
  running.core.events.on('device', seen);
  try {
    for (let k = 0; k < n; k++) {
      const before = online;
      sim.linkDrop({ direction: 'both', ms: 1 });
      await until(() => online > before && running.core.devices.session(rig) !== undefined, 15000, `reconnect ${k + 1}`);
    }
  } finally {
    running.core.events.off('device', seen);
  }
}
