// The deadline watch: from the moment a command's cmd is written until it is terminal, the timers that
// decide when the host asks the device about it, what it does with the answer (wait, re-send, extend
// once, end `timeout`), and the bound no command outlives. One retry policy, stated here:
// - a command is sent at most MAX_SENDS times (idempotent actions only, the same request_id), over
//   deadlines and reconnects alike;
// - a device that says it is still running gets one fresh window, deadlines and reconnects together;
// - a device that says "done" gets DONE_WAITS round trips for its stored result to arrive;
// - the absolute bound (absoluteBoundMs) ends whatever is still open, after one last question.
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import { ACTIONS, isActionName, isTerminal, type ActionName, type ErrorCode, type LifecycleState } from '@proofrig/protocol';
import type { Logger } from 'pino';
import type { Devices } from './devices.js';
import type { CommandRecord } from './journal/records.js';
import type { Journal } from './journal/journal.js';
import type { Session } from './session.js';
import { planAction } from './plan.js';

/** Sends of one command at most, first send included, across deadlines and reconnects alike. */
export const MAX_SENDS = 2;
/** Round trips a device that says "done" gets for its stored result to arrive. */
export const DONE_WAITS = 3;

/**
 * The absolute bound of an open command, from its first send (or from a restarted host's recovery of
 * it): room for every path that ends a command on evidence (a re-send and the one fresh window a device
 * reporting it still running gets: three deadlines; the state queries after deadlines and "done"
 * answers: six query waits; one offline grace). Whatever the link does (cut after every cmd, cmd frames
 * dropped), a command still open then is asked one last time and ends `timeout`.
 */
export function absoluteBoundMs(deadlineMs: number, queryWaitMs: number, offlineGraceMs: number): number {
  return 3 * deadlineMs + 6 * queryWaitMs + offlineGraceMs;
}

export interface WatchOptions {
  /** After a deadline with the device offline, wait this long for it to come back and answer before deciding timeout. */
  offlineGraceMs: number;
  /** Longest wait for the device's answer to a post-deadline state query (at least three round trips). */
  queryWaitMs: number;
  /** Whether a connection of this device is in its handshake now (it is back, not yet proven). */
  connecting?: (dev: string) => boolean;
  /** How long a handshake may take. */
  handshakeMs?: number;
}

export interface Outcome {
  code?: ErrorCode;
  detail?: string | null;
  evidence?: CommandRecord['evidence'];
  verified?: boolean;
  executed?: boolean;
  accepted?: boolean;
}

/** What the watch needs of the command service: ending a command, noting a step, telling listeners. */
export interface WatchOwner {
  readonly log: Logger;
  finish(c: CommandRecord, state: LifecycleState, r: Outcome): void;
  noted(c: CommandRecord, note: string): void;
  changed(c: CommandRecord): void;
}

export class DeadlineWatch {
  private deadlines = new Map<string, TimerHandle>();
  /** Commands whose deadline passed while their device was offline, with the grace timer. */
  private waiting = new Map<string, TimerHandle>();
  private closed = false;
  /** How often a device said "done" after the deadline without its result arriving. */
  private doneWaits = new Map<string, number>();
  /** Commands that had their one fresh window because the device said it was still running them. */
  private runWaits = new Set<string>();
  /** Commands whose offline grace ran out with their device back on a new connection: asked once more, not ended blind. */
  private askedAfterGrace = new Set<string>();
  /** Commands whose grace ran out while their device was in a handshake: that handshake was waited for, once. */
  private handshakeWaits = new Set<string>();
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

  constructor(
    private readonly journal: Journal,
    private readonly devices: Devices,
    private readonly clock: Clock,
    private readonly opts: WatchOptions,
    private readonly owner: WatchOwner,
  ) {}

  /** The command ended: none of its timers or notes are needed any more. */
  ended(id: string): void {
    this.clock.clearTimeout(this.deadlines.get(id));
    this.deadlines.delete(id);
    this.clock.clearTimeout(this.waiting.get(id));
    this.waiting.delete(id);
    this.clock.clearTimeout(this.bounds.get(id));
    this.bounds.delete(id);
    this.doneWaits.delete(id);
    this.runWaits.delete(id);
    this.askedAfterGrace.delete(id);
    this.handshakeWaits.delete(id);
    this.wroteOn.delete(id);
    this.recovered.delete(id);
    this.atBound.delete(id);
  }

  /** How long to wait for the device's answer to a state query: the configured wait, at least three round trips. */
  private queryWait(dev: string): number {
    return Math.max(this.opts.queryWaitMs, this.devices.rttMax(dev) * 3);
  }

