// The command lifecycle of DESIGN.md, journaled at every step:
//   submitted → sent → accepted → running → completed | unverified | failed | rejected | timeout | cancelled
// Only the device's result frame (with its evidence) or the host's own verdict after asking
// the device moves a command to a terminal state, and it moves exactly once.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import {
  isTerminal,
  type AckFrame,
  type ErrorCode,
  type LifecycleState,
  type ProgressFrame,
  type ResultFrame,
} from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import type { Devices } from './devices.js';
import { blankCommand, momentRefusal, type CommandRecord, type Journal } from './journal.js';
import type { Session } from './session.js';
import { newCommandId, newRequestId } from './ids.js';
import { planAction } from './plan.js';
import { isoTime } from './iso.js';
import { LogLimiter } from './log-limit.js';
import { ACTIONS, isActionName, type ActionName } from '@proofrig/protocol';

export interface SubmitInput {
  device_id: string;
  action: string;
  args: Record<string, unknown>;
  /** Idempotency key: the same key on the same device returns the same command, never a second execution. */
  request_id?: string;
}

export interface CommandStatus {
  command_id: string;
  request_id: string;
  device_id: string;
  action: string;
  args: Record<string, unknown>;
  state: LifecycleState;
  terminal: boolean;
  accepted: boolean;
  executed: boolean;
  verified: boolean;
  evidence: string | null;
  error_code: ErrorCode | null;
  detail: string | null;
  submitted_at: string;
  terminal_at: string | null;
  elapsed_ms: number;
  deadline_ms: number | null;
  estimated_seconds: number;
  estimated_remaining_seconds: number | null;
  progress_pct: number | null;
  /** Last measured position (mm) of a motion command, from the device's progress or result. */
  position_mm: number | null;
  device_state: CommandRecord['device_state'];
  device_state_observed_at: string | null;
  device_state_age_ms: number | null;
}

export interface CommandOptions {
  /** After a deadline with the device offline, wait this long for it to come back and answer before deciding timeout. */
  offlineGraceMs: number;
  /** Longest wait for the device's answer to a post-deadline state query. */
  queryWaitMs: number;
}

/** Sends of one command at most, first send included, across deadlines and reconnects alike. */
export const MAX_SENDS = 2;

/**
 * The absolute bound of an open command, from its first send (or from a restarted host's recovery of
 * it): room for every path that ends a command
 * on evidence (a re-send and the one fresh window a device reporting it still running gets: three
 * deadlines; the state queries after deadlines and "done" answers: six query waits; one offline grace).
 * Whatever the link does (cut after every cmd, cmd frames dropped), a command still open then ends `timeout`.
 */
export function absoluteBoundMs(deadlineMs: number, queryWaitMs: number, offlineGraceMs: number): number {
  return 3 * deadlineMs + 6 * queryWaitMs + offlineGraceMs;
}

export class Commands extends EventEmitter {
  private deadlines = new Map<string, TimerHandle>();
  /** Commands whose deadline passed while their device was offline, with the grace timer. */
  private waiting = new Map<string, TimerHandle>();
  private closed = false;
  /** How often a device said "done" after the deadline without its result arriving. */
  private doneWaits = new Map<string, number>();
  /** Commands whose deadline was extended once because the device said it was still running them. */
  private runWaits = new Set<string>();
  /** Commands whose offline grace ran out with their device back on a new connection: asked once more, not ended blind. */
  private graceAsks = new Set<string>();
  /** Commands journaled as sent whose `cmd` frame waits for that commit: their deadline is not armed yet, nor may they be asked about. */
  private unwritten = new Set<string>();
  /** The session each open command's latest `cmd` was written on (an answer on it was given after the device received it). */
  private wroteOn = new Map<string, Session | null>();
  /** The absolute bound of each open command (absoluteBoundMs). */
  private bounds = new Map<string, TimerHandle>();
  /** Open commands this host found in the journal at start (their bound counts from then). */
  private recovered = new Set<string>();
  /** Commands past their absolute bound, asked one last time, with what the bound was. */
  private atBound = new Map<string, string>();

  /** Warnings a device can provoke at will (a result for a request never sent), limited per device. */
  private readonly limiter: LogLimiter;

  constructor(
    private readonly journal: Journal,
    private readonly devices: Devices,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: CommandOptions,
  ) {
    super();
    this.limiter = new LogLimiter(clock);
    this.setMaxListeners(0);
  }

  /**
   * Journal a command and send it, or journal why it is refused. Resolves once what it answers is on
   * disk (the batch holding it committed; the `cmd` frame leaves only after that commit too); rejects,
   * with nothing sent, if that batch failed to commit.
   */
  async submit(input: SubmitInput): Promise<CommandStatus> {
    const s = this.journal.group(() => this.submitNow(input));
    await this.journal.flushed();
    return s;
  }

