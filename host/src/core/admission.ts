// Admission: what a submit checks before anything is journaled as sent, besides the board's own
// argument rules (plan.ts): the request_id's earlier use, the axis's last fault and its open motion.
import { kindOf, MOTION_ACTIONS } from '@proofrig/protocol/kinds';
import type { Devices } from './devices.js';
import type { CommandRecord } from './journal/records.js';
import type { Journal } from './journal/journal.js';

/** The same arguments, whatever the order of their keys (a retry with the same request_id must match). */
export function sameArgs(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
}

/**
 * A motion command after that axis's last motion ended in a fault (stall, limit, position
 * error, reboot, timeout) is refused until someone read the device's real state afterwards.
 */
export function faultNotReadSince(journal: Journal, devices: Devices, dev: string, action: string, args: Record<string, unknown>): string | null {
  if (!kindOf(action)?.motion) return null;
  let last: CommandRecord | undefined;
  for (const a of MOTION_ACTIONS) {
    const c = journal.lastTerminal(dev, a).find((x) => x.args.axis === args.axis);
    if (c && (!last || c.terminal_at! > last.terminal_at!)) last = c;
  }
  if (!last || (last.state !== 'failed' && last.state !== 'timeout')) return null;
  const read = devices.refreshedAt(dev);
  // A read answered in the same millisecond the fault was journaled came after it (both are sequential here).
  if (read !== null && read >= last.terminal_at!) return null;
  return `axis ${String(args.axis)} ended its last motion ${last.command_id} ${last.state}${last.error_code ? ' ' + last.error_code : ''}${
    last.position !== null ? ' at ' + last.position + ' mm' : ''
  }; read its real state with get_device_status refresh=true before moving it again`;
}

/**
 * A motion command while another one on the same axis is still open here. The device would refuse
 * it BUSY if it arrived during that motion, but the frame leaves only after this turn's commit: if
 * the open one ends in a fault meanwhile (its result in the same turn), the new one would reach an
 * axis that must be read first (chaos seed 7). So the host refuses it itself, whatever the timing.
 */
export function motionInFlight(journal: Journal, dev: string, action: string, args: Record<string, unknown>): string | null {
  if (!kindOf(action)?.motion) return null;
  const c = journal.open().find((o) => o.device_id === dev && kindOf(o.action)?.motion && o.args.axis === args.axis);
  if (!c) return null;
  return `axis ${String(args.axis)} is still running ${c.action} ${c.command_id} (${c.state}); this one was refused, not queued: wait for its outcome with get_action_status (or stop it), read the state, then send again`;
}