  /** The command's deadline from the timeout formula, now; a query wait when the board no longer accepts it. */
  private deadlineFor(c: CommandRecord): number {
    const board = this.devices.board(c.device_id);
    const plan = board ? planAction(board, c.action, c.args, this.devices.rttMax(c.device_id), this.devices.state(c.device_id)) : undefined;
    return plan?.ok ? plan.deadlineMs : this.queryWait(c.device_id);
  }

  /**
   * Write the cmd once its journal row is on disk, and only then start its deadline: the deadline times
   * the frame, so however long the commit and its fsync take, the state query that follows a deadline
   * is asked after the cmd, never before it. The frame goes on the device's connection of that moment
   * (the same boot); with none, nothing is written and the deadline decides (a reconnect re-sends).
   */
  transmit(c: CommandRecord, deadlineMs: number): void {
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
    this.owner.changed(c);
  }

  send(c: CommandRecord, s: Session, deadlineMs: number, sends = 1): void {
    this.markSent(c, s, deadlineMs, sends);
    this.transmit(c, deadlineMs);
  }

  /** Journal the command as sent again (it is re-sent only while still `sent`; the frame goes out only after this is committed: transmit). */
  private markSent(c: CommandRecord, s: Session, deadlineMs: number, sends = 1): void {
    this.sentFields(c, s, deadlineMs, sends);
    this.owner.noted(c, `deadline ${deadlineMs} ms`);
  }

  sentFields(c: CommandRecord, s: Session, deadlineMs: number, sends = 1): void {
    const now = this.clock.now();
    c.state = 'sent';
    c.boot_id = s.boot!;
    c.sends = sends;
    c.sent_at = now;
    c.deadline_at = now + deadlineMs;
    c.updated_at = now;
  }

  private arm(id: string, ms: number): void {
    this.clock.clearTimeout(this.deadlines.get(id));
    this.deadlines.set(id, this.clock.setTimeout(() => void this.expire(id), Math.max(0, ms)));
  }

