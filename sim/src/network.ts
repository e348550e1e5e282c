// The network path between the simulated chip and the host, and its injected outages (linkDrop).
import type { Clock, TimerHandle } from '@proofrig/protocol/clock';

export type DropDirection = 'both' | 'to_device';

/** A socket the simulated network can cut when an outage ends. */
export interface NetworkSocket {
  /** The outage is over and this connection did not survive it: destroy it and tell the firmware. */
  outageReset(): void;
}

export const DEFAULT_DROP_MS = 1500;

export class SimNetwork {
  private direction: DropDirection | null = null;
  private timer: TimerHandle | undefined;
  private sockets = new Set<NetworkSocket>();

  constructor(
    private readonly clock: Clock,
    private readonly announce: (state: 'drop' | 'restore') => void,
    /** A segment the chip's Nagle held was released: by data from the peer, or by the peer's delayed-ACK timer. */
    readonly nagleReleased: (by: 'peer' | 'delack', heldMs: number) => void = () => {},
  ) {}

  /** True during an outage. */
  get down(): boolean {
    return this.direction !== null;
  }

  /** Bytes (and FIN/RST) travelling towards the device are lost. */
  get swallowsToDevice(): boolean {
    return this.direction !== null;
  }

  /** Bytes the device sends are lost. */
  get swallowsFromDevice(): boolean {
    return this.direction === 'both';
  }

  /** Start (or extend) an outage of `ms` from now. */
  drop(direction: DropDirection = 'both', ms: number = DEFAULT_DROP_MS): void {
    if (direction !== 'both' && direction !== 'to_device')
      throw new Error(`linkDrop: direction must be 'both' or 'to_device', got ${String(direction)}`);
    if (!(ms >= 0)) throw new Error(`linkDrop: ms must be a number >= 0, got ${String(ms)}`);
    const wasDown = this.down;
    this.direction = direction;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => this.restore(), ms);
    if (!wasDown) this.announce('drop');
  }

  register(s: NetworkSocket): () => void {
    this.sockets.add(s);
    return () => this.sockets.delete(s);
  }

  /** Stop for good (rig shutdown): no restore event, no timers. */
  dispose(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.direction = null;
    this.sockets.clear();
  }

  private restore(): void {
    this.timer = undefined;
    const old = [...this.sockets];
    this.sockets.clear();
    for (const s of old) s.outageReset();
    this.direction = null;
    this.announce('restore');
  }
}
