// Actions a device executes: their argument checks run on the host before sending and
// again on the device before touching a pin, from this one definition.
import type { BoardDef } from './board.js';
import { findRelay } from './board.js';

export const ACTIONS = {
  /** Absolute: setting the same level twice is harmless, so a retry with the same request_id is safe. */
  'relay.set': { idempotent: true },
} as const;
export type ActionName = keyof typeof ACTIONS;

export interface RelaySetArgs {
  ch: number;
  on: boolean;
}

export function isActionName(a: unknown): a is ActionName {
  return typeof a === 'string' && Object.prototype.hasOwnProperty.call(ACTIONS, a);
}

/** null when the arguments are valid for this board, else the reason (an INVALID_ARGS detail). */
export function checkRelaySetArgs(p: Record<string, unknown>, board: BoardDef): string | null {
  const chs: number[] = [];
  for (let i = 0; i < board.relays.length; i++) chs.push(board.relays[i].ch);
  if (typeof p.ch !== 'number' || Math.floor(p.ch) !== p.ch)
    return 'ch must be an integer channel number (' + chs.join(', ') + ')';
  if (!findRelay(board, p.ch)) return 'ch ' + p.ch + ' does not exist on ' + board.id + '; valid channels: ' + chs.join(', ');
  if (typeof p.on !== 'boolean') return 'on must be true or false';
  return null;
}