  /**
   * Arm the absolute bound of a command, once per host process: from its first write (a slow disk before
   * it is not the link's doing), or from the recovery of a command a restarted host found open.
   */
  private bound(c: CommandRecord, deadlineMs: number): void {
    const id = c.command_id;
    if (this.bounds.has(id)) return;
    const wait = this.queryWait(c.device_id);
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
      if (last !== undefined) return this.owner.finish(c, 'timeout', { code: 'TIMEOUT', detail: `${last}; device ${dev} is offline and could not be asked; the outcome is unknown` });
      return this.awaitDevice(c, 'deadline passed while the device is offline; waiting for it to reconnect');
    }
    const wait = this.queryWait(dev);
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
      if (last !== undefined) return this.owner.finish(c, 'timeout', { code: 'TIMEOUT', detail: `${last}; device ${dev} did not answer a state query within ${wait} ms; the outcome is unknown` });
      return this.awaitDevice(c, `device did not answer a state query within ${wait} ms; waiting for it to reconnect`);
    }
    c.device_state = answer.s;
    // What is journaled next (a note, a re-send) happens now: its history event carries this time.
    c.device_state_at = c.updated_at = this.clock.now();
    if (this.restartedSince(c, answer.s.up)) return;
    if (answer.rst === 'done' && (this.doneWaits.get(id) ?? 0) < (last !== undefined ? 1 : DONE_WAITS)) {
      // The device re-sends the stored result right after its state frame; give it a round trip.
      this.doneWaits.set(id, (this.doneWaits.get(id) ?? 0) + 1);
      this.arm(id, this.devices.rttMax(dev) * 2);
      this.owner.noted(c, 'device says done after the deadline; waiting for its result frame');
      return;
    }
    // "unknown" although the device acknowledged it (before or since the answer): the answer is older than
    // the device's own record (a frame that crossed it), and the acknowledgement outranks it.
    const staleUnknown = answer.rst === 'unknown' && (c.accepted || wasAccepted);
    if ((answer.rst === 'running' || staleUnknown) && !this.runWaits.has(id) && last === undefined) {
      // It has it and is working on it (a delayed frame, a slow link): one fresh execution window
      // before giving up, so a result that is on its way is not replaced by a timeout.
      this.runWaits.add(id);
      const ms = this.deadlineFor(c);
      c.deadline_at = this.clock.now() + ms;
      c.updated_at = this.clock.now();
      this.owner.noted(
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
      this.owner.noted(c, `device never received it; re-sent with the same request_id (send #${c.sends} of at most ${MAX_SENDS})`);
      return this.send(c, s, this.deadlineFor(c), c.sends);
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
    this.owner.finish(c, 'timeout', { code: 'TIMEOUT', detail: last !== undefined ? `${last}; ${why}` : why });
  }

  /** The device's real state cannot be read now: wait (bounded) for it to come back and be asked again. */
  private awaitDevice(c: CommandRecord, note: string): void {
    const id = c.command_id;
    const dev = c.device_id;
    if (this.waiting.has(id)) return;
    const grace = this.opts.offlineGraceMs;
    const was = this.devices.session(dev);
    this.waiting.set(id, this.clock.setTimeout(() => this.graceEnded(id, dev, grace, was), grace));
    c.updated_at = this.clock.now();
    this.owner.noted(c, note);
  }

  /** The offline grace (or the wait for a handshake after it) ran out: ask once more if the device is back, else timeout. */
  private graceEnded(id: string, dev: string, grace: number, was: Session | undefined): void {
    this.waiting.delete(id);
    const cur = this.journal.get(id);
    if (!cur || isTerminal(cur.state)) return;
    // The device reconnected during the grace (its reconnect's query may still be on the way, or was
    // lost): it can be asked now, so ask once more rather than end the command while it may hold the result.
    const now = this.devices.session(dev);
    if (now && now !== was && !this.askedAfterGrace.has(id)) {
      this.askedAfterGrace.add(id);
      void this.expire(id);
      return;
    }
    // Back, but still proving itself: its handshake (bounded) decides, then it is asked as any reconnect is.
    if (!now && this.opts.connecting?.(dev) && !this.handshakeWaits.has(id)) {
      this.handshakeWaits.add(id);
      this.waiting.set(id, this.clock.setTimeout(() => this.graceEnded(id, dev, grace, was), this.opts.handshakeMs ?? 5000));
      return;
    }
    this.owner.finish(cur, 'timeout', {
      code: 'TIMEOUT',
      detail: `deadline passed and device ${dev} could not be asked for its real state for ${grace} ms more; the outcome is unknown`,
    });
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
  async reconcile(open: CommandRecord): Promise<void> {
    const id = open.command_id;
    const dev = open.device_id;
    // Its cmd has not been written yet: it will go out on this connection, and nothing may ask before it.
    // Past its bound it is being asked one last time already.
    if (this.unwritten.has(id) || this.atBound.has(id)) return;
    const wait = this.queryWait(dev);
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
        const ms = this.deadlineFor(c);
        c.deadline_at = now + ms;
        c.updated_at = now;
        this.owner.noted(c, `device still runs it after reconnecting; deadline extended by ${ms} ms`);
        this.clock.clearTimeout(this.waiting.get(id));
        this.waiting.delete(id);
        this.arm(id, ms);
      } else if (due) {
        this.owner.finish(c, 'timeout', {
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
      this.owner.noted(c, `device ${dev} (same boot, up ${answer.s.up} ms) never received it; re-sent after reconnect (send #${c.sends} of at most ${MAX_SENDS}, same request_id)`);
      this.clock.clearTimeout(this.waiting.get(id));
      this.waiting.delete(id);
      return this.send(c, s, this.deadlineFor(c), c.sends);
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
    this.owner.finish(c, 'failed', {
      code: 'DEVICE_REBOOTED',
      detail: `device ${c.device_id} restarted after this command was sent although it reports the same boot id ${c.boot_id} (up ${upMs} ms, sent ${since} ms ago); whatever it did for this command was lost with that boot and the host cannot tell whether the hardware acted. Read the device state before retrying.`,
    });
    return true;
  }

  /** Re-arm deadlines of commands that were open when the host stopped. */
  recover(): void {
    for (const c of this.journal.open()) {
      if (c.deadline_at === null) {
        this.owner.finish(c, 'timeout', { code: 'TIMEOUT', detail: 'the host stopped before this command was sent; nothing reached the device' });
        continue;
      }
      this.arm(c.command_id, c.deadline_at - this.clock.now());
      // The first deadline is not journaled (an extension moves deadline_at): the board's, with the round
      // trip this new host assumes before measuring one, stands in for it.
      this.recovered.add(c.command_id);
      this.bound(c, this.deadlineFor(c));
    }
  }

  /**
   * A batch failed to commit and was rolled back: the journal holds what was on disk before it. A
   * command whose terminal write was lost is open again with no timer of ours: give it its deadline
   * back. Frames and answers of the batch were never sent.
   */
  rolledBack(e: Error): void {
    this.owner.log.error({ evt: 'journal_commit_failed', err: e.message }, 'journal batch rolled back; its frames and answers were withheld');
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
}
