// The seam every frame crosses between the host core and one device connection. The host's
// WebSocket gateway and in-memory pair implement it, and so does the simulator's fault fabric.

export interface Link {
  /** Queue one text frame for the peer. Silently dropped once the link is closed. */
  send(text: string): void;
  /**
   * Optional: several frames, in order, in one write of the transport (a WebSocket's socket corked
   * around them). A link without it gets them one send() each.
   */
  sendBatch?(texts: string[]): void;
  /** Close the link; `onclose` fires once, asynchronously. */
  close(reason?: string): void;
  /** Set by the owner: one text frame from the peer. */
  onmessage?: (text: string) => void;
  /** Set by the owner: fires once when either side closed or the transport died. */
  onclose?: (reason: string) => void;
  /**
   * Optional: the host core calls it once the peer proved itself a provisioned device (its handshake
   * finished), so the transport can stop counting the connection against per-address caps.
   */
  authenticated?(): void;
  /** Where the peer is, for logs (e.g. "ws 127.0.0.1:53122", "memory"). */
  readonly remote: string;
  readonly closed: boolean;
}
