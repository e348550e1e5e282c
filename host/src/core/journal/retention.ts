// Retention: which terminal commands go (older than maxAgeMs, or beyond the newest maxCommands), in
// batches of PRUNE_BATCH, and what is left of each (a tombstone). Open commands are never touched.
import type { Statements } from './queries.js';

/** Journal retention: terminal commands older than `maxAgeMs`, or beyond the newest `maxCommands` terminal ones, are pruned. */
export interface Retention {
  maxAgeMs: number;
  maxCommands: number;
}

export const DEFAULT_RETENTION: Retention = { maxAgeMs: 30 * 24 * 3600 * 1000, maxCommands: 1_000_000 };
/** Rows pruned per transaction, so a large backlog never blocks the host for long. */
const PRUNE_BATCH = 2000;

/** Replace one terminal command by its tombstone (inside the caller's transaction); its legacy events go too. */
export function tombstone(st: Statements, id: string, now: number): void {
  st.tombstone.run(now, id);
  st.dropEvents.run(id);
  st.dropCommand.run(id);
}

/**
 * Hand `drop` the ids of the commands that retention removes, a batch at a time (each batch its own
 * durable transaction, so a large backlog never blocks the host for long). Returns how many went.
 */
export function expire(st: Statements, r: Retention, now: number, drop: (ids: string[]) => void): number {
  let total = 0;
  for (;;) {
    const ids = (st.expiredIds.all(now - r.maxAgeMs, PRUNE_BATCH) as { command_id: string }[]).map((x) => x.command_id);
    if (ids.length === 0) break;
    drop(ids);
    total += ids.length;
  }
  for (;;) {
    const excess = (st.terminalCount.get() as { n: number }).n - r.maxCommands;
    if (excess <= 0) break;
    const ids = (st.oldestTerminalIds.all(Math.min(excess, PRUNE_BATCH)) as { command_id: string }[]).map((x) => x.command_id);
    drop(ids);
    total += ids.length;
  }
  return total;
}
