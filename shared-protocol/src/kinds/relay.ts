// The relay kind: relay.set switches one channel and reports its aux contact or pin read-back.
import { checkRelaySetArgs } from '../actions.js';
import { findRelay, relayWorstMs } from '../board.js';
import type { ActionKind } from './kind.js';

export const RELAY_SET: ActionKind = {
  action: 'relay.set',
  motion: false,
  target: 'relay',
  evidence: ['aux_contact', 'pin_readback', 'load_current'],
  check: checkRelaySetArgs,
  timing(args, board) {
    const relay = findRelay(board, args.ch as number)!;
    return { worstMs: relayWorstMs(relay), expectedMs: relay.settle_ms };
  },
  phrase: (a, dev) => `switch relay channel ${String(a.ch)} of ${dev} ${a.on ? 'on' : 'off'}`,
  short: (a, label) => `relay ${String(a.ch)}${label ? ` (${label})` : ''} ${a.on ? 'on' : 'off'}`,
};