  private submitNow(input: SubmitInput): CommandStatus {
    const now = this.clock.now();
    const dev = input.device_id;
    if (input.request_id !== undefined) {
      const prior = this.journal.byRequest(dev, input.request_id);
      if (prior) {
        const same = prior.action === input.action && sameArgs(prior.args, input.args);
        // A refusal of the moment (offline, busy, not homed, state read required) was decided by the
        // host before anything was sent: a retry with the same request_id is judged anew and, if it
        // runs, is a new command (new command_id); the refusal stays in the journal under its own id.
        if (same && !momentRefusal(prior)) return this.view(prior);
        if (!same) return this.view(
          this.rejectNew(input, 'INVALID_ARGS', `request_id ${input.request_id} was already used on ${dev} for ${prior.action} ${JSON.stringify(prior.args)} (${prior.command_id}); use a new request_id for a different command`, false),
        );
      }
      // Retention pruned the first command with this key: it is never executed a second time.
      const gone = this.journal.prunedByRequest(dev, input.request_id);
      if (gone) {
        return this.view(
          this.rejectNew(input, 'INVALID_ARGS', `request_id ${input.request_id} was used on ${dev} by ${gone.command_id} (${gone.action}, ended ${gone.state}), whose record the journal's retention has pruned; it is not executed again: use a new request_id`, false),
        );
      }
    }
    const board = this.devices.board(dev);
    const session = this.devices.session(dev);
    if (!board || !session) {
      const why = !board
        ? `no device "${dev}" is provisioned on this host; list_devices shows the known ones`
        : `device ${dev} is offline${this.lastSeenText(dev)}; nothing was sent`;
      return this.view(this.rejectNew(input, 'DEVICE_OFFLINE', why, true));
    }
    const plan = planAction(board, input.action, input.args, this.devices.rttMax(dev), this.devices.state(dev));
    if (!plan.ok) return this.view(this.rejectNew(input, plan.code, plan.detail, true));
    const unread = this.faultNotReadSince(dev, input.action, input.args);
    if (unread) return this.view(this.rejectNew(input, 'STATE_READ_REQUIRED', unread, true));
    const running = this.motionInFlight(dev, input.action, input.args);
    if (running) return this.view(this.rejectNew(input, 'BUSY', running, true));

    const c = this.record(input, now);
    c.estimated_ms = plan.estimatedMs;
    // submitted and sent land together, in this turn's batch, as one row already sent with both steps
    // in its history; the frame goes out after the commit.
    this.sentFields(c, session, plan.deadlineMs);
    this.journal.insert(c, null, [
      { at: now, state: 'submitted', note: null },
      { at: c.sent_at!, state: 'sent', note: `deadline ${plan.deadlineMs} ms` },
    ]);
    this.logSubmitted(c);
    this.transmit(c, session, plan.deadlineMs);
    return this.view(c);
  }

  /**
   * A motion command after that axis's last motion ended in a fault (stall, limit, position
   * error, reboot, timeout) is refused until someone read the device's real state afterwards.
   */
  private faultNotReadSince(dev: string, action: string, args: Record<string, unknown>): string | null {
    if (action !== 'stepper.move' && action !== 'stepper.home') return null;
    let last: CommandRecord | undefined;
    for (const a of ['stepper.move', 'stepper.home']) {
      const c = this.journal.lastTerminal(dev, a).find((x) => x.args.axis === args.axis);
      if (c && (!last || c.terminal_at! > last.terminal_at!)) last = c;
    }
    if (!last || (last.state !== 'failed' && last.state !== 'timeout')) return null;
    const read = this.devices.refreshedAt(dev);
    // A read answered in the same millisecond the fault was journaled came after it (both are sequential here).
    if (read !== null && read >= last.terminal_at!) return null;
    return `axis ${String(args.axis)} ended its last motion ${last.command_id} ${last.state}${last.error_code ? ' ' + last.error_code : ''}${
      last.position !== null ? ' at ' + last.position + ' mm' : ''
    }; read its real state with get_device_status refresh=true before moving it again`;
  }

  /**
   * A motion command while another one on the same axis is still open here. The device would refuse
   * it BUSY if it arrived during that motion, but the frame leaves only after this turn's commit: if
   * the open one ends in a fault meanwhile (its result in the same turn), the new one would reach an
   * axis that must be read first (chaos seed 7). So the host refuses it itself, whatever the timing.
   */
  private motionInFlight(dev: string, action: string, args: Record<string, unknown>): string | null {
    if (action !== 'stepper.move' && action !== 'stepper.home') return null;
    const c = this.journal.open().find((o) => o.device_id === dev && (o.action === 'stepper.move' || o.action === 'stepper.home') && o.args.axis === args.axis);
    if (!c) return null;
    return `axis ${String(args.axis)} is still running ${c.action} ${c.command_id} (${c.state}); this one was refused, not queued: wait for its outcome with get_action_status (or stop it), read the state, then send again`;
  }

