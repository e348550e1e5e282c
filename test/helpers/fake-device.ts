// A scripted device on the far end of an in-memory Link: the test decides every frame it sends.
// Used to pin down host-core behaviour that the real firmware makes hard to provoke (silence,
// lies, malformed frames) — the real firmware is exercised by the end-to-end suites.
import { createHmac } from 'node:crypto';
import {
  authMessage, DEVICE_DIR, HOST_DIR, hostProofMessage, MAC_BYTES, macInput, PROTOCOL_VERSION, seal, sessionKeyMessage, unseal, withCounter,
  type DeviceState,
} from '@proofrig/protocol';
import { createMemoryLinkPair, type Link } from '../../host/src/core/memory-link.js';
import { RACK_RIDE_MS, type HostCore } from '../../host/src/core/host.js';
import { allDurable } from '../../host/src/core/journal/commit.js';

/** n turns of the event loop, each ended by waiting until every journal's writes are on disk (their fsync runs off the loop). */
export const flush = async (n = 5) => {
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setImmediate(r));
    await allDurable();
  }
};

/**
 * Long enough for a `rack` with no frame to ride with to go out alone (real clock), then flush. The
 * rack's ride starts once the result's batch is on disk: on a loaded machine that fsync can itself
 * take milliseconds, so the wait starts after it (flush), not when this is called.
 */
export const ridden = async () => {
  await flush();
  await new Promise((r) => setTimeout(r, RACK_RIDE_MS + 2));
  await flush();
};

export class FakeDevice {
  link: Link;
  /** The host's end of the link: inject() hands it frames directly. */
  private readonly hostSide: Link;
  received: Record<string, unknown>[] = [];
  /** Every text the host sent, as it came (sealed after the handshake). */
  raw: string[] = [];
  closed = false;
  /** Session key once the host's `ok` proved the secret; frames are then sealed both ways. */
  key: Buffer | undefined;
  /** Whether the host's `ok` carried a valid proof of the secret. */
  hostProved: boolean | undefined;
  txN = 0;
  rxN = 0;
  /** Host frames that failed the seal, MAC or counter check. */
  refused: string[] = [];
  private cn = 'c'.repeat(32);
  private sn = '';

  constructor(
    core: HostCore,
    readonly dev: string,
    readonly secret: string,
    readonly boot: string,
    readonly board = 'relay-rig-4ch',
  ) {
    const [hostSide, deviceSide] = createMemoryLinkPair();
    this.hostSide = hostSide;
    core.attach(hostSide);
    this.link = deviceSide;
    this.link.onmessage = (t) => this.receive(t);
    this.link.onclose = () => {
      this.closed = true;
    };
  }

  private mac(dir: string, body: string): string {
    return createHmac('sha256', this.key!).update(macInput(dir, body)).digest().subarray(0, MAC_BYTES).toString('base64');
  }

  private receive(t: string): void {
    this.raw.push(t);
    if (this.key) {
      const u = unseal(t);
      if (!u || u.mac !== this.mac(HOST_DIR, u.body) || !u.body.endsWith(withCounter('}', this.rxN + 1))) {
        this.refused.push(t);
        return;
      }
      this.rxN++;
      const f = JSON.parse(u.body) as Record<string, unknown>;
      delete f.n;
      this.received.push(f);
      return;
    }
    const f = JSON.parse(t) as Record<string, unknown>;
    this.received.push(f);
    if (f.t === 'ok' && this.sn) {
      const want = createHmac('sha256', this.secret).update(hostProofMessage(this.dev, this.boot, this.cn, this.sn, f.hb as number)).digest('hex');
      this.hostProved = f.mac === want;
      if (this.hostProved) this.key = createHmac('sha256', this.secret).update(sessionKeyMessage(this.dev, this.boot, this.cn, this.sn)).digest();
    }
  }

  /** Send a frame as this device does: sealed (MAC + next counter) once the session is up. */
  send(f: object | string): void {
    let j = typeof f === 'string' ? f : JSON.stringify(f);
    if (this.key) {
      j = withCounter(j, ++this.txN);
      j = seal(j, this.mac(DEVICE_DIR, j));
    }
    this.link.send(j);
  }

  /** Send text exactly as given (forged, replayed, unsealed ...). */
  sendRaw(text: string): void {
    this.link.send(text);
  }

  /** Frames the host handles one after another in a single turn, as when they arrive in one socket read. */
  inject(...texts: string[]): void {
    for (const t of texts) this.hostSide.onmessage?.(t);
  }

  /** A sealed frame with a counter and key of our choosing (does not advance txN). */
  sealed(f: object, n: number, key: Buffer | undefined = this.key): string {
    const body = withCounter(JSON.stringify(f), n);
    const mac = createHmac('sha256', key!).update(macInput(DEVICE_DIR, body)).digest().subarray(0, MAC_BYTES).toString('base64');
    return seal(body, mac);
  }

  /** hello → chal → auth with the given secret (default: the right one). */
  async connect(secret = this.secret): Promise<void> {
    await this.hello();
    await this.auth(secret);
  }

  /** The first half of the handshake: hello, and the host's challenge back. */
  async hello(): Promise<void> {
    this.send({ t: 'hello', v: PROTOCOL_VERSION, dev: this.dev, boot: this.boot, fw: 'test', board: this.board, cn: this.cn });
    await flush();
  }

  /** The second half: prove the secret in answer to the challenge. */
  async auth(secret = this.secret): Promise<void> {
    const cn = this.cn;
    const chal = this.received.find((f) => f.t === 'chal');
    if (!chal) throw new Error('no challenge: ' + JSON.stringify(this.received));
    this.sn = chal.sn as string;
    const mac = createHmac('sha256', secret).update(authMessage(this.dev, this.boot, cn, chal.sn as string)).digest('hex');
    this.send({ t: 'auth', mac });
    await flush();
  }

  /** Connect, answer the host's first state query and let the host settle: a device online and idle. */
  async online(): Promise<this> {
    await this.connect();
    this.answerStateQuery();
    await flush();
    return this;
  }

  /** Answer the host's newest plain state query (no rid: the one each connection starts with, or a state read) with s. */
  answerStateQuery(s: DeviceState = this.state()): void {
    const q = this.of('q').filter((f) => f.rid === undefined).at(-1);
    if (!q) throw new Error('the host asked this device for no state: ' + JSON.stringify(this.received));
    this.send({ t: 'state', q: q.q, s });
  }

  of(t: string): Record<string, unknown>[] {
    return this.received.filter((f) => f.t === t);
  }

  state(on: boolean | null = null): DeviceState {
    return { up: 1000, relays: [1, 2, 3, 4].map((ch) => ({ ch, cmd: on, pin: on, aux: ch <= 2 ? on : null })) };
  }
}
