// The one seam between the host core and a device connection. The WebSocket gateway and
// the in-memory pair below implement it; the core never sees a socket.

export interface Link {
  /** Queue one text frame for the peer. Silently dropped once the link is closed. */
  send(text: string): void;
  /** Close the link; `onclose` fires once, asynchronously. */
  close(reason?: string): void;
  /** Set by the owner: one text frame from the peer. */
  onmessage?: (text: string) => void;
  /** Set by the owner: fires once when either side closed or the transport died. */
  onclose?: (reason: string) => void;
  /** Where the peer is, for logs (e.g. "ws 127.0.0.1:53122", "memory"). */
  readonly remote: string;
  readonly closed: boolean;
}

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
export function createLinkedPair(): [Link, Link] {
  const a = new MemoryLink();
  const b = new MemoryLink();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
