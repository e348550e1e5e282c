// Rate limit for warnings an unauthenticated peer can provoke (refused handshakes, bad frames):
// a few lines per remote address per window, then one line saying how many were suppressed,
// so a flood of fake hellos cannot flood the log.
import type { Clock } from '@proofrig/protocol/clock';

interface Slot {
  start: number;
  n: number;
  suppressed: number;
}

export class LogLimiter {
  private slots = new Map<string, Slot>();

  constructor(
    private readonly clock: Clock,
    /** Lines let through per key per window. */
    private readonly perWindow = 5,
    private readonly windowMs = 60_000,
    /** Keys remembered at most (oldest forgotten first), so the limiter's own memory is bounded. */
    private readonly maxKeys = 1024,
  ) {}

  /**
   * Whether to log this event for `key`. `emit(suppressed)` is called when a line should be
   * written; `suppressed` is how many were dropped for the key in the window that just ended.
   */
  hit(key: string, emit: (suppressedBefore: number, lastAllowed: boolean) => void): void {
    const now = this.clock.now();
    let s = this.slots.get(key);
    let before = 0;
    if (s && now - s.start >= this.windowMs) {
      before = s.suppressed;
      this.slots.delete(key);
      s = undefined;
    }
    if (!s) {
      if (this.slots.size >= this.maxKeys) this.slots.delete(this.slots.keys().next().value as string);
      s = { start: now, n: 0, suppressed: 0 };
      this.slots.set(key, s);
    }
    if (s.n < this.perWindow) {
      s.n++;
      emit(before, s.n === this.perWindow);
    } else s.suppressed++;
  }
}

/** The address part of a link's remote ("ws 10.0.0.5:53122" → "10.0.0.5"), the key for limits. */
export function remoteAddress(remote: string): string {
  const sp = remote.lastIndexOf(' ');
  const a = remote.slice(sp + 1);
  const colon = a.lastIndexOf(':');
  return peerKey(colon > 0 && /^\d+$/.test(a.slice(colon + 1)) ? a.slice(0, colon) : a);
}

/**
 * The key a peer address is counted under for caps and log limits: every loopback address (all of
 * 127.0.0.0/8, ::1 and their IPv4-mapped forms) is one machine, so aliases cannot multiply a cap.
 */
export function peerKey(addr: string | undefined): string {
  if (!addr) return '?';
  if (addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.')) return 'loopback';
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr;
}
