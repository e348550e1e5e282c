// One chaos run: the real host core (journal on a SQLite file), D simulated rigs running the built
// firmware, agent clients and a fault schedule, all on one VirtualClock and drawn from one seed.
// Returns the event trace, the faults injected and what the invariants (invariants.ts) found.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BoardDef } from '@proofrig/protocol';
import { isTerminal } from '@proofrig/protocol';
import { VirtualClock, type Clock, type TimerHandle } from '@proofrig/protocol/clock';
import { Fabric, FAN_FAULTS, SimRig, type FabricEvent, type FabricFaults } from '@proofrig/sim';
import type { Link } from '@proofrig/protocol';
import { mulberry32 } from '@proofrig/sim/prng';
import { HostCore, Journal, type CommandStatus } from '@proofrig/host/core';
import { Checker, type Violation } from './invariants.js';

const ROOT = new URL('../../', import.meta.url).pathname;
export const FIRMWARE = join(ROOT, 'firmware/dist/proofrig.js');
// The climate rig (sensors, a relay proven by its load current) is the third device: --devices 3.
const BOARDS: BoardDef[] = ['boards/relay-rig-4ch.json', 'boards/stepper-rig.json', 'boards/climate-rig.json'].map((f) => JSON.parse(readFileSync(join(ROOT, f), 'utf8')));
/** Sensor faults chaos injects; crc only where the data has a checksum (SHT3x). */
const SENSOR_CHAOS = ['unplugged', 'stuck', 'crc', 'slow', 'noisy'] as const;

export interface ChaosOptions {
  seed: number;
  devices: number;
  minutes: number;
  /** Keep the whole event trace (replay tests compare it). */
  trace?: boolean;
  /**
   * Nastier host crashes: also between a device frame's journal writes and their group commit, and a
   * crash never commits what was pending (the default closes the journal cleanly, which commits it).
   */
  nastier?: boolean;
}

export interface RunResult {
  seed: number;
  simMs: number;
  commands: number;
  faults: Record<string, number>;
  checks: number;
  violations: Violation[];
  trace: string[];
  /** Wall-clock ms the run took. */
  wallMs: number;
}

const HEARTBEAT_MS = 1000;
const SETTLE_MS = 120_000;
const STEP_MS = 50;

/** Thrown from inside the host to kill it where it stands; nothing after it reaches the journal. */
export class HostCrash extends Error {}

/** A Clock whose timers die with the host incarnation that set them. */
function scopedClock(base: Clock): Clock & { kill(): void } {
  let alive = true;
  return {
    now: () => base.now(),
    setTimeout: (fn, ms) => base.setTimeout(() => alive && fn(), ms),
    clearTimeout: (h) => base.clearTimeout(h),
    kill: () => (alive = false),
  };
}