  /**
   * Cancel a motion command by stopping its axis. Commands that are terminal, or not motion,
   * are left alone and the reason says why.
   */
  async cancel(commandId: string): Promise<{ target: CommandStatus; stop: CommandStatus | null; reason: string | null } | undefined> {
    const c = this.journal.get(commandId);
    if (!c) return undefined;
    if (isTerminal(c.state)) return this.committed({ target: this.view(c), stop: null, reason: `already ${c.state}; nothing to cancel` });
    if (c.action !== 'stepper.move' && c.action !== 'stepper.home')
      return this.committed({ target: this.view(c), stop: null, reason: `${c.action} finishes in milliseconds on the device and cannot be recalled; wait for its result` });
    const stop = await this.submit({ device_id: c.device_id, action: 'stop', args: { axis: c.args.axis } });
    return this.committed({ target: this.status(commandId)!, stop, reason: stop.state === 'rejected' ? stop.detail : null });
  }

  /** v, once everything written so far (what v was read from included) is on disk. */
  private async committed<T>(v: T): Promise<T> {
    await this.journal.flushed();
    return v;
  }

  /** The newest commands of every device, newest first, as statuses. */
  recent(limit: number): CommandStatus[] {
    return this.journal.recent({ limit }).map((c) => this.view(c));
  }

  status(commandId: string): CommandStatus | undefined {
    const c = this.journal.get(commandId);
    return c ? this.view(c) : undefined;
  }

  history(commandId: string) {
    return this.journal.events(commandId);
  }

  /** Resolve with the status as soon as the command is terminal, or after `ms` with whatever it is then. */
  waitTerminal(commandId: string, ms: number, signal?: AbortSignal): Promise<CommandStatus | undefined> {
    return this.waitFor(commandId, (s) => s.terminal, ms, signal);
  }

  /** Resolve with the status as soon as `until` holds for it, or after `ms` (or an abort) with whatever it is then. */
  waitFor(commandId: string, until: (s: CommandStatus) => boolean, ms: number, signal?: AbortSignal): Promise<CommandStatus | undefined> {
    const now = this.status(commandId);
    if (!now || until(now) || ms <= 0) return this.committed(now);
    return new Promise((resolve) => {
      const stop = () => {
        this.off('change:' + commandId, onChange);
        this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
      };
      const done = () => {
        stop();
        // What it resolves with is on disk first; after a failed batch, what is on disk instead.
        const s = this.status(commandId);
        this.journal.flushed().then(
          () => resolve(s),
          () => resolve(this.status(commandId)),
        );
      };
      const onChange = (s: CommandStatus) => {
        if (!until(s)) return;
        // A change event is emitted only after its commit: this view is on disk already.
        stop();
        resolve(s);
      };
      const timer = this.clock.setTimeout(done, ms);
      this.on('change:' + commandId, onChange);
      signal?.addEventListener('abort', done);
    });
  }

  // ---- device events ----------------------------------------------------------------

  /**
   * A device came online. A new boot id fails everything it had in flight. The same boot id may be a
   * network blip or a reboot that repeated its id (Espruino's hwRand is a fixed sequence), so nothing
   * is re-sent blindly: each open command is first asked about (reconcile). Every open command was
   * sent to the boot this host saw last (a connection with any other boot ended it here), so its own
   * boot id is all there is to compare.
   */
  online(s: Session): void {
    const dev = s.dev!;
    for (const c of this.journal.open()) {
      if (c.device_id !== dev) continue;
      if (c.boot_id === s.boot) {
        void this.reconcile(c);
        continue;
      }
      this.finish(c, 'failed', {
        code: 'DEVICE_REBOOTED',
        detail: `device ${dev} restarted (boot ${c.boot_id} → ${s.boot}) while this command was in flight; its outcome was lost with the old boot and outputs are back in their power-on state. Read the device state before retrying.`,
      });
    }
  }

