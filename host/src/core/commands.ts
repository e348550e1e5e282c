// The command service: a submit's admission and dedupe, the device's ack, progress and result frames,
// and the one place a command reaches its terminal state (finish), exactly once. The lifecycle,
// journaled at every step:
//   submitted → sent → accepted → running → completed | unverified | failed | rejected | timeout | cancelled
// When the device is asked about a command, and what its answers do, is the deadline watch's.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { isTerminal, type AckFrame, type ErrorCode, type LifecycleState, type ProgressFrame, type ResultFrame } from '@proofrig/protocol';
import { kindOf } from '@proofrig/protocol/kinds';
import type { Clock } from '@proofrig/protocol/clock';
import type { Devices } from './devices.js';
import { blankCommand, type CommandRecord } from './journal/records.js';
import { momentRefusal } from './journal/schema.js';
import type { Journal } from './journal/journal.js';
import type { Session } from './session.js';
import { newCommandId, newRequestId } from './ids.js';
import { planAction } from './plan.js';
import { LogLimiter } from './log-limit.js';
import { faultNotReadSince, motionInFlight, sameArgs } from './admission.js';
import { commandView, type CommandStatus, type SubmitInput } from './command-view.js';
import { DeadlineWatch, type Outcome, type WatchOptions } from './deadline-watch.js';

export class Commands extends EventEmitter {
  /** The timers that decide when the device is asked about a command, and the bound none outlives. */
  readonly watch: DeadlineWatch;
  /** Warnings a device can provoke at will (a result for a request never sent), limited per device. */
  private readonly limiter: LogLimiter;

  constructor(
    private readonly journal: Journal,
    private readonly devices: Devices,
    private readonly clock: Clock,
    readonly log: Logger,
    opts: WatchOptions,
  ) {
    super();
    this.limiter = new LogLimiter(clock);
    this.watch = new DeadlineWatch(journal, devices, clock, opts, this);
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
    const unread = faultNotReadSince(this.journal, this.devices, dev, input.action, input.args);
    if (unread) return this.view(this.rejectNew(input, 'STATE_READ_REQUIRED', unread, true));
    const running = motionInFlight(this.journal, dev, input.action, input.args);
    if (running) return this.view(this.rejectNew(input, 'BUSY', running, true));

    const c = this.record(input, now);
    c.estimated_ms = plan.estimatedMs;
    // submitted and sent land together, in this turn's batch, as one row already sent with both steps
    // in its history; the frame goes out after the commit.
    this.watch.sentFields(c, session, plan.deadlineMs);
    this.journal.insert(c, null, [
      { at: now, state: 'submitted', note: null },
      { at: c.sent_at!, state: 'sent', note: `deadline ${plan.deadlineMs} ms` },
    ]);
    this.logSubmitted(c);
    this.watch.transmit(c, plan.deadlineMs);
    return this.view(c);
  }

  /**
   * Cancel a motion command by stopping its axis. Commands that are terminal, or not motion,
   * are left alone and the reason says why.
   */
  async cancel(commandId: string): Promise<{ target: CommandStatus; stop: CommandStatus | null; reason: string | null } | undefined> {
    const c = this.journal.get(commandId);
    if (!c) return undefined;
    if (isTerminal(c.state)) return this.committed({ target: this.view(c), stop: null, reason: `already ${c.state}; nothing to cancel` });
    const how = kindOf(c.action)?.cancel?.(c.args);
    if (!how) return this.committed({ target: this.view(c), stop: null, reason: `${c.action} finishes in milliseconds on the device and cannot be recalled; wait for its result` });
    const stop = await this.submit({ device_id: c.device_id, action: how.action, args: how.args });
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
        void this.watch.reconcile(c);
        continue;
      }
      this.finish(c, 'failed', {
        code: 'DEVICE_REBOOTED',
        detail: `device ${dev} restarted (boot ${c.boot_id} → ${s.boot}) while this command was in flight; its outcome was lost with the old boot and outputs are back in their power-on state. Read the device state before retrying.`,
      });
    }
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
      this.journal.afterCommit(() => s.sendWithNext({ t: 'rack', rid: f.rid }));
      return;
    }
    if (isTerminal(c.state)) {
      if (c.state === 'timeout' || c.state === 'failed') {
        c.updated_at = this.clock.now();
        this.noted(c, `late result from device ignored: ${f.st}${f.code ? ' ' + f.code : ''}${f.msg ? ': ' + f.msg : ''}`);
      }
      this.journal.afterCommit(() => s.sendWithNext({ t: 'rack', rid: f.rid }));
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
      this.journal.afterCommit(() => s.sendWithNext({ t: 'rack', rid: f.rid }));
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
    this.journal.afterCommit(() => s.sendWithNext({ t: 'rack', rid: f.rid }));
  }

  // ---- internals -------------------------------------------------------------------

  /** Journal the record with a note in its history, its state unchanged. */
  noted(c: CommandRecord, note: string): void {
    this.journal.update(c, false, note);
  }

  finish(
    c: CommandRecord,
    state: LifecycleState,
    r: Outcome,
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
    this.watch.ended(c.command_id);
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
  changed(c: CommandRecord): void {
    const v = this.view(c);
    this.journal.afterCommit(() => {
      this.emit('change:' + c.command_id, v);
      // Every change, for the MCP journal resources and log notifications.
      this.emit('change', v);
    });
  }

  /** What get_action_status shows of a record, now. */
  view(c: CommandRecord): CommandStatus {
    return commandView(c, this.clock.now());
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

}