export async function runChaos(o: ChaosOptions): Promise<RunResult> {
  const wall = Date.now();
  const clock = new VirtualClock(1_000_000);
  const seed = o.seed >>> 0;
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const faults: Record<string, number> = {};
  const count = (k: string) => (faults[k] = (faults[k] ?? 0) + 1);
  const trace: string[] = [];
  const note = (s: string) => {
    if (o.trace) trace.push(`${clock.now()} ${s}`);
  };
  // tmpfs when there is one: a real SQLite file whose fsyncs cost nothing, so runs stay fast.
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'proofrig-chaos-'));
  const db = join(dir, 'journal.db');

  // Per-seed network weather.
  const fx: FabricFaults = {
    drop: rnd() < 0.5 ? rnd() * 0.03 : 0,
    duplicate: rnd() < 0.5 ? rnd() * 0.03 : 0,
    delay: rnd() < 0.5 ? rnd() * 0.08 : 0,
    delayMaxMs: Math.floor(rnd() * 3000),
    reorder: rnd() < 0.5 ? rnd() * 0.05 : 0,
    latencyMs: [1, 1 + Math.floor(rnd() * 30)],
    // Device CPU from a PC's (nothing) to a chip's (a relay command's frames cost tens to hundreds of ms).
    deviceCpuMs: rnd() < 0.5 ? [0, 0] : [0, Math.floor(rnd() * 400)],
  };
  // The speed of the chip is not weather: it stays while the network calms down.
  const calm: FabricFaults = { drop: 0, duplicate: 0, delay: 0, delayMaxMs: 0, reorder: 0, latencyMs: fx.latencyMs, deviceCpuMs: fx.deviceCpuMs };
  // The host's disk: every journal fsync takes up to this long (0: a fast disk; seconds: an SD card under load).
  const fsyncMaxMs = rnd() < 0.5 ? 0 : Math.floor(rnd() * (rnd() < 0.3 ? 3000 : 500));
  const disk = mulberry32(seed ^ 0x5bd1e995);
  /** Devices whose link misbehaves on cmd frames until a time: cut right after each, or drop each. */
  const cmdFaults = new Map<string, { kind: 'cut' | 'drop'; until: number }>();

  let host: HostCore | undefined;
  let hostClock: ReturnType<typeof scopedClock> | undefined;
  let crashArmed = 0;
  /** Crashes armed to strike between a device frame's journal writes and their group commit. */
  let commitCrashArmed = 0;
  const rigs: { dev: string; board: BoardDef; rig: SimRig; secret: string }[] = [];
  const checker = new Checker(clock, (dev) => rigs.find((r) => r.dev === dev)!.rig, () => host);

  const fabric: Fabric = new Fabric({
    clock,
    rng: mulberry32(seed ^ 0x9e3779b9),
    faults: fx,
    observe: (e: FabricEvent) => {
      if (e.kind === 'drop' || e.kind === 'duplicate' || e.kind === 'delay' || e.kind === 'reorder') count('frame_' + e.kind);
      if (e.kind === 'send' || e.kind === 'deliver' || e.kind === 'delivered') checker.frame(e.kind, e.dev, e.dir, e.text);
      if (o.trace && e.kind !== 'delivered') note(`net ${e.kind} ${e.dev}#${e.conn}${'dir' in e ? ' ' + e.dir + ' ' + brief(e.text) : ''}`);
    },
  });

  const crash = (why: string): void => {
    if (!host) return;
    count('host_crash');
    note(`host crash (${why})`);
    checker.hostCrashed();
    hostClock!.kill();
    // --nastier: a dead process commits nothing more. The database under the journal is closed
    // without the group commit Journal.close() makes, so this turn's writes that were not committed
    // yet are lost (SQLite rolls the open transaction back), as they would be.
    try {
      if (o.nastier) (host.journal as unknown as { db: { close(): void } }).db.close();
      else host.journal.close();
    } catch {
      /* already closed */
    }
    host = undefined;
    fabric.hostDown();
    clock.setTimeout(startHost, 100 + Math.floor(rnd() * 4000));
  };

  function startHost(): void {
    // The settle period may already have started the host that a crash's restart timer is due to start:
    // one host process at a time (two on one journal was a harness bug, seed 1001).
    if (host) return;
    hostClock = scopedClock(clock);
    const h = new HostCore({
      db,
      journal: new SimDiskJournal(db, hostClock, () => Math.floor(disk() * fsyncMaxMs)),
      clock: hostClock,
      heartbeatMs: HEARTBEAT_MS,
      offlineGraceMs: 10_000,
      queryWaitMs: 500,
    });
    for (const r of rigs) h.provision(r.dev, r.secret, r.board);
    h.events.on('device', (e: { device_id: string; online: boolean }) => host === h && checker.link(e.device_id, e.online));
    const emit = h.commands.emit.bind(h.commands);
    h.commands.emit = (ev: string | symbol, ...args: unknown[]) => {
      if (typeof ev === 'string' && ev.startsWith('change:')) checker.hostChange(args[0] as CommandStatus);
      return emit(ev, ...args);
    };
    // Crash points between journal writes and their commit (the group commit of a turn's device frames).
    const journal = h.journal as unknown as { commitBatch(): unknown; pending: boolean };
    const commitBatch = journal.commitBatch.bind(journal);
    journal.commitBatch = () => {
      if (commitCrashArmed > 0 && host === h && journal.pending && rnd() < 0.3) {
        commitCrashArmed--;
        count('host_crash_before_commit');
        crash('before the group commit');
        throw new HostCrash('host crashed before committing');
      }
      return commitBatch();
    };
    host = h;
    note('host start');
    fabric.hostUp = true;
    fabric.accept = (link: Link, dev: string) => {
      const hl = host;
      if (!hl) return link.close('host down');
      const send = link.send.bind(link);
      // Crash points between a journal write and the frame that records it.
      link.send = (text: string) => {
        if (crashArmed > 0 && host === hl && rnd() < 0.2) {
          crashArmed--;
          crash('before sending ' + brief(text));
          throw new HostCrash('host crashed before sending a frame');
        }
        const cf = text.startsWith('{"t":"cmd"') ? cmdFaults.get(dev) : undefined;
        if (cf && clock.now() < cf.until) {
          count('cmd_' + cf.kind);
          note(`${dev} cmd ${cf.kind === 'drop' ? 'dropped on the way' : 'sent, then the link cut'}: ${brief(text)}`);
          // A dropped frame puts the sealed counters out of step: the device reconnects at the next one.
          if (cf.kind === 'drop') return;
          send(text);
          return link.close('cut after a cmd');
        }
        send(text);
      };
      hl.attach(link);
    };
  }

  /** Boot-time faults are drawn only while faults are on (not in the settle period). */
  let bootFaults = false;
  for (let i = 0; i < o.devices; i++) {
    const board = BOARDS[i % BOARDS.length];
    const dev = `rig${i + 1}`;
    const secret = (seed.toString(16).padStart(8, '0') + i.toString(16).padStart(4, '0')).repeat(4);
    const rig = new SimRig({
      firmwarePath: FIRMWARE,
      clock,
      seed: (seed * 31 + i) >>> 0,
      config: { dev, secret, host: 'ws://host.fabric:8787/device', board },
      connect: fabric.connector(dev),
    });
    rig.on('write', (pin: number) => checker.actuation(dev, 'write ' + pin));
    rig.on('motion', (what: 'start' | 'stop', axis: string) => {
      checker.motion(dev, what, axis);
      if (what === 'start') checker.actuation(dev, 'motion ' + axis);
    });
    rig.on('contact', (ch: number, closed: boolean) => checker.contact(dev, ch, closed));
    rig.on('sensor', (id: string, good: boolean, amps: number | null) => checker.sensor(dev, id, good, amps));
    // Outputs observed only by their pin read-back: their level over time (writes, stuck faults, power).
    const readback = new Set(board.relays.filter((r) => r.feedback.kind === 'pin_readback').map((r) => r.pin));
    if (readback.size) rig.pins.onChange((pin, level) => readback.has(pin) && checker.pin(dev, pin, level));
    rig.on('boot', (gen: number) => {
      checker.booted(dev, gen);
      note(`${dev} boot ${gen}`);
      // Soon after a boot the last Storage write is its boot counter: a cut that loses it.
      if (bootFaults && rnd() < 0.1) {
        const at = Math.floor(rnd() * 400);
        clock.setTimeout(() => {
          if (!bootFaults || !rig.running) return;
          count('power_loss_lost_boot_count');
          note(`${dev} power loss ${at} ms after boot, losing the last Storage write`);
          checker.powerLoss(dev);
          rig.powerLoss(50 + Math.floor(rnd() * 1000), { loseLastStorageWrite: true });
        }, at);
      }
    });
    rigs.push({ dev, board, rig, secret });
  }
  startHost();
  for (const r of rigs) r.rig.boot();
  bootFaults = true;

  // Power loss between acting and acking: right after an actuation, before the ack leaves.
  checker.onActuation = (dev) => {
    if (rnd() < 0.03) {
      const r = rigs.find((x) => x.dev === dev)!;
      count('power_loss_after_act');
      clock.setTimeout(() => {
        note(`${dev} power loss after acting`);
        checker.powerLoss(dev);
        r.rig.powerLoss(50 + Math.floor(rnd() * 2000));
      }, 0);
    }
  };

  const endAt = clock.now() + o.minutes * 60_000;
  let faultsOn = true;

  // The fault schedule.
  const faultTick = (): void => {
    if (!faultsOn) return;
    const r = pick(rigs);
    // A rig with sensors gets sensor faults often enough to meet its readings (no draw for the others:
    // a seed without such a rig replays as before).
    if (r.board.sensors?.length && rnd() < 0.5) {
      sensorFault(r, rnd() < 0.4);
      clock.setTimeout(faultTick, 500 + Math.floor(rnd() * 6000));
      return;
    }
    const k = rnd();
    if (k < 0.2) {
      const ms = 200 + Math.floor(rnd() * (rnd() < 0.3 ? 15000 : 3000));
      const d = rnd() < 0.7 ? 'both' : 'to_device';
      count('partition');
      note(`${r.dev} partition ${d} ${ms} ms`);
      r.rig.linkDrop({ direction: d, ms });
    } else if (k < 0.3) {
      count('power_loss');
      note(`${r.dev} power loss`);
      checker.powerLoss(r.dev);
      r.rig.powerLoss(50 + Math.floor(rnd() * 3000));
    } else if (k < 0.35) {
      // A cut before flash finished the last Storage write (the boot counter, if it came soon
      // after a boot): the next boot counts the same number again.
      count('power_loss_lost_storage_write');
      note(`${r.dev} power loss losing the last Storage write`);
      checker.powerLoss(r.dev);
      r.rig.powerLoss(50 + Math.floor(rnd() * 3000), { loseLastStorageWrite: true });
    } else if (k < 0.45) {
      crash('scheduled');
    } else if (k < (o.nastier ? 0.5 : 0.55)) {
      crashArmed++;
      count('host_crash_armed');
    } else if (k < 0.55) {
      commitCrashArmed++;
      count('host_crash_before_commit_armed');
    } else if (k < 0.8) {
      hardwareFault(r);
    } else if (k < 0.86) {
      // A peer that cuts the link after every cmd, or an on-path dropper of cmd frames, for a while.
      const kind = rnd() < 0.5 ? 'cut' : 'drop';
      const ms = 2000 + Math.floor(rnd() * 20000);
      count('cmd_' + kind + '_period');
      note(`${r.dev} every cmd ${kind === 'cut' ? 'cut after' : 'dropped'} for ${ms} ms`);
      cmdFaults.set(r.dev, { kind, until: clock.now() + ms });
    }
    clock.setTimeout(faultTick, 500 + Math.floor(rnd() * 6000));
  };
  const hardwareFault = (r: (typeof rigs)[number]): void => {
    const clear = rnd() < 0.5;
    if (r.board.steppers?.length) {
      const axis = r.board.steppers[0].axis;
      const f = clear ? null : pick(['stall', 'missed_steps', 'encoder_dead', 'limit_stuck'] as const);
      const where = f === 'stall' ? String(Math.floor(rnd() * 200)) : f === 'missed_steps' ? String(1 + Math.floor(rnd() * 20)) + '%' : undefined;
      if (f) count('hw_' + f);
      note(`${r.dev} fault ${axis} ${f ?? 'clear'}${where ? '@' + where : ''}`);
      r.rig.setFault(axis, f, where);
      return;
    }
    // A rig with a fan gets fan faults among its hardware faults (no draw on other rigs: their seeds replay as before).
    const fans = (r.board.pwm ?? []).filter((p) => p.kind === 'fan');
    if (fans.length && rnd() < 0.25) {
      const fan = pick(fans);
      const f = clear ? null : pick(FAN_FAULTS);
      if (f) count('fan_' + f);
      note(`${r.dev} fault ${fan.id} ${f ?? 'clear'}`);
      r.rig.setFault(fan.id, f);
      return;
    }
    if (r.board.sensors?.length && rnd() < 0.6) return sensorFault(r, clear);
    // A relay proven by its load current gets half of its rig's relay faults (open_load among them).
    const proven = r.board.relays.filter((x) => x.feedback.kind === 'load_current');
    const ch = (proven.length && rnd() < 0.5 ? pick(proven) : pick(r.board.relays)).ch;
    const loadCh = r.board.relays.some((x) => x.ch === ch && x.feedback.kind === 'load_current');
    const f = clear ? null : loadCh && rnd() < 0.5 ? 'open_load' : pick(['coil_open', 'welded', 'pin_stuck_low', 'pin_stuck_high'] as const);
    if (f) count('hw_' + f);
    note(`${r.dev} fault relay${ch} ${f ?? 'clear'}`);
    r.rig.setFault('relay' + ch, f);
  };
  /** A sensor unplugged, stuck, with corrupted CRCs, slow or noisy (its supply goes off with its relay: relay faults and commands). */
  const sensorFault = (r: (typeof rigs)[number], clear: boolean): void => {
    const sd = pick(r.board.sensors!);
    // A checksum fault is the one the device must catch in its data: twice as likely where there is one.
    const can = [...SENSOR_CHAOS, 'crc' as const].filter((f) => f !== 'crc' || sd.kind === 'sht3x');
    const f = clear ? null : pick(can);
    if (f) count('sensor_' + f);
    note(`${r.dev} fault ${sd.id} ${f ?? 'clear'}`);
    r.rig.setSensorFault(sd.id, f);
  };
  clock.setTimeout(faultTick, 1000);

  // Agent clients.
  const CLIENTS = 3;
  let n = 0;
  const sent: { dev: string; rid: string; action: string; args: Record<string, unknown> }[] = [];
  const submit = async (who: string, input: { device_id: string; action: string; args: Record<string, unknown>; request_id: string }): Promise<CommandStatus | undefined> => {
    if (!host) return undefined;
    let s: CommandStatus;
    try {
      s = await host.submit(input);
    } catch (e) {
      if (e instanceof HostCrash) return undefined;
      throw e;
    }
    checker.submitted(s);
    note(`${who} submit ${input.device_id}/${input.request_id} ${input.action} ${JSON.stringify(input.args)} → ${s.state}${s.error_code ? ' ' + s.error_code : ''}`);
    return s;
  };
  const clientTick = (c: number): void => {
    if (!faultsOn) return;
    const who = 'client' + c;
    const k = rnd();
    if (k < 0.55 || sent.length === 0) {
      const r = pick(rigs);
      let action: string;
      let args: Record<string, unknown>;
      const fans = (r.board.pwm ?? []).filter((p) => p.kind === 'fan');
      if (r.board.sensors?.length && rnd() < 0.4) {
        action = 'sensor.read';
        args = { id: pick(r.board.sensors).id };
      } else if (fans.length && rnd() < 0.3) {
        action = 'fan.set';
        args = { id: pick(fans).id, duty: pick([0, 40, 60, 100]) };
      } else if (r.board.steppers?.length && rnd() < 0.8) {
        const ax = r.board.steppers[0];
        if (rnd() < 0.3) {
          action = 'stepper.home';
          args = { axis: ax.axis };
        } else {
          action = 'stepper.move';
          args = { axis: ax.axis, mm: Math.round(rnd() * ax.travel.max_mm * 10) / 10 };
          const sp = rnd();
          if (sp < 0.06) args.speed = pick([5e-324, 1e-5, 0.01, 0.1]);
          else if (sp < 0.3) args.speed = 1 + Math.floor(rnd() * ax.max_speed_mm_s);
        }
      } else {
        action = 'relay.set';
        args = { ch: pick(r.board.relays).ch, on: rnd() < 0.5 };
      }
      const input = { device_id: r.dev, action, args, request_id: `${who}-${++n}` };
      sent.push(input.request_id ? { dev: r.dev, rid: input.request_id, action, args } : (undefined as never));
      const first = submit(who, input);
      if (rnd() < 0.1) {
        count('client_concurrent_duplicate');
        void submit('client' + ((c + 1) % CLIENTS), input);
      }
      // submit answers once the journal committed (asynchronously): the retry decision follows it.
      void first.then((s) => {
        if (s?.error_code === 'DEVICE_OFFLINE' && rnd() < 0.7) {
          count('client_retry_after_offline');
          clock.setTimeout(() => faultsOn && void submit(who, input), 500 + Math.floor(rnd() * 5000));
        }
      });
    } else if (k < 0.75) {
      const p = pick(sent);
      count('client_retry_same_request_id');
      void submit(who, { device_id: p.dev, action: p.action, args: p.args, request_id: p.rid });
    } else if (k < 0.8) {
      const p = pick(sent);
      count('client_retry_different_args');
      const args =
        p.action === 'relay.set' ? { ...p.args, on: !p.args.on } : p.action === 'fan.set' ? { ...p.args, duty: p.args.duty === 100 ? 60 : 100 } : { ...p.args, mm: 1 + Number(p.args.mm ?? 0) };
      void submit(who, { device_id: p.dev, action: p.action, args, request_id: p.rid });
    } else if (host) {
      const r = pick(rigs);
      const h = host;
      count('client_state_read');
      note(`${who} state read ${r.dev}`);
      void h.deviceStatus(r.dev, true).then(
        (v) => {
          if (v?.source === 'device' && host === h) checker.stateRead(r.dev);
        },
        () => {},
      );
    }
    clock.setTimeout(() => clientTick(c), 200 + Math.floor(rnd() * 3000));
  };
  for (let c = 0; c < CLIENTS; c++) clock.setTimeout(() => clientTick(c), 500 + c * 137);

  // Drive the clock; let promise continuations run between steps.
  const errors: unknown[] = [];
  rejections = errors;
  const runUntil = async (t: number): Promise<void> => {
    while (clock.now() < t) {
      // Jump to the next timer (at most STEP_MS ahead), then let promise continuations run.
      const due = clock.nextDue;
      const step = due === undefined ? STEP_MS : Math.min(STEP_MS, Math.max(0, due - clock.now()));
      try {
        clock.advance(Math.min(step, t - clock.now()));
      } catch (e) {
        if (!(e instanceof HostCrash) && !/database connection is not open/.test(String(e))) throw e;
      }
      await flush();
    }
  };
  try {
    await runUntil(endAt);
    // Settle: faults stop, the host is up, the network is calm; everything open must finish.
    faultsOn = false;
    bootFaults = false;
    fabric.faults = calm;
    crashArmed = 0;
    commitCrashArmed = 0;
    cmdFaults.clear();
    if (!host) startHost();
    for (const r of rigs) r.rig.setFault(r.board.steppers?.length ? r.board.steppers[0].axis : 'relay1', null);
    note('settle');
    await runUntil(clock.now() + SETTLE_MS);
    await flush();
  } finally {
    await new Promise((r) => setImmediate(r));
    rejections = undefined;
  }
  for (const e of errors) checker.violation('no-crash', '-', `host threw ${(e as Error)?.stack ?? String(e)}`);
  checker.finish();
  const result: RunResult = {
    seed,
    simMs: o.minutes * 60_000 + SETTLE_MS,
    commands: checker.commandCount(),
    faults,
    checks: checker.checks,
    violations: checker.violations,
    trace,
    wallMs: 0,
  };
  for (const r of rigs) r.rig.shutdown();
  host?.close();
  rmSync(dir, { recursive: true, force: true });
  result.wallMs = Date.now() - wall;
  return result;
}

