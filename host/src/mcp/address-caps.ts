// How many connections one peer address may hold on the listener, and who gives way when it is full.
// Every loopback address is one peer (peerKey). Past the cap a few more connections are admitted but
// served only to the operator token (the listener checks `reserved`). When even those are taken, the
// oldest connection of that address that is doing nothing (no request in progress: half-sent
// headers, an idle keep-alive, a device that has not finished its handshake) is closed to make room,
// so a flood of junk cannot keep out a client that sends its request at once. A device that proved
// itself (its handshake finished) no longer counts against its address.
import { peerKey } from '../core/log-limit.js';

interface Peer {
  open: number;
  /** Counted connections with no request in progress, oldest first (a Set keeps insertion order). */
  idle: Set<Conn>;
}

/** What the caps need of a socket. */
export interface Conn {
  readonly remoteAddress?: string;
  destroy(): void;
}

export class AddressCaps {
  private peers = new Map<string, Peer>();
  private of = new WeakMap<Conn, { key: string; peer: Peer }>();
  /** Connections admitted past the cap: served to the operator token only. */
  readonly reserved = new WeakSet<Conn>();

  constructor(
    /** Connections per address before the operator's reserve. */
    readonly perAddress: number,
    /** Connections per address past the cap that only the operator token may use. */
    readonly operatorReserve: number,
    /** Told when a connection was refused or evicted (for a rate-limited log line). */
    private readonly onRefuse: (key: string, open: number, evicted: boolean) => void = () => {},
  ) {}

  /** A new connection. False when it was refused (destroyed). */
  admit(sock: Conn): boolean {
    const key = peerKey(sock.remoteAddress);
    let peer = this.peers.get(key);
    if (!peer) this.peers.set(key, (peer = { open: 0, idle: new Set() }));
    if (peer.open >= this.perAddress + this.operatorReserve) {
      const oldest = peer.idle.values().next().value as Conn | undefined;
      if (!oldest) {
        this.onRefuse(key, peer.open, false);
        sock.destroy();
        return false;
      }
      this.onRefuse(key, peer.open, true);
      this.release(oldest);
      oldest.destroy();
    }
    peer.open++;
    this.of.set(sock, { key, peer });
    peer.idle.add(sock);
    if (peer.open > this.perAddress) this.reserved.add(sock);
    return true;
  }

  /** A request started on the connection: it is not the one to make room. */
  busy(sock: Conn): void {
    this.of.get(sock)?.peer.idle.delete(sock);
  }

  /** Its request ended (a keep-alive connection waits for the next): it may make room again, as the newest. */
  idle(sock: Conn): void {
    const c = this.of.get(sock);
    if (!c) return;
    c.peer.idle.delete(sock);
    c.peer.idle.add(sock);
  }

  /** The connection closed, or became a proven device's: it no longer counts. */
  release(sock: Conn): void {
    const c = this.of.get(sock);
    if (!c) return;
    this.of.delete(sock);
    c.peer.idle.delete(sock);
    if (--c.peer.open <= 0) this.peers.delete(c.key);
  }

  /** Counted connections of an address (tests, status). */
  open(addr: string): number {
    return this.peers.get(peerKey(addr))?.open ?? 0;
  }
}
