// The last line of defence of a long-running host: an error no handler caught is logged with its
// stack and the host keeps serving. Every path that must stop on failure (a journal that cannot
// write) stops itself where the failure happens; this guard only keeps one stray error from ending
// every rig's session and every MCP client with it. Lines are rate-limited per message, so a peer
// that can trigger one cannot flood the log with it.
import type { Logger } from 'pino';
import { LogLimiter } from './core/log-limit.js';
import { realClock } from '@proofrig/protocol/clock';

/** Install once per process; returns the function that removes it (tests). */
export function guardProcess(log: Logger): () => void {
  const limiter = new LogLimiter(realClock);
  const report = (evt: string, what: string, reason: unknown) => {
    const err = reason instanceof Error ? reason : new Error(String(reason));
    limiter.hit(`${evt}:${err.message}`, (suppressed) =>
      log.error({ evt, err: err.message, stack: err.stack, ...(suppressed ? { suppressed } : {}) }, `${what} (the host keeps running)`),
    );
  };
  const rejection = (reason: unknown) => report('unhandled_rejection', 'unhandled promise rejection', reason);
  const exception = (err: unknown) => report('uncaught_exception', 'uncaught exception', err);
  process.on('unhandledRejection', rejection);
  process.on('uncaughtException', exception);
  return () => {
    process.off('unhandledRejection', rejection);
    process.off('uncaughtException', exception);
  };
}