  /**
   * Ask the device about an open command of its current boot id and act on what it says:
   * - its uptime is shorter than the time since the command was sent: it restarted although the
   *   boot id is the same; the command's outcome was lost with that boot (never re-sent);
   * - running: it has it; the deadline gets a fresh window if it already passed;
   * - done: the stored result follows the state frame;
   * - unknown: the ring never forgets an unconfirmed request, so this boot never received it: re-sent
   *   (idempotent actions only), into a ring that will dedupe it.
   */
  private async reconcile(open: CommandRecord): Promise<void> {
    const id = open.command_id;
    const dev = open.device_id;
    // Its cmd has not been written yet: it will go out on this connection, and nothing may ask before it.
    // Past its bound it is being asked one last time already.
    if (this.unwritten.has(id) || this.atBound.has(id)) return;
    const wait = Math.max(this.opts.queryWaitMs, this.devices.rttMax(dev) * 3);
    const sentAt = open.sent_at;
    const answer = await this.devices.query(dev, open.request_id, wait);
    if (this.closed) return;
    const c = this.journal.get(id);
    if (!c || isTerminal(c.state) || c.sent_at !== sentAt) return;
    const s = this.devices.session(dev);
    if (!answer || !s) return; // the deadline (or the next reconnect) decides
    c.device_state = answer.s;
    // What is journaled next (a note, a re-send) happens now: its history event carries this time.
    c.device_state_at = c.updated_at = this.clock.now();
    if (this.restartedSince(c, answer.s.up)) return;
    const now = this.clock.now();
    // It was sent, so it has a deadline.
    const due = c.deadline_at! <= now;
    if (answer.rst === 'running') {
      // One fresh window per command, shared with expire(): a device that says "running" on every
      // reconnect does not keep a command open for ever.
      if (due && !this.runWaits.has(id)) {
        this.runWaits.add(id);
        const plan = planAction(this.devices.board(dev)!, c.action, c.args, this.devices.rttMax(dev), this.devices.state(dev));
        const ms = plan.ok ? plan.deadlineMs : this.devices.rttMax(dev) * 3;
        c.deadline_at = now + ms;
        c.updated_at = now;
        this.noted(c, `device still runs it after reconnecting; deadline extended by ${ms} ms`);
        this.clock.clearTimeout(this.waiting.get(id));
        this.waiting.delete(id);
        this.arm(id, ms);
      } else if (due) {
        this.finish(c, 'timeout', {
          code: 'TIMEOUT',
          detail: `deadline passed twice and device ${dev}, asked again after it reconnected, reports the command still running; the outcome is unknown`,
        });
      }
      return;
    }
    if (answer.rst === 'done') {
      // The stored result follows the state frame; if the deadline passed, give it a round trip.
      if (due) this.arm(id, this.devices.rttMax(dev) * 2);
      return;
    }
    if (c.state === 'sent' && !c.accepted && isActionName(c.action) && ACTIONS[c.action].idempotent && c.sends < MAX_SENDS) {
      c.sends++;
      const plan = planAction(this.devices.board(dev)!, c.action, c.args, this.devices.rttMax(dev), this.devices.state(dev));
      this.noted(c, `device ${dev} (same boot, up ${answer.s.up} ms) never received it; re-sent after reconnect (send #${c.sends} of at most ${MAX_SENDS}, same request_id)`);
      this.clock.clearTimeout(this.waiting.get(id));
      this.waiting.delete(id);
      return this.send(c, s, plan.ok ? plan.deadlineMs : 1000, c.sends);
    }
    // Acknowledged once, unknown now: the device lost it although its uptime says it did not restart.
    if (due) void this.expire(id);
  }

  /**
   * The device's uptime (ms, from its state) is shorter than the time since this command was sent:
   * it booted after that, whatever boot id it reports. Fails the command DEVICE_REBOOTED and says so.
   */
  private restartedSince(c: CommandRecord, upMs: number): boolean {
    if (c.sent_at === null) return false;
    const since = this.clock.now() - c.sent_at;
    if (!(upMs < since)) return false;
    this.finish(c, 'failed', {
      code: 'DEVICE_REBOOTED',
      detail: `device ${c.device_id} restarted after this command was sent although it reports the same boot id ${c.boot_id} (up ${upMs} ms, sent ${since} ms ago); whatever it did for this command was lost with that boot and the host cannot tell whether the hardware acted. Read the device state before retrying.`,
    });
    return true;
  }

  ack(s: Session, f: AckFrame): void {
    // A device frame's writes join this turn's group commit; its answers wait for that commit.
    this.journal.group(() => this.ackNow(s, f));
  }

  private ackNow(s: Session, f: AckFrame): void {
    const c = this.journal.byRequest(s.dev!, f.rid);
    if (!c || isTerminal(c.state)) return;
    const next: LifecycleState = f.st === 'running' ? 'running' : c.state === 'running' ? 'running' : 'accepted';
    const changed = next !== c.state;
    c.state = next;
    c.accepted = true;
    c.updated_at = this.clock.now();
    this.journal.update(c, changed);
    this.changed(c);
  }

  progress(s: Session, f: ProgressFrame): void {
    // A device frame's writes join this turn's group commit; its answers wait for that commit.
    this.journal.group(() => this.progressNow(s, f));
  }

  private progressNow(s: Session, f: ProgressFrame): void {
    const c = this.journal.byRequest(s.dev!, f.rid);
    if (!c || isTerminal(c.state)) return;
    const changed = c.state !== 'running';
    c.state = 'running';
    c.accepted = true;
    c.progress = f.pct;
    if (f.pos !== undefined) c.position = f.pos;
    c.updated_at = this.clock.now();
    this.journal.update(c, changed);
    this.changed(c);
  }

  result(s: Session, f: ResultFrame): void {
    // A device frame's writes join this turn's group commit; its answers wait for that commit.
    this.journal.group(() => this.resultNow(s, f));
  }

