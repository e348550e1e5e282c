// One device connection: the hello → challenge → auth → ok handshake, liveness, and routing of
// validated frames. A device that cannot prove its per-device secret is refused; the host proves
// the secret back in its `ok`; the secret itself never crosses the link and is never logged.
// After the handshake every frame both ways is sealed (session key MAC + per-direction counter,
// @proofrig/protocol seal.ts); one that is not the next sealed frame is refused, counted and
// never acted on.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import {
  authMessage,
  counterOf,
  DEVICE_DIR,
  HOST_DIR,
  hostProofMessage,
  MAC_BYTES,
  macInput,
  seal,
  sessionKeyMessage,
  unseal,
  withCounter,
  LIVENESS_MISSES,
  parseToHost,
  PROTOCOL_VERSION,
  type ErrorCode,
  type HelloFrame,
  type RelayDef,
  type ToDeviceFrame,
  type ToHostFrame,
} from '@proofrig/protocol';
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';
import type { Link } from '@proofrig/protocol';
import { newNonce } from './ids.js';
import { remoteAddress, type LogLimiter } from './log-limit.js';

export interface SessionHandler {
  /** The provisioned secret and board id of a device, or undefined when unknown. */
  credentials(dev: string): { secret: string; boardId: string; relays: RelayDef[] } | undefined;
  /** The device proved itself. */
  online(s: Session): void;
  /** The connection is gone, authenticated or not. */
  offline(s: Session, reason: string): void;
  /** A valid frame from an authenticated device. */
  frame(s: Session, f: ToHostFrame): void;
}

export interface SessionOptions {
  heartbeatMs: number;
  /** How long a connection may take to finish the handshake. */
  handshakeMs: number;
  /** Limits the warnings one remote address can cause (shared by all sessions). */
  limiter?: LogLimiter;
  /**
   * Answer acks once the frames of the current read are handled (the real clock), rather than at
   * once: an ack whose result came in the same read needs no answer. Off on a virtual clock, where
   * frames are delivered by timers that may run back to back before any microtask.
   */
  answerAtReadEnd?: boolean;
  /**
   * Let a `rack` wait up to this long for the next frame to the device and go out in the same socket
   * write (0 or unset: at once). The host is told nothing by it and the device only frees an outbox
   * slot, so a device kept busy gets one write per command instead of two. Real clock only.
   */
  rideMs?: number;
}

export class Session {
  dev: string | undefined;
  boot: string | undefined;
  fw: string | undefined;
  authed = false;
  lastRx: number;
  private hello: HelloFrame | undefined;
  private sn = newNonce();
  private timer: TimerHandle | undefined;
  private ended = false;
  /** Session key once authenticated; counters of the last frame sent and the last accepted. */
  private key: Buffer | undefined;
  /** The device's relays from its board, known once it is authenticated: they read its snapshots' `s.r`. */
  private relays: RelayDef[] | undefined;
  private txN = 0;
  private rxN = 0;
  /** Frames from the device refused on this connection (bad seal, MAC or counter). */
  refusedFrames = 0;
  /** Frames of ours the device says it refused (its heartbeat's `bad`). */
  refusedByDevice = 0;
  /** Acks and progress of this read still to be answered (answerAtReadEnd), newest last. */
  private toAnswer: string[] | undefined;
  /** Racks waiting to go out with the next frame (rideMs), oldest first, and the timer that sends them alone. */
  private waitingForNext: ToDeviceFrame[] = [];
  private aloneTimer: TimerHandle | undefined;

  constructor(
    readonly link: Link,
    private readonly h: SessionHandler,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: SessionOptions,
  ) {
    this.lastRx = clock.now();
    link.onmessage = (text) => this.receive(text);
    link.onclose = (reason) => this.end(reason);
    this.timer = clock.setTimeout(() => this.refuse('AUTH_FAILED', 'handshake not completed in time'), opts.handshakeMs);
  }

  send(f: ToDeviceFrame): void {
    if (this.waitingForNext.length === 0) return this.link.send(this.text(f));
    const waiting = this.waitingForNext;
    this.waitingForNext = [];
    this.clock.clearTimeout(this.aloneTimer);
    this.aloneTimer = undefined;
    // A command takes the newest waiting rack inside itself (`k`): the device unseals and parses one
    // frame fewer per command, and handles `k` before the command, where the rack frame would have come.
    const last = waiting[waiting.length - 1];
    if (f.t === 'cmd' && f.k === undefined && last.t === 'rack') {
      waiting.pop();
      f = { ...f, k: last.rid };
    }
    // Other waiting racks first: sealed before this frame, their counters come first too.
    const texts = waiting.map((r) => this.text(r));
    texts.push(this.text(f));
    if (texts.length === 1) this.link.send(texts[0]);
    else if (this.link.sendBatch) this.link.sendBatch(texts);
    else for (const t of texts) this.link.send(t);
  }

