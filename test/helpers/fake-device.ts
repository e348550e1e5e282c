// A scripted device on the far end of an in-memory Link: the test decides every frame it sends.
// Used to pin down host-core behaviour that the real firmware makes hard to provoke (silence,
// lies, malformed frames) — the real firmware is exercised by the end-to-end suites.
import { createHmac } from 'node:crypto';
import { authMessage, PROTOCOL_VERSION, type DeviceState } from '@proofrig/protocol';
import { createLinkedPair, type Link } from '../../host/src/core/link.js';
import type { HostCore } from '../../host/src/core/host.js';

export const flush = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

export class FakeDevice {
  link: Link;
  received: Record<string, unknown>[] = [];
  closed = false;

  constructor(
    core: HostCore,
    readonly dev: string,
    readonly secret: string,
    readonly boot: string,
    readonly board = 'relay-rig-4ch',
  ) {
    const [hostSide, deviceSide] = createLinkedPair();
    core.attach(hostSide);
    this.link = deviceSide;
    this.link.onmessage = (t) => this.received.push(JSON.parse(t));
    this.link.onclose = () => {
      this.closed = true;
    };
  }

  send(f: object | string): void {
    this.link.send(typeof f === 'string' ? f : JSON.stringify(f));
  }

  /** hello → chal → auth with the given secret (default: the right one). */
  async connect(secret = this.secret): Promise<void> {
    const cn = 'c'.repeat(32);
    this.send({ t: 'hello', v: PROTOCOL_VERSION, dev: this.dev, boot: this.boot, fw: 'test', board: this.board, cn });
    await flush();
    const chal = this.received.find((f) => f.t === 'chal');
    if (!chal) throw new Error('no challenge: ' + JSON.stringify(this.received));
    const mac = createHmac('sha256', secret).update(authMessage(this.dev, this.boot, cn, chal.sn as string)).digest('hex');
    this.send({ t: 'auth', mac });
    await flush();
  }

  of(t: string): Record<string, unknown>[] {
    return this.received.filter((f) => f.t === t);
  }

  state(on: boolean | null = null): DeviceState {
    return { up: 1000, relays: [1, 2, 3, 4].map((ch) => ({ ch, cmd: on, pin: on, aux: ch <= 2 ? on : null })) };
  }
}