  private resultNow(s: Session, f: ResultFrame): void {
    const dev = s.dev!;
    this.devices.observe(dev, f.s);
    // Confirm first, whatever happens next: the device may drop it from its outbox once it is journaled or known.
    const c = this.journal.byRequest(dev, f.rid);
    if (!c) {
      // A device can send these at will: a few lines per device and window, then a count.
      this.limiter.hit('unknown_result ' + dev, (suppressed) =>
        this.log.warn({ evt: 'unknown_result', device_id: dev, rid: f.rid, ...(suppressed ? { suppressed } : {}) }, 'result for a request this host never sent'),
      );
      this.journal.afterCommit(() => s.sendRider({ t: 'rack', rid: f.rid }));
      return;
    }
    if (isTerminal(c.state)) {
      if (c.state === 'timeout' || c.state === 'failed') {
        c.updated_at = this.clock.now();
        this.noted(c, `late result from device ignored: ${f.st}${f.code ? ' ' + f.code : ''}${f.msg ? ': ' + f.msg : ''}`);
      }
      this.journal.afterCommit(() => s.sendRider({ t: 'rack', rid: f.rid }));
      return;
    }
    c.device_state = f.s;
    c.device_state_at = this.clock.now();
    const axis = f.s.axes?.find((a) => a.axis === c.args.axis);
    if (axis) c.position = axis.pos;
    if (f.st === 'completed' && (f.ver !== true || f.ev === 'none')) {
      // Defence in depth: the validator refuses such a frame, but "completed" is the one promise
      // agents act on, so the core checks it again, whatever reached it.
      const claim = `completed, evidence=${String(f.ev)}, verified=${String(f.ver)}${f.msg ? ': ' + f.msg : ''}`;
      this.log.warn({ evt: 'unproven_completion', device_id: dev, rid: f.rid, claim }, 'device claimed completed without verified evidence');
      this.finish(c, 'failed', {
        code: 'UNPROVEN_COMPLETION',
        detail: `device ${dev} claimed ${claim}; completed needs verified evidence, so the host records failed. The actuator state is unknown: read the device state before retrying.`,
        evidence: f.ev,
        verified: false,
        executed: true,
        accepted: true,
      });
      this.journal.afterCommit(() => s.sendRider({ t: 'rack', rid: f.rid }));
      return;
    }
    this.finish(c, f.st, {
      code: f.code,
      detail: f.msg ?? null,
      evidence: f.ev,
      verified: f.st === 'completed' && f.ver,
      executed: f.st === 'completed' || f.st === 'unverified' || f.st === 'failed',
      accepted: f.st !== 'rejected',
    });
    this.journal.afterCommit(() => s.sendRider({ t: 'rack', rid: f.rid }));
  }

  /** Re-arm deadlines of commands that were open when the host stopped. */
  recover(): void {
    for (const c of this.journal.open()) {
      if (c.deadline_at === null) {
        this.finish(c, 'timeout', { code: 'TIMEOUT', detail: 'the host stopped before this command was sent; nothing reached the device' });
        continue;
      }
      this.arm(c.command_id, c.deadline_at - this.clock.now());
      // The first deadline is not journaled (an extension moves deadline_at): the board's, with the round
      // trip this new host assumes before measuring one, stands in for it.
      const board = this.devices.board(c.device_id);
      const plan = board ? planAction(board, c.action, c.args, this.devices.rttMax(c.device_id), null) : undefined;
      this.recovered.add(c.command_id);
      this.bound(c, plan?.ok ? plan.deadlineMs : c.deadline_at - (c.sent_at ?? c.submitted_at));
    }
  }

  /**
   * A batch failed to commit and was rolled back: the journal holds what was on disk before it. A
   * command whose terminal write was lost is open again with no timer of ours: give it its deadline
   * back. Frames and answers of the batch were never sent.
   */
  rolledBack(e: Error): void {
    this.log.error({ evt: 'journal_commit_failed', err: e.message }, 'journal batch rolled back; its frames and answers were withheld');
    for (const c of this.journal.open()) {
      // Every open row has its deadline (a submit writes it sent; recover() ended older rows without one).
      if (this.deadlines.has(c.command_id) || this.waiting.has(c.command_id) || this.unwritten.has(c.command_id)) continue;
      this.arm(c.command_id, c.deadline_at! - this.clock.now());
    }
  }

  close(): void {
    this.closed = true;
    for (const t of this.deadlines.values()) this.clock.clearTimeout(t);
    for (const t of this.waiting.values()) this.clock.clearTimeout(t);
    for (const t of this.bounds.values()) this.clock.clearTimeout(t);
    this.deadlines.clear();
    this.waiting.clear();
    this.bounds.clear();
  }

  // ---- internals -------------------------------------------------------------------

  private send(c: CommandRecord, s: Session, deadlineMs: number, sends = 1): void {
    this.markSent(c, s, deadlineMs, sends);
    this.transmit(c, s, deadlineMs);
  }

  /** Journal the command as sent again (it is re-sent only while still `sent`; the frame goes out only after this is committed: transmit). */
  private markSent(c: CommandRecord, s: Session, deadlineMs: number, sends = 1): void {
    this.sentFields(c, s, deadlineMs, sends);
    this.noted(c, `deadline ${deadlineMs} ms`);
  }

  private sentFields(c: CommandRecord, s: Session, deadlineMs: number, sends = 1): void {
    const now = this.clock.now();
    c.state = 'sent';
    c.boot_id = s.boot!;
    c.sends = sends;
    c.sent_at = now;
    c.deadline_at = now + deadlineMs;
    c.updated_at = now;
  }

