// Named outputs: a board may label its channels and axes ("bench lamp", "slide"); the tools
// take the number or the name and journal the number, so the device never sees a name.
import { axisByName, relayByName, type BoardDef } from '@proofrig/protocol';
import type { Exposure } from './exposure.js';

/** What a person calls each output of a device: its label, else its name ("K4"), relays then axes. */
export function namesOf(o: OutputNames): string[] {
  return [...o.relays.map((r) => r.label ?? r.name), ...o.axes.map((a) => a.label ?? a.name)];
}

export interface OutputNames {
  relays: { ch: number; name: string; label: string | null }[];
  axes: { axis: string; name: string; label: string | null }[];
}

/** The outputs of a board, only those --expose shows for this device when an exposure is given. */
export function outputNames(board: BoardDef, exposed?: { id: string; exposure: Exposure }): OutputNames {
  const e = exposed;
  return {
    relays: board.relays.filter((r) => !e || e.exposure.relay(e.id, board, r.ch)).map((r) => ({ ch: r.ch, name: r.name, label: r.label ?? null })),
    axes: (board.steppers ?? []).filter((s) => !e || e.exposure.axis(e.id, board, s.axis)).map((s) => ({ axis: s.axis, name: s.name, label: s.label ?? null })),
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

/** Who may be targeted: the host's devices and boards, and what --expose lets MCP clients see. */
export interface NameScope {
  ids(): string[];
  board(id: string): BoardDef | undefined;
  exposure: Exposure;
}

type Found<T> = ({ device_id: string } & T) | { error: string };

/**
 * A relay from device_id + channel, or from a name alone that is unique across the host (a label
 * such as "bench lamp", or a channel name such as "K1" when only one exposed device has it).
 */
export function resolveRelayTarget(scope: NameScope, a: { device_id?: string; channel?: number | string; name?: string }): Found<{ ch: number }> {
  const both = bothGiven(a.channel, a.name, 'channel');
  if (both) return { error: both };
  const key = a.name ?? a.channel;
  if (a.device_id !== undefined) {
    if (key === undefined) return { error: `give the channel (number or label) of device ${a.device_id}, or a name alone` };
    const board = scope.board(a.device_id);
    if (board && !scope.exposure.device(a.device_id, board)) return { error: notExposed(a.device_id) };
    const r = resolveChannel(board, key);
    if ('error' in r) return r;
    if (board && !scope.exposure.relay(a.device_id, board, r.ch)) return { error: `channel ${r.ch} of ${a.device_id} is not exposed to MCP clients on this host (--expose)` };
    return { device_id: a.device_id, ch: r.ch };
  }
  if (key === undefined) return { error: 'give the name of the output (e.g. "bench lamp"), or device_id and channel' };
  if (typeof key === 'number') return { error: `channel ${key} needs a device_id (several devices may have a channel ${key}); or give the output's name` };
  const hits: { device_id: string; ch: number }[] = [];
  for (const id of scope.ids()) {
    const board = scope.board(id);
    const r = board && relayByName(board, key);
    if (board && r && scope.exposure.relay(id, board, r.ch)) hits.push({ device_id: id, ch: r.ch });
  }
  return pick(hits, key, 'relay', (h) => `${h.device_id} channel ${h.ch}`, scope);
}

/** An axis from device_id + axis, or from a name alone that is unique across the host. */
export function resolveAxisTarget(scope: NameScope, a: { device_id?: string; axis?: string; name?: string }): Found<{ axis: string }> {
  const both = bothGiven(a.axis, a.name, 'axis');
  if (both) return { error: both };
  const key = a.name ?? a.axis;
  if (a.device_id !== undefined) {
    if (key === undefined) return { error: `give the axis (id or label) of device ${a.device_id}, or a name alone` };
    const board = scope.board(a.device_id);
    if (board && !scope.exposure.device(a.device_id, board)) return { error: notExposed(a.device_id) };
    const axis = resolveAxis(board, key);
    if (board && axisByName(board, axis) && !scope.exposure.axis(a.device_id, board, axis)) return { error: `axis ${axis} of ${a.device_id} is not exposed to MCP clients on this host (--expose)` };
    return { device_id: a.device_id, axis };
  }
  if (key === undefined) return { error: 'give the name of the axis (e.g. "slide"), or device_id and axis' };
  const hits: { device_id: string; axis: string }[] = [];
  for (const id of scope.ids()) {
    const board = scope.board(id);
    const s = board && axisByName(board, key);
    if (board && s && scope.exposure.axis(id, board, s.axis)) hits.push({ device_id: id, axis: s.axis });
  }
  return pick(hits, key, 'axis', (h) => `${h.device_id} axis ${h.axis}`, scope);
}

function bothGiven(x: unknown, name: string | undefined, what: string): string | null {
  return x !== undefined && name !== undefined ? `give either name or ${what}, not both` : null;
}

function notExposed(id: string): string {
  return `no device "${id}" is exposed to MCP clients on this host`;
}

function pick<T extends { device_id: string }>(hits: T[], key: string, kind: string, show: (h: T) => string, scope: NameScope): T | { error: string } {
  if (hits.length === 1) return hits[0];
  if (hits.length > 1) return { error: `"${key}" names a ${kind} on ${hits.length} devices (${hits.map(show).join(', ')}); give device_id too` };
  return { error: `no ${kind} is called "${key}" on this host; names: ${allNames(scope, kind).join(', ') || 'none'}` };
}

/** Every exposed output's label (else its name) of one kind, for error messages. */
function allNames(scope: NameScope, kind: string): string[] {
  const out: string[] = [];
  for (const id of scope.ids()) {
    const b = scope.board(id);
    if (!b) continue;
    if (kind === 'relay') for (const r of b.relays) if (scope.exposure.relay(id, b, r.ch)) out.push(`"${r.label ?? r.name}"`);
    if (kind === 'axis') for (const s of b.steppers ?? []) if (scope.exposure.axis(id, b, s.axis)) out.push(`"${s.label ?? s.name}"`);
  }
  return [...new Set(out)];
}