  /** A frame nothing waits for (a `rack`): with rideMs it goes out with the next frame, or alone rideMs from now. */
  sendWithNext(f: ToDeviceFrame): void {
    if (!this.opts.rideMs) return this.send(f);
    if (this.ended) return;
    this.waitingForNext.push(f);
    this.aloneTimer ??= this.clock.setTimeout(() => this.sendWaitingAlone(), this.opts.rideMs);
  }

  private sendWaitingAlone(): void {
    this.aloneTimer = undefined;
    const r = this.waitingForNext;
    if (this.ended || r.length === 0) return;
    const last = r.pop()!;
    // send() takes the others along, in order.
    this.send(last);
  }

  /** The frame's text on the wire: sealed with the next counter once authenticated. */
  private text(f: ToDeviceFrame): string {
    let j = JSON.stringify(f);
    if (this.key) {
      j = withCounter(j, ++this.txN);
      j = seal(j, this.mac(HOST_DIR, j));
    }
    return j;
  }

  /**
   * The device's Nagle holds its next frame (the `res` or `prog` after this `ack` or `prog` of `rid`)
   * until the host acknowledges this one, which a silent host does only after its ~40 ms delayed ACK:
   * answer with a small `hb` so the TCP ACK goes out at once. It reports nothing journaled, so it does
   * not wait for a commit. With answerAtReadEnd the answer waits until the frames of this read are
   * handled: if the result of every such frame came with it, nothing is held and no answer is sent
   * (the `rack` of that result carries the ACK); else one `hb` acknowledges all of them.
   */
  releaseDeviceNagle(rid: string): void {
    if (!this.opts.answerAtReadEnd) return this.send({ t: 'hb', ack: rid });
    if (this.toAnswer === undefined) {
      this.toAnswer = [];
      queueMicrotask(() => this.answerRead());
    }
    this.toAnswer.push(rid);
  }

  /** The result of `rid` came in: an answer still waiting for its ack is not needed. */
  resultIn(rid: string): void {
    const a = this.toAnswer;
    if (a === undefined) return;
    for (let i = a.length - 1; i >= 0; i--) if (a[i] === rid) a.splice(i, 1);
  }

  private answerRead(): void {
    const a = this.toAnswer;
    this.toAnswer = undefined;
    if (this.ended || a === undefined || a.length === 0) return;
    this.send({ t: 'hb', ack: a[a.length - 1] });
  }

  private mac(dir: string, body: string): string {
    return createHmac('sha256', this.key!).update(macInput(dir, body)).digest().subarray(0, MAC_BYTES).toString('base64');
  }

  /** The body of text if it is the next sealed frame from the device, else why not. */
  private unsealNext(text: string): { body: string } | { why: string; lost?: true } {
    const u = unseal(text);
    if (!u) return { why: 'not sealed' };
    const want = Buffer.from(this.mac(DEVICE_DIR, u.body), 'latin1');
    const got = Buffer.from(u.mac, 'latin1');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return { why: 'bad MAC' };
    const n = counterOf(u.body);
    if (n !== this.rxN + 1)
      return n > this.rxN + 1 ? { why: `counter ${n} is past ${this.rxN + 1}: a frame was lost`, lost: true } : { why: `counter is not ${this.rxN + 1}` };
    this.rxN++;
    return { body: u.body };
  }

  close(reason: string): void {
    this.link.close(reason);
    this.end(reason);
  }

  /** A warning a peer can provoke at will: rate-limited per remote address. */
  private warn(o: Record<string, unknown>, msg: string): void {
    const emit = (suppressed: number, last: boolean) =>
      this.log.warn({ ...o, dev: this.dev, remote: this.link.remote, ...(suppressed ? { suppressed } : {}), ...(last ? { more_suppressed: true } : {}) }, msg);
    if (this.opts.limiter) this.opts.limiter.hit(remoteAddress(this.link.remote), emit);
    else emit(0, false);
  }

  private refuse(code: ErrorCode, msg: string): void {
    this.warn({ evt: 'device_refused', code, msg }, 'device refused');
    this.send({ t: 'err', code, msg });
    this.close(code);
  }

  private receive(text: string): void {
    if (this.ended) return;
    try {
      this.dispatch(text);
    } catch (e) {
      // Nothing a peer sends may take the host down: the frame is answered INTERNAL and dropped.
      this.log.error({ evt: 'frame_handler_failed', dev: this.dev, remote: this.link.remote, err: (e as Error)?.stack ?? String(e) }, 'handling a device frame failed');
      this.send({ t: 'err', code: 'INTERNAL', msg: 'host failed handling the frame; it was dropped' });
      if (!this.authed) this.close('INTERNAL');
    }
  }