  /**
   * Write the cmd once its journal row is on disk, and only then start its deadline: the deadline times
   * the frame, so however long the commit and its fsync take, the state query that follows a deadline
   * is asked after the cmd, never before it. The frame goes on the device's connection of that moment
   * (the same boot); with none, nothing is written and the deadline decides (a reconnect re-sends).
   */
  private transmit(c: CommandRecord, _s: Session, deadlineMs: number): void {
    const frame = { t: 'cmd', rid: c.request_id, a: c.action as ActionName, p: c.args } as const;
    const id = c.command_id;
    const sentAt = c.sent_at;
    const boot = c.boot_id;
    const dev = c.device_id;
    this.unwritten.add(id);
    // The deadline of an earlier send no longer applies: this one starts when this frame is written.
    this.clock.clearTimeout(this.deadlines.get(id));
    this.deadlines.delete(id);
    this.journal.afterCommit(
      () => {
        this.unwritten.delete(id);
        if (this.closed) return;
        const cur = this.journal.get(id);
        // Ended, or sent again, meanwhile: this frame is not the one to time.
        if (!cur || isTerminal(cur.state) || cur.sent_at !== sentAt) return;
        const s = this.devices.session(dev);
        const ok = !!s && s.boot === boot;
        if (ok) s.send(frame);
        this.wroteOn.set(id, ok ? s : null);
        this.arm(id, deadlineMs);
        this.bound(cur, deadlineMs);
      },
      () => this.unwritten.delete(id),
    );
    this.changed(c);
  }

  /**
   * Arm the absolute bound of a command, once per host process: from its first write (a slow disk before
   * it is not the link's doing), or from the recovery of a command a restarted host found open.
   */
  private bound(c: CommandRecord, deadlineMs: number): void {
    const id = c.command_id;
    if (this.bounds.has(id)) return;
    const wait = Math.max(this.opts.queryWaitMs, this.devices.rttMax(c.device_id) * 3);
    const ms = absoluteBoundMs(deadlineMs, wait, this.opts.offlineGraceMs);
    const from = this.clock.now();
    this.bounds.set(
      id,
      this.clock.setTimeout(() => this.boundReached(id, ms, deadlineMs, wait), ms),
    );
  }

  /**
   * The bound passed. A deadline of the command that is still running (it was re-sent or got its one
   * fresh window late) is let run out first; then the device is asked one last time: its stored result
   * still counts, anything else ends the command `timeout` saying so.
   */
  private boundReached(id: string, ms: number, deadlineMs: number, wait: number): void {
    this.bounds.delete(id);
    const cur = this.journal.get(id);
    if (!cur || isTerminal(cur.state)) return;
    const later = (cur.deadline_at ?? 0) + wait - this.clock.now();
    if (later > 0 && this.deadlines.has(id)) {
      this.bounds.set(id, this.clock.setTimeout(() => this.boundReached(id, ms, deadlineMs, wait), later));
      return;
    }
    this.atBound.set(
      id,
      `no terminal evidence within ${ms} ms of its ${this.recovered.has(id) ? 'recovery by this host after a restart' : 'first send'} (the absolute bound: 3 × its ${deadlineMs} ms deadline, 6 × ${wait} ms of state queries and ${this.opts.offlineGraceMs} ms of offline grace; ${cur.sends} send${cur.sends === 1 ? '' : 's'})`,
    );
    this.clock.clearTimeout(this.deadlines.get(id));
    this.deadlines.delete(id);
    this.clock.clearTimeout(this.waiting.get(id));
    this.waiting.delete(id);
    void this.expire(id);
  }

  private arm(id: string, ms: number): void {
    this.clock.clearTimeout(this.deadlines.get(id));
    this.deadlines.set(id, this.clock.setTimeout(() => void this.expire(id), Math.max(0, ms)));
  }

