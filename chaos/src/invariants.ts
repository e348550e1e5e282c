// What must hold whatever the faults did. The checker watches three things: the frames on the
// fabric (what each side really sent and received), the rigs' physical actuations, and every state
// change the host journals. Each violation names the command and the event that broke it.
import { isTerminal } from '@proofrig/protocol';
import type { BoardDef } from '@proofrig/protocol';
import type { Clock } from '@proofrig/protocol/clock';
import { SWITCH_BAND_MM, type SimRig } from '@proofrig/sim';
import type { CommandStatus, HostCore } from '@proofrig/host/core';

export interface Violation {
  invariant: string;
  /** dev/request_id action args, or '-' */
  command: string;
  event: string;
}

interface Sub {
  dev: string;
  rid: string;
  action: string;
  args: Record<string, unknown>;
}

interface DeviceResult {
  st: string;
  gen: number;
  at: number;
  /** The hardware was at the commanded target when the device sent it (for completed). */
  atTarget: boolean | null;
  why: string;
}

/** Details that claim the device did not act, or that nothing reached it. */
const CLAIMS_NOT_EXECUTED = /not executed|nothing reached the device|nothing was sent|never received it/;

const MOTION = new Set(['stepper.move', 'stepper.home']);
/** A result sent later than this after it was made waited (outbox, Nagle): the hardware now says nothing about it. */
const LIVE_MS = 50;

/**
 * How far the carriage can be from what its encoder says: the encoder's zero is where the home
 * switch closed, anywhere in its band, and the encoder resolves one count. A device that judges
 * "within tolerance" from its encoder (as it must: it has nothing else) cannot do better, so
 * "at the target" means within the tolerance plus this (seed 2763: measured 0.20 mm off at a
 * 0.2 mm tolerance, the carriage 0.275 mm off: 0.05 mm of band and 0.025 mm inside one 0.04 mm count).
 */
function measurable(ax: { encoder: { counts_per_mm: number } }): number {
  return SWITCH_BAND_MM + 1 / ax.encoder.counts_per_mm;
}