  private dispatch(text: string): void {
    if (this.key) {
      const u = this.unsealNext(text);
      if ('why' in u) {
        // Forged, replayed, reordered or truncated: no answer (an oracle for nobody), no liveness credit.
        this.refusedFrames++;
        if ((this.refusedFrames & (this.refusedFrames - 1)) === 0 || u.lost)
          this.warn({ evt: 'frame_refused', why: u.why, count: this.refusedFrames }, 'frame from device refused');
        // The device's own MAC on a later counter: one of its frames is gone, and every later one
        // would be refused too. End the link now; the device reconnects and re-sends its results.
        if (u.lost) this.close('a frame from the device was lost on this connection');
        return;
      }
      text = u.body;
    }
    this.lastRx = this.clock.now();
    const p = parseToHost(text, this.relays);
    if (!p.ok) {
      // A bad frame is answered and changes nothing; before authentication it also ends the connection.
      this.warn({ evt: 'bad_frame', code: p.code, msg: p.msg }, 'bad frame from device');
      this.send({ t: 'err', code: p.code, msg: p.msg, ref: p.ref });
      if (!this.authed) this.close(p.code);
      return;
    }
    const f = p.f;
    if (!this.authed) return this.handshake(f);
    if (f.t === 'hello' || f.t === 'auth') {
      this.send({ t: 'err', code: 'MALFORMED_FRAME', msg: f.t + ': already authenticated on this connection' });
      return;
    }
    if (f.t === 'err') {
      this.warn({ evt: 'device_error', code: f.code, msg: f.msg, ref: f.ref }, 'device reported an error');
    }
    if (f.t === 'hb' && f.bad !== undefined && f.bad !== this.refusedByDevice) {
      this.refusedByDevice = f.bad;
      this.warn({ evt: 'frames_refused_by_device', count: f.bad }, 'device refused frames on this connection');
    }
    this.h.frame(this, f);
  }

  private handshake(f: ToHostFrame): void {
    if (f.t === 'hello' && !this.hello) {
      if (f.v !== PROTOCOL_VERSION) return this.refuse('PROTOCOL_VERSION', `protocol version ${f.v} is not ${PROTOCOL_VERSION}`);
      this.hello = f;
      this.dev = f.dev;
      this.send({ t: 'chal', v: PROTOCOL_VERSION, sn: this.sn });
      return;
    }
    if (f.t === 'auth' && this.hello) {
      const hello = this.hello;
      const cred = this.h.credentials(hello.dev);
      // Unknown device and wrong secret get the same answer, so the reply reveals nothing.
      const expected = createHmac('sha256', cred ? cred.secret : newNonce())
        .update(authMessage(hello.dev, hello.boot, hello.cn, this.sn))
        .digest();
      const got = Buffer.from(f.mac, 'hex');
      if (!cred || got.length !== expected.length || !timingSafeEqual(got, expected)) {
        return this.refuse('AUTH_FAILED', `device ${hello.dev} could not prove its secret`);
      }
      if (cred.boardId !== hello.board) {
        return this.refuse('AUTH_FAILED', `device ${hello.dev} runs board "${hello.board}" but is provisioned as "${cred.boardId}"`);
      }
      this.clock.clearTimeout(this.timer);
      const hb = this.opts.heartbeatMs;
      const proof = createHmac('sha256', cred.secret).update(hostProofMessage(hello.dev, hello.boot, hello.cn, this.sn, hb)).digest('hex');
      this.send({ t: 'ok', hb, mac: proof });
      this.key = createHmac('sha256', cred.secret).update(sessionKeyMessage(hello.dev, hello.boot, hello.cn, this.sn)).digest();
      this.authed = true;
      this.relays = cred.relays;
      this.link.authenticated?.();
      this.boot = hello.boot;
      this.fw = hello.fw;
      this.h.online(this);
      this.beat();
      return;
    }
    this.refuse('AUTH_FAILED', `${f.t}: authenticate first (hello, then auth)`);
  }

  /** Heartbeat out, and liveness in: a device silent for LIVENESS_MISSES periods is gone. */
  private beat(): void {
    if (this.ended) return;
    const silent = this.clock.now() - this.lastRx;
    if (silent > this.opts.heartbeatMs * LIVENESS_MISSES) {
      this.close(`no frame for ${silent} ms`);
      return;
    }
    this.send({ t: 'hb' });
    this.timer = this.clock.setTimeout(() => this.beat(), this.opts.heartbeatMs);
  }

  private end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.clock.clearTimeout(this.timer);
    this.clock.clearTimeout(this.aloneTimer);
    this.waitingForNext = [];
    this.h.offline(this, reason);
  }
}