  /** The deadline passed: ask the device for its real state before deciding anything. */
  private async expire(id: string): Promise<void> {
    // (Never after close(): it cleared every timer that leads here.)
    this.deadlines.delete(id);
    let c = this.journal.get(id);
    if (!c || isTerminal(c.state)) return; // (finish() cleared the timers that lead here)
    // Sent again and not written yet: its write arms the deadline; nothing may ask before it.
    if (this.unwritten.has(id)) return;
    const dev = c.device_id;
    // At the absolute bound the device is asked one last time and nothing more is waited for but its result.
    const last = this.atBound.get(id);
    if (!this.devices.session(dev)) {
      if (last !== undefined) return this.finish(c, 'timeout', { code: 'TIMEOUT', detail: `${last}; device ${dev} is offline and could not be asked; the outcome is unknown` });
      return this.awaitDevice(c, 'deadline passed while the device is offline; waiting for it to reconnect');
    }
    const wait = Math.max(this.opts.queryWaitMs, this.devices.rttMax(dev) * 3);
    const sentAt = c.sent_at;
    const wasAccepted = c.accepted;
    // Asked on the connection that carried the cmd: the device read the cmd before this question.
    const sameLink = this.wroteOn.get(id) === this.devices.session(dev);
    const answer = await this.devices.query(dev, c.request_id, wait);
    if (this.closed) return;
    c = this.journal.get(id);
    if (!c || isTerminal(c.state)) return;
    // Re-sent while we asked (a reconnect): the answer is about the old send; the new one has its own deadline.
    if (c.sent_at !== sentAt) return;
    // No answer: the link is probably dead even if its heartbeat has not timed out yet.
    if (!answer) {
      if (last !== undefined) return this.finish(c, 'timeout', { code: 'TIMEOUT', detail: `${last}; device ${dev} did not answer a state query within ${wait} ms; the outcome is unknown` });
      return this.awaitDevice(c, `device did not answer a state query within ${wait} ms; waiting for it to reconnect`);
    }
    c.device_state = answer.s;
    // What is journaled next (a note, a re-send) happens now: its history event carries this time.
    c.device_state_at = c.updated_at = this.clock.now();
    if (this.restartedSince(c, answer.s.up)) return;
    if (answer.rst === 'done' && (this.doneWaits.get(id) ?? 0) < (last !== undefined ? 1 : 3)) {
      // The device re-sends the stored result right after its state frame; give it a round trip.
      this.doneWaits.set(id, (this.doneWaits.get(id) ?? 0) + 1);
      this.arm(id, this.devices.rttMax(dev) * 2);
      this.noted(c, 'device says done after the deadline; waiting for its result frame');
      return;
    }
    // "unknown" although the device acknowledged it (before or since the answer): the answer is older than
    // the device's own record (a frame that crossed it), and the acknowledgement outranks it.
    const staleUnknown = answer.rst === 'unknown' && (c.accepted || wasAccepted);
    if ((answer.rst === 'running' || staleUnknown) && !this.runWaits.has(id) && last === undefined) {
      // It has it and is working on it (a delayed frame, a slow link): one fresh execution window
      // before giving up, so a result that is on its way is not replaced by a timeout.
      this.runWaits.add(id);
      const plan = planAction(this.devices.board(dev)!, c.action, c.args, this.devices.rttMax(dev), this.devices.state(dev));
      const ms = plan.ok ? plan.deadlineMs : wait;
      c.deadline_at = this.clock.now() + ms;
      c.updated_at = this.clock.now();
      this.noted(
        c,
        staleUnknown
          ? `deadline passed; the device answered "unknown" but had acknowledged it, so the acknowledgement stands; waiting ${ms} ms more once`
          : `deadline passed with the device still running it; waiting ${ms} ms more once`,
      );
      return this.arm(id, ms);
    }
    if (answer.rst === 'unknown' && !staleUnknown && last === undefined && c.state === 'sent' && isActionName(c.action) && ACTIONS[c.action].idempotent && c.sends < MAX_SENDS) {
      // The link that carried the answer may have ended since (chaos seed 2619): re-send on the next one.
      const s = this.devices.session(dev);
      if (!s) return this.awaitDevice(c, 'device never received it and went offline after saying so; waiting for it to reconnect');
      c.sends++;
      this.noted(c, `device never received it; re-sent with the same request_id (send #${c.sends} of at most ${MAX_SENDS})`);
      const plan = planAction(this.devices.board(dev)!, c.action, c.args, this.devices.rttMax(dev), this.devices.state(dev));
      return this.send(c, s, plan.ok ? plan.deadlineMs : 1000, c.sends);
    }
    const why =
        answer.rst === 'running'
          ? `deadline passed and device ${dev} reports the command still running; the outcome is unknown`
          : answer.rst === 'done'
            ? `device ${dev} says the command is done but its result never arrived; the outcome is unknown`
            : staleUnknown
              ? `deadline passed twice; device ${dev} acknowledged request ${c.request_id} but later answered that it has no record of it; the outcome is unknown`
              : `deadline passed and device ${dev} has no record of request ${c.request_id} in its current boot (up ${answer.s.up} ms): ${
                  this.wroteOn.get(id) === null
                    ? 'its cmd was never written (the device had no connection when its journal row was committed)'
                    : sameLink
                      ? 'it was asked after the cmd on the connection that carried it, so it did not take the command'
                      : 'the connection that carried the cmd dropped before the device read it, so it never took the command'
                } (${c.sends} send${c.sends === 1 ? '' : 's'})`;
    this.finish(c, 'timeout', { code: 'TIMEOUT', detail: last !== undefined ? `${last}; ${why}` : why });
  }

  /** The device's real state cannot be read now: wait (bounded) for it to come back and be asked again. */
  private awaitDevice(c: CommandRecord, note: string): void {
    const id = c.command_id;
    const dev = c.device_id;
    if (this.waiting.has(id)) return;
    const grace = this.opts.offlineGraceMs;
    const was = this.devices.session(dev);
    this.waiting.set(
      id,
      this.clock.setTimeout(() => {
        this.waiting.delete(id);
        const cur = this.journal.get(id);
        if (!cur || isTerminal(cur.state)) return;
        // The device reconnected during the grace (its reconnect's query may still be on the way, or was
        // lost): it can be asked now, so ask once more rather than end the command while it may hold the result.
        const now = this.devices.session(dev);
        if (now && now !== was && !this.graceAsks.has(id)) {
          this.graceAsks.add(id);
          void this.expire(id);
          return;
        }
        this.finish(cur, 'timeout', {
          code: 'TIMEOUT',
          detail: `deadline passed and device ${dev} could not be asked for its real state for ${grace} ms more; the outcome is unknown`,
        });
      }, grace),
    );
    c.updated_at = this.clock.now();
    this.noted(c, note);
  }

