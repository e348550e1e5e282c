// Named outputs: a board may label its channels and axes ("bench lamp", "slide"); the tools
// take the number or the name and journal the number, so the device never sees a name.
import { axisByName, relayByName, type BoardDef } from '@proofrig/protocol';

export interface OutputNames {
  relays: { ch: number; name: string; label: string | null }[];
  axes: { axis: string; name: string; label: string | null }[];
}

export function outputNames(board: BoardDef): OutputNames {
  return {
    relays: board.relays.map((r) => ({ ch: r.ch, name: r.name, label: r.label ?? null })),
    axes: (board.steppers ?? []).map((s) => ({ axis: s.axis, name: s.name, label: s.label ?? null })),
  };
}

function relayChoices(board: BoardDef): string {
  return board.relays.map((r) => `${r.ch}${r.label ? ` ("${r.label}")` : ''}`).join(', ') || 'none';
}

/**
 * The channel number for a number or a name; an error text for a name the board does not
 * know. Without a board (unknown device) a number passes through and the command service
 * rejects it with DEVICE_OFFLINE as before.
 */
export function resolveChannel(board: BoardDef | undefined, channel: number | string): { ch: number } | { error: string } {
  if (typeof channel === 'number') return { ch: channel };
  const r = board ? relayByName(board, channel) : undefined;
  if (r) return { ch: r.ch };
  return {
    error:
      `channel must be an integer channel number such as 1, or the label of a channel of this device; "${channel}" is neither` +
      (board ? ` (channels of ${board.id}: ${relayChoices(board)})` : ''),
  };
}

/** The axis id for an id or a name; unknown names pass through so the planner refuses them with its own message. */
export function resolveAxis(board: BoardDef | undefined, axis: string): string {
  return (board && axisByName(board, axis)?.axis) || axis;
}