/** A frame's JSON, or undefined for text that is not JSON (the fabric also carries garbage and fragments). */
function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export class Checker {
  violations: Violation[] = [];
  checks = 0;
  onActuation: ((dev: string) => void) | undefined;
  private subs = new Map<string, Sub>();
  /** The cmd frame being delivered to each device right now. */
  private delivering = new Map<string, { rid: string; action: string; acted: boolean }>();
  private executions = new Map<string, number>();
  private received = new Set<string>();
  private results = new Map<string, DeviceResult[]>();
  private gens = new Map<string, number>();
  private timeouts = new Map<string, { at: number; gen: number; online: boolean; detail: string }>();
  private terminals = new Map<string, { state: string; at: number; key: string }>();
  /**
   * For "no drive after a fault without a state read", judged at the end in the host's own order of
   * decisions (a status is heard only after its batch is on disk, which on a slow disk is seconds
   * after the host decided it): per dev/axis, when motions ended in a fault (terminal_at) or completed
   * (itself a measured read); per device, when state reads were answered; and each motion sent, with
   * its submission time.
   */
  /** Per device, its session with the host going up and down, in order. */
  private links = new Map<string, { at: number; online: boolean }[]>();
  private axisEnds = new Map<string, { at: number; fault: boolean; cmd: string }[]>();
  private reads = new Map<string, number[]>();
  private motions = new Map<string, { dev: string; axisKey: string; at: number; name: string }>();
  private commandIds = new Set<string>();
  /** Command ids of DEVICE_OFFLINE refusals some submit was answered with. */
  private offlineRefusals = new Set<string>();

  constructor(
    private readonly clock: Clock,
    private readonly rig: (dev: string) => SimRig,
    private readonly host: () => HostCore | undefined,
  ) {}

  violation(invariant: string, command: string, event: string): void {
    this.violations.push({ invariant, command, event: `t=${this.clock.now()} ${event}` });
  }

  commandCount(): number {
    return this.commandIds.size;
  }

  private key(dev: string, rid: string): string {
    return dev + '/' + rid;
  }

  private name(dev: string, rid: string): string {
    const s = this.subs.get(this.key(dev, rid));
    return s ? `${dev}/${rid} ${s.action} ${JSON.stringify(s.args)}` : `${dev}/${rid}`;
  }

  submitted(s: CommandStatus): void {
    const k = this.key(s.device_id, s.request_id);
    if (!this.subs.has(k)) this.subs.set(k, { dev: s.device_id, rid: s.request_id, action: s.action, args: s.args });
    // DEVICE_OFFLINE means nothing was sent: a later submit of the same request_id must be judged
    // anew (the README tells agents to retry so), never answered with that old refusal (bug 3).
    this.checks++;
    if (this.offlineRefusals.has(s.command_id))
      this.violation('a retry after DEVICE_OFFLINE is judged anew', this.name(s.device_id, s.request_id), `submit answered with the earlier refusal ${s.command_id} (${s.state} ${s.error_code ?? ''}) instead of judging the retry`);
    else if (s.state === 'rejected' && s.error_code === 'DEVICE_OFFLINE') this.offlineRefusals.add(s.command_id);
    this.hostChange(s);
  }

  /** A boot must never present the id of an earlier boot: the host would take the reboot for a blip and re-send into an empty ring. */
  private hello(dev: string, text: string): void {
    const f = parseObject(text);
    if (!f) return;
    if (f.t !== 'hello' || typeof f.boot !== 'string') return;
    this.checks++;
    const gen = this.gens.get(dev) ?? 0;
    const seen = this.bootIds.get(dev) ?? new Map<string, number>();
    this.bootIds.set(dev, seen);
    const was = seen.get(f.boot);
    if (was !== undefined && was !== gen) this.violation('every boot presents a new boot id', dev, `boot gen ${gen} says hello with boot id ${f.boot}, which boot gen ${was} used`);
    seen.set(f.boot, gen);
  }

  booted(dev: string, gen: number): void {
    this.gens.set(dev, gen);
    this.bootAt.set(dev + ':' + gen, this.clock.now());
    // The models are new with each boot: note where the hardware stands now.
    const rig = this.rig(dev);
    const board = rig.board as BoardDef;
    for (const r of board.relays) {
      this.contact(dev, r.ch, rig.relay(r.ch).contactClosed);
      if (r.feedback.kind === 'pin_readback') this.pin(dev, r.pin, rig.pinLevel(r.pin));
    }
    for (const a of board.steppers ?? []) this.record('axis:' + dev + ':' + a.axis, rig.axis(a.axis).stepping ? null : rig.axis(a.axis).pos);
  }

  /** A relay contact closed or opened (the rig's ground truth). */
  contact(dev: string, ch: number, closed: boolean): void {
    this.record('relay:' + dev + ':' + ch, closed);
  }

  /** A sensor answered the firmware (the rig's ground truth): good or not (NAK, CRC, no power, no conversion), and the amps it saw. */
  sensor(dev: string, id: string, good: boolean, amps: number | null): void {
    this.record('sensor:' + dev + ':' + id, good);
    if (amps !== null) this.record('amps:' + dev + ':' + id, amps);
  }

  /** The values of key recorded within a millisecond of t (answers at the device's whole millisecond t). */
  private answersAt(key: string, t: number): (boolean | number | null)[] {
    const h = this.history.get(key);
    const out: (boolean | number | null)[] = [];
    if (!h) return out;
    for (let i = h.length - 1; i >= 0 && h[i].t >= t - 1; i--) if (h[i].t < t + 2) out.push(h[i].v);
    return out;
  }

  /** Readings already judged, per device, boot, sensor and time: a snapshot repeats the last reading. */
  private judged = new Set<string>();

  /**
   * No reading reported valid (st ok with a value) when the sensor's answer then was a NAK, a failed
   * CRC, no power or no conversion; and no relay completed with load_current evidence when the
   * current its sensor saw then was not past the threshold (switched on, yet nothing flowed).
   */
  private checkSensors(dev: string, gen: number, boot: number | undefined, f: Record<string, unknown>): void {
    if (boot === undefined) return;
    const s = f.s as { sensors?: { id: string; v: number | null; st: string; at: number }[] } | undefined;
    for (const r of s?.sensors ?? []) {
      if (r.st !== 'ok' || typeof r.v !== 'number') continue;
      const k = `${dev}:${gen}:${r.id}:${r.at}`;
      if (this.judged.has(k)) continue;
      this.judged.add(k);
      this.checks++;
      // Judged only where the sensor's answers then agree: two readings in one millisecond (an INA219
      // read twice, the second before a new conversion) leave a good and a bad answer side by side.
      const answers = this.answersAt('sensor:' + dev + ':' + r.id, boot + r.at);
      if (answers.length && !answers.includes(true))
        this.violation('no reading reported valid when the bus NAKed, the CRC failed or the sensor had no power', `${dev}/${r.id}`, `device reported ${r.id} = ${r.v} (ok) measured at t=${boot + r.at}, when the sensor's answer was bad (NAK, CRC, unpowered or no conversion)`);
    }
    if (f.st !== 'completed' || f.ev !== 'load_current' || typeof f.rid !== 'string') return;
    const sub = this.subs.get(this.key(dev, f.rid));
    const def = sub && (this.rig(dev).board as BoardDef).relays.find((x) => x.ch === sub.args.ch);
    if (!sub || !def || def.feedback.kind !== 'load_current') return;
    const fb = def.feedback;
    const at = s?.sensors?.find((x) => x.id === fb.sensor)?.at;
    if (at === undefined) return;
    this.checks++;
    const amps = this.answersAt('amps:' + dev + ':' + fb.sensor, boot + at).filter((v): v is number => typeof v === 'number');
    const flowed = sub.args.on ? amps.some((a) => a > fb.on_above) : amps.some((a) => a < fb.off_below);
    if (amps.length && !flowed)
      this.violation('no relay completed by its load current when no current flowed', this.name(dev, f.rid), `device said completed (load_current) switching on=${String(sub.args.on)} while ${fb.sensor} saw ${amps.join('/')} A (on_above ${fb.on_above}, off_below ${fb.off_below})`);
  }

  /** The level of a relay output that only its pin read-back observes changed (the rig's ground truth). */
  pin(dev: string, gpio: number, level: 0 | 1): void {
    this.record('pin:' + dev + ':' + gpio, level);
  }

  /** An axis started or stopped moving (the rig's ground truth): its position while still, null while moving. */
  motion(dev: string, what: 'start' | 'stop', axis: string): void {
    this.record('axis:' + dev + ':' + axis, what === 'start' ? null : this.rig(dev).axis(axis).pos);
  }

  private record(key: string, v: boolean | number | null): void {
    const h = this.history.get(key) ?? [];
    this.history.set(key, h);
    h.push({ t: this.clock.now(), v });
  }

  /**
   * The recorded ground truth over the millisecond from t (the device's whole-ms uptime): the value
   * just before t and every one it took from t until t + 1, since changes at the same instant may come
   * before or after the device's decision (empty: nothing recorded by then). Searched from the end, as
   * the moments asked about are recent.
   */
  private historyNear(key: string, t: number): (boolean | number | null)[] {
    const h = this.history.get(key);
    if (!h) return [];
    let i = h.length - 1;
    while (i >= 0 && h[i].t >= t + 1) i--;
    const out: (boolean | number | null)[] = [];
    for (; i >= 0; i--) {
      out.push(h[i].v);
      if (h[i].t < t) break;
    }
    return out;
  }

  powerLoss(dev: string): void {
    this.delivering.delete(dev);
  }

  /** The host process died: no device is connected to a host until one comes back. */
  hostCrashed(): void {
    for (const dev of this.links.keys()) this.link(dev, false);
  }

  /**
   * A device's session with the host went up or down (the host's own 'device' events). Judged by the
   * time of the host's decision, not by when its status was heard: on a slow disk a timeout decided
   * while the device was away is heard after it is back.
   */
  link(dev: string, online: boolean): void {
    const l = this.links.get(dev) ?? [];
    l.push({ at: this.clock.now(), online });
    this.links.set(dev, l);
  }

  /** Whether dev had a session with the host at time t. */
  private onlineAt(dev: string, t: number): boolean {
    const l = this.links.get(dev) ?? [];
    let on = false;
    for (const e of l) {
      if (e.at > t) break;
      on = e.online;
    }
    return on;
  }

  /** A state read of dev was answered now. */
  stateRead(dev: string): void {
    const r = this.reads.get(dev) ?? [];
    r.push(this.clock.now());
    this.reads.set(dev, r);
  }

  /** A physical actuation on a rig: attributed to the cmd frame being delivered, if any. */
  actuation(dev: string, _what: string): void {
    const d = this.delivering.get(dev);
    if (!d || d.acted) return;
    d.acted = true;
    if (d.action === 'stop') return;
    const k = this.key(dev, d.rid);
    const n = (this.executions.get(k) ?? 0) + 1;
    this.executions.set(k, n);
    this.checks++;
    if (n > 1) this.violation('no request_id moves hardware twice', this.name(dev, d.rid), `execution #${n} of the same request_id on the hardware (boot gen ${this.gens.get(dev)})`);
    this.onActuation?.(dev);
  }

  /** Clock time of each boot (dev:gen): a result's `s.up` then says when the device decided it. */
  private bootAt = new Map<string, number>();
  /** Relay contacts and axis positions over time, for results the device decided while its link was down. */
  private history = new Map<string, { t: number; v: boolean | number | null }[]>();

  /** Boot ids each device presented in hello, with the boot generation that sent it. */
  private bootIds = new Map<string, Map<string, number>>();

  frame(kind: 'send' | 'deliver' | 'delivered', dev: string, dir: 'to_host' | 'to_device', text: string): void {
    if (kind === 'send' && dir === 'to_host' && text.includes('"hello"')) this.hello(dev, text);
    // Only commands to the device and results from it matter here; skip parsing the rest.
    if (dir === 'to_device' ? kind === 'send' || !text.includes('"cmd"') : kind !== 'send' || !text.includes('"res"')) return;
    const f = parseObject(text);
    if (!f) return;
    if (dir === 'to_device') {
      if (f.t !== 'cmd' || typeof f.rid !== 'string') return;
      if (kind === 'deliver') {
        this.delivering.set(dev, { rid: f.rid, action: String(f.a), acted: false });
        this.received.add(this.key(dev, f.rid));
      } else if (kind === 'delivered') this.delivering.delete(dev);
      return;
    }
    // The device produced an outcome: note whether the hardware is at the target right now.
    if (kind === 'send' && f.t === 'res' && typeof f.rid === 'string') {
      const k = this.key(dev, f.rid);
      const list = this.results.get(k) ?? [];
      const gen = this.gens.get(dev) ?? 0;
      // The moment that counts is when the device made it, which its state snapshot's uptime says, not
      // when the frame left: it may have waited in the outbox (link down), behind Nagle (seed 213), or
      // only for the end of the instant, in which the next command already switched the output (seed
      // 600: a timer's writes leave after the other timers of that instant ran). Later sends replay it.
      if (!list.some((r) => r.gen === gen && r.st === f.st)) {
        const up = (f.s as { up?: unknown } | undefined)?.up;
        const boot = this.bootAt.get(dev + ':' + gen);
        const decided = typeof up === 'number' && boot !== undefined ? boot + up : this.clock.now();
        const at = f.st === 'completed' ? this.atTarget(dev, f.rid, String(f.ev), typeof up === 'number' && boot !== undefined ? decided : undefined) : { ok: null, why: '' };
        list.push({ st: String(f.st), gen, at: decided, atTarget: at.ok, why: at.why });
        this.checkSensors(dev, gen, boot, f);
      }
      this.results.set(k, list);
      const t = this.timeouts.get(k);
      if (t && t.online && t.gen === this.gens.get(dev)) {
        this.checks++;
        this.violation(
          'no device outcome is replaced by a timeout',
          this.name(dev, f.rid),
          `device sent result ${String(f.st)}${f.code ? ' ' + String(f.code) : ''} after the host ended the command timeout at t=${t.at} while the device was connected (same boot): "${t.detail}"`,
        );
      }
    }
  }

  /**
   * Is the hardware at the target, as far as the evidence the device claims can see? At time `at` (the
   * device's whole millisecond) from the recorded history; now when that time is unknown, or when the
   * history cannot say and the result was sent soon after it was made (null otherwise).
   */
  private atTarget(dev: string, rid: string, ev: string, at?: number): { ok: boolean | null; why: string } {
    if (at === undefined) return this.atTargetNow(dev, rid, ev);
    const past = this.atTargetThen(dev, rid, ev, at);
    // The history cannot say (a homing ends as its switch closes, before the physics tick records the stop).
    if (past.ok === null && this.clock.now() - at <= LIVE_MS) return this.atTargetNow(dev, rid, ev);
    return past;
  }

  private atTargetThen(dev: string, rid: string, ev: string, at: number): { ok: boolean | null; why: string } {
    const s = this.subs.get(this.key(dev, rid));
    if (!s) return { ok: null, why: '' };
    const board = this.rig(dev).board as BoardDef;
    // Within the device's millisecond the hardware may have changed: at target if it was at any value it took then.
    const when = ` when the device decided it (t=${at}, sent ${this.clock.now() - at} ms later)`;
    if (s.action === 'relay.set') {
      if (ev === 'pin_readback') {
        const def = board.relays.find((x) => x.ch === s.args.ch)!;
        const want = s.args.on === !def.active_low ? 1 : 0;
        const levels = this.historyNear('pin:' + dev + ':' + def.pin, at);
        if (levels.length === 0) return { ok: null, why: '' };
        return { ok: levels.includes(want), why: `relay ${String(s.args.ch)} pin GPIO${def.pin} at ${levels.join('/')}${when}, commanded on=${String(s.args.on)} (drive level ${want})` };
      }
      const closed = this.historyNear('relay:' + dev + ':' + String(s.args.ch), at).filter((v) => typeof v === 'boolean');
      if (closed.length === 0) return { ok: null, why: '' };
      return {
        ok: closed.includes(s.args.on as boolean),
        why: `relay ${String(s.args.ch)} contact ${closed.map((c) => (c ? 'closed' : 'open')).join('/')}${when}, commanded on=${String(s.args.on)} (evidence ${ev})`,
      };
    }
    if (MOTION.has(s.action)) {
      const ax = board.steppers!.find((a) => a.axis === s.args.axis)!;
      const pos = this.historyNear('axis:' + dev + ':' + ax.axis, at).filter((v) => typeof v === 'number');
      if (pos.length === 0) return { ok: null, why: '' };
      const target = s.action === 'stepper.home' ? 0 : Number(s.args.mm);
      return {
        ok: pos.some((p) => Math.abs(p - target) <= ax.tolerance_mm + measurable(ax)),
        why: `axis ${ax.axis} at ${pos.map((p) => p.toFixed(3)).join('/')} mm${when}, target ${target} mm (tolerance ${ax.tolerance_mm})`,
      };
    }
    return { ok: null, why: '' };
  }

  private atTargetNow(dev: string, rid: string, ev: string): { ok: boolean | null; why: string } {
    const s = this.subs.get(this.key(dev, rid));
    if (!s) return { ok: null, why: '' };
    const rig = this.rig(dev);
    const board = rig.board as BoardDef;
    if (s.action === 'relay.set') {
      const r = rig.relay(Number(s.args.ch));
      // pin_readback sees the MCU pin, not the coil or contact (the board says so): check what it claims to see.
      if (ev === 'pin_readback') {
        const def = board.relays.find((x) => x.ch === s.args.ch)!;
        const want = s.args.on === !def.active_low ? 1 : 0;
        const level = rig.pinLevel(def.pin);
        return { ok: level === want, why: `relay ${String(s.args.ch)} pin GPIO${def.pin} at ${level}, commanded on=${String(s.args.on)} (drive level ${want})` };
      }
      const ok = r.contactClosed === s.args.on;
      return { ok, why: `relay ${String(s.args.ch)} contact ${r.contactClosed ? 'closed' : 'open'}, commanded on=${String(s.args.on)} (evidence ${ev})` };
    }
    // A fan completed by its tachometer at a duty above 0 must be turning (a stalled rotor has no speed to measure).
    if (s.action === 'fan.set' && ev === 'tachometer' && Number(s.args.duty) > 0) {
      const f = rig.fan(String(s.args.id));
      return { ok: f.rpm > 0, why: `fan ${String(s.args.id)} at ${f.rpm} rpm${f.fault ? ` (fault ${f.fault})` : ''}, commanded duty ${String(s.args.duty)} % (evidence tachometer)` };
    }
    if (MOTION.has(s.action)) {
      const ax = board.steppers!.find((a) => a.axis === s.args.axis)!;
      const pos = rig.axis(String(s.args.axis)).pos;
      const target = s.action === 'stepper.home' ? 0 : Number(s.args.mm);
      const ok = Math.abs(pos - target) <= ax.tolerance_mm + measurable(ax);
      return { ok, why: `axis ${ax.axis} at ${pos.toFixed(3)} mm, target ${target} mm (tolerance ${ax.tolerance_mm})` };
    }
    return { ok: null, why: '' };
  }

  /** Every command status the host emits (after it is journaled). */
  hostChange(s: CommandStatus): void {
    const id = s.command_id;
    this.commandIds.add(id);
    const k = this.key(s.device_id, s.request_id);
    this.checks++;
    if (!Number.isFinite(s.estimated_seconds) || (s.deadline_ms !== null && !Number.isFinite(s.deadline_ms)))
      this.violation('estimates and deadlines are finite', this.name(s.device_id, s.request_id), `${s.state}: estimated_seconds ${s.estimated_seconds}, deadline_ms ${s.deadline_ms}`);
    if (s.state === 'timeout' && s.deadline_ms !== null && this.clock.now() < Date.parse(s.submitted_at) + s.deadline_ms)
      this.violation(
        'no timeout before its own deadline',
        this.name(s.device_id, s.request_id),
        `timeout ${this.clock.now() - Date.parse(s.submitted_at)} ms after submission, deadline ${s.deadline_ms} ms: "${s.detail}"`,
      );
    if (!s.terminal) {
      if (s.state === 'sent' && MOTION.has(s.action) && !this.motions.has(id))
        this.motions.set(id, { dev: s.device_id, axisKey: s.device_id + '/' + String(s.args.axis), at: Date.parse(s.submitted_at), name: this.name(s.device_id, s.request_id) });
      return;
    }
    const prev = this.terminals.get(id);
    this.checks++;
    if (prev) {
      if (prev.state !== s.state)
        this.violation('exactly one terminal state', this.name(s.device_id, s.request_id), `terminal ${prev.state} at t=${prev.at}, then ${s.state}`);
      return;
    }
    this.terminals.set(id, { state: s.state, at: this.clock.now(), key: k });
    // A completed motion is itself a measured read of the axis; a failed or timed-out one needs a read.
    if (MOTION.has(s.action) && (s.state === 'completed' || s.state === 'failed' || s.state === 'timeout')) {
      const k = s.device_id + '/' + String(s.args.axis);
      const ends = this.axisEnds.get(k) ?? [];
      ends.push({ at: Date.parse(s.terminal_at!), fault: s.state !== 'completed', cmd: `${s.device_id}/${s.request_id} (${s.state}${s.error_code ? ' ' + s.error_code : ''})` });
      this.axisEnds.set(k, ends);
    }
    if (s.state === 'completed') {
      this.checks++;
      const produced = (this.results.get(k) ?? []).filter((r) => r.st === 'completed');
      if (produced.length === 0) this.violation('completed only when the hardware was at the target', this.name(s.device_id, s.request_id), 'host journaled completed without any completed result from the device');
      else if (produced.some((r) => r.atTarget === false))
        this.violation('completed only when the hardware was at the target', this.name(s.device_id, s.request_id), `device said completed while ${produced.find((r) => r.atTarget === false)!.why}`);
    }
    if (s.state === 'timeout') {
      const decided = Date.parse(s.terminal_at!);
      const online = this.onlineAt(s.device_id, decided);
      const gen = this.gens.get(s.device_id) ?? 0;
      this.timeouts.set(k, { at: decided, gen, online, detail: s.detail ?? '' });
      this.checks++;
      const had = (this.results.get(k) ?? []).find((r) => r.gen === gen);
      if (online && had)
        this.violation('no device outcome is replaced by a timeout', this.name(s.device_id, s.request_id), `host ended it timeout while the connected device (same boot) holds result ${had.st} from t=${had.at}: "${s.detail}"`);
    }
    if (s.detail && CLAIMS_NOT_EXECUTED.test(s.detail)) {
      this.checks++;
      const ex = this.executions.get(k) ?? 0;
      if (ex > 0 || this.received.has(k))
        this.violation(
          'no detail claims what the device did not observe',
          this.name(s.device_id, s.request_id),
          `${s.state}: "${s.detail}" but the device ${ex > 0 ? 'moved the hardware for it ' + ex + ' time(s)' : 'received it'}`,
        );
    }
  }

  /** After the settle period: every command terminal, or provably still in flight. */
  finish(): void {
    // No motion admitted after its axis's last motion ended in a fault unless a state read (or a completed
    // motion) came between, in the host's order of decisions. Same-millisecond decisions count as ordered
    // fault → read (the host's own rule) and are not judged against a submission in that millisecond.
    for (const m of this.motions.values()) {
      this.checks++;
      const before = (this.axisEnds.get(m.axisKey) ?? []).filter((e) => e.at < m.at);
      const last = before.reduce<{ at: number; fault: boolean; cmd: string } | undefined>((a, e) => (!a || e.at >= a.at ? e : a), undefined);
      if (!last || !last.fault) continue;
      if ((this.reads.get(m.dev) ?? []).some((r) => r >= last.at && r <= m.at)) continue;
      this.violation(
        'an axis that ended in a fault is not driven again before a state read',
        m.name,
        `submitted at t=${m.at} and sent to the device although ${last.cmd} ended in a fault at t=${last.at} and no state read was answered between`,
      );
    }
    const h = this.host();
    if (!h) return;
    for (const c of h.journal.open()) {
      this.checks++;
      const rig = this.rig(c.device_id);
      const moving = MOTION.has(c.action) && rig.axis(String(c.args.axis)).stepping;
      if (!moving) this.violation('each command reaches exactly one terminal state', this.name(c.device_id, c.request_id), `still ${c.state} after the settle period with nothing in flight`);
    }
    for (const id of this.commandIds) {
      const ev = h.journal.events(id);
      const terms = ev.filter((e) => isTerminal(e.state));
      const first = terms.findIndex(() => true);
      this.checks++;
      const changes = terms.filter((e, i) => i > first && e.state !== terms[first].state);
      if (changes.length > 0) this.violation('exactly one terminal state', id, `journal shows ${terms.map((e) => e.state).join(' → ')}`);
    }
  }
}