/**
 * The journal on a simulated disk: commits deferred to the end of the (virtual) turn as on the real
 * clock, and every fsync taking `latency()` virtual ms (the file is on tmpfs: the real fsync is free
 * and skipped). Checkpoints inline: no worker thread in a simulation.
 */
class SimDiskJournal extends Journal {
  constructor(
    path: string,
    private readonly clock: Clock,
    private readonly latency: () => number,
  ) {
    super(path, (fn) => clock.setTimeout(fn, 0), { checkpoint: 'inline' });
  }
  protected override syncAsync(_fd: number, done: (err: Error | null) => void): void {
    this.clock.setTimeout(() => done(null), this.latency());
  }
}

/** Promise rejections of the current run: a crashed host leaves some behind (they are fine), anything else is a bug. */
let rejections: unknown[] | undefined;
process.on('unhandledRejection', (e) => {
  if (e instanceof HostCrash || /database connection is not open/.test(String(e))) return;
  if (rejections) rejections.push(e);
  else throw e;
});

/** Let every pending promise continuation run (they never wait on real time here). */
async function flush(): Promise<void> {
  for (let i = 0; i < 4; i++) await Promise.resolve();
}

/** A frame for the trace: its type, request id and outcome, without host-minted random values. */
export function brief(text: string): string {
  try {
    const f = JSON.parse(text) as Record<string, unknown>;
    const rid = typeof f.rid === 'string' && f.rid.startsWith('client') ? ' ' + f.rid : '';
    return `${String(f.t)}${rid}${f.st ? ' ' + String(f.st) : ''}${f.code ? ' ' + String(f.code) : ''}${f.rst ? ' ' + String(f.rst) : ''}`;
  } catch {
    return 'non-json ' + text.length + 'B';
  }
}

export type { TimerHandle };
