// The in-memory implementation of the Link seam (@proofrig/protocol), as a connected pair: the
// core never sees a socket, and a test can play the device on the other end.

import type { Link } from '@proofrig/protocol';

export type { Link };

class MemoryLink implements Link {
  onmessage?: (text: string) => void;
  onclose?: (reason: string) => void;
  peer!: MemoryLink;
  closed = false;
  readonly remote = 'memory';

  send(text: string): void {
    if (this.closed) return;
    const peer = this.peer;
    // Asynchronous like a socket: the sender's current turn finishes before the peer sees the frame.
    setImmediate(() => {
      if (!peer.closed) peer.onmessage?.(text);
    });
  }

  close(reason = 'closed'): void {
    if (this.closed) return;
    this.closed = true;
    const peer = this.peer;
    setImmediate(() => {
      this.onclose?.(reason);
      if (!peer.closed) {
        peer.closed = true;
        peer.onclose?.('peer closed: ' + reason);
      }
    });
  }
}

/** Two connected links: what one sends the other receives. For tests that play the device. */
export function createMemoryLinkPair(): [Link, Link] {
  const a = new MemoryLink();
  const b = new MemoryLink();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