  /** Journal the record with a note in its history, its state unchanged. */
  private noted(c: CommandRecord, note: string): void {
    this.journal.update(c, false, note);
  }

  private finish(
    c: CommandRecord,
    state: LifecycleState,
    r: { code?: ErrorCode; detail?: string | null; evidence?: CommandRecord['evidence']; verified?: boolean; executed?: boolean; accepted?: boolean },
  ): void {
    const now = this.clock.now();
    c.state = state;
    c.error_code = r.code ?? null;
    c.detail = r.detail ?? null;
    c.evidence = r.evidence ?? 'none';
    c.verified = r.verified ?? false;
    c.executed = r.executed ?? false;
    if (r.accepted !== undefined) c.accepted = c.accepted || r.accepted;
    c.updated_at = now;
    c.terminal_at = now;
    this.journal.update(c, true, c.detail);
    this.clock.clearTimeout(this.deadlines.get(c.command_id));
    this.deadlines.delete(c.command_id);
    this.clock.clearTimeout(this.waiting.get(c.command_id));
    this.waiting.delete(c.command_id);
    this.doneWaits.delete(c.command_id);
    this.runWaits.delete(c.command_id);
    this.graceAsks.delete(c.command_id);
    this.wroteOn.delete(c.command_id);
    this.recovered.delete(c.command_id);
    this.atBound.delete(c.command_id);
    this.clock.clearTimeout(this.bounds.get(c.command_id));
    this.bounds.delete(c.command_id);
    this.logTerminal(c);
    this.changed(c);
  }

  private record(input: SubmitInput, now: number): CommandRecord {
    return {
      ...blankCommand(),
      command_id: newCommandId(),
      device_id: input.device_id,
      request_id: input.request_id ?? newRequestId(),
      action: input.action,
      args: input.args,
      submitted_at: now,
      updated_at: now,
    };
  }

  /** Journal a command that is refused before anything is sent. */
  private rejectNew(input: SubmitInput, code: ErrorCode, detail: string, keepRequestId: boolean): CommandRecord {
    const c = this.record({ ...input, request_id: keepRequestId ? input.request_id : undefined }, this.clock.now());
    this.journal.insert(c);
    this.logSubmitted(c);
    this.finish(c, 'rejected', { code, detail });
    return c;
  }

  /** Tell listeners (waiters, MCP resources, logging) of a change once it is on disk. */
  private changed(c: CommandRecord): void {
    const v = this.view(c);
    this.journal.afterCommit(() => {
      this.emit('change:' + c.command_id, v);
      // Every change, for the MCP journal resources and log notifications.
      this.emit('change', v);
    });
  }

  private lastSeenText(dev: string): string {
    const v = this.devices.view(dev);
    return v?.last_seen ? ` (last seen ${v.last_seen}, ${v.last_seen_age_ms} ms ago)` : ' (never connected)';
  }

  private logSubmitted(c: CommandRecord): void {
    if (!this.log.isLevelEnabled('info')) return;
    const line = { evt: 'command', phase: 'submitted', command_id: c.command_id, request_id: c.request_id, device_id: c.device_id, action: c.action, args: c.args };
    this.journal.afterCommit(() => this.log.info(line, 'command submitted'));
  }

  private logTerminal(c: CommandRecord): void {
    if (!this.log.isLevelEnabled('info')) return;
    const line = {
        evt: 'command',
        phase: 'terminal',
        command_id: c.command_id,
        device_id: c.device_id,
        state: c.state,
        evidence: c.evidence,
        verified: c.verified,
        error_code: c.error_code,
        elapsed_ms: c.terminal_at! - c.submitted_at,
      detail: c.detail,
    };
    this.journal.afterCommit(() => this.log.info(line, 'command ' + line.state));
  }

  view(c: CommandRecord): CommandStatus {
    const now = this.clock.now();
    const terminal = isTerminal(c.state);
    const end = c.terminal_at ?? now;
    return {
      command_id: c.command_id,
      request_id: c.request_id,
      device_id: c.device_id,
      action: c.action,
      args: c.args,
      state: c.state,
      terminal,
      accepted: c.accepted,
      executed: c.executed,
      verified: c.verified,
      evidence: c.evidence,
      error_code: c.error_code,
      detail: c.detail,
      submitted_at: isoTime(c.submitted_at),
      terminal_at: c.terminal_at === null ? null : isoTime(c.terminal_at),
      elapsed_ms: end - c.submitted_at,
      deadline_ms: c.deadline_at === null ? null : c.deadline_at - c.submitted_at,
      estimated_seconds: c.estimated_ms / 1000,
      estimated_remaining_seconds: terminal ? null : Math.max(0, c.submitted_at + c.estimated_ms - now) / 1000,
      progress_pct: c.progress,
      position_mm: c.position,
      device_state: c.device_state,
      device_state_observed_at: c.device_state_at === null ? null : isoTime(c.device_state_at),
      device_state_age_ms: c.device_state_at === null ? null : now - c.device_state_at,
    };
  }
}


function sameArgs(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
}
