// Plain-language first lines for tool results. Some clients (xiaozhi's endpoint, voice
// assistants, clients that drop structuredContent) read only the text block, so it must say on
// its own what happened, what confirmed it, and what to tell the person or do next.
import { kindOf } from '@proofrig/protocol/kinds';
import { loadAmpsOf } from '@proofrig/protocol';
import type { CommandStatus } from '../core/command-view.js';
import type { DeviceView } from '../core/devices.js';

function what(s: CommandStatus): string {
  return kindOf(s.action)?.phrase(s.args, s.device_id) ?? `${s.action} on ${s.device_id}`;
}

const EVIDENCE_WORDS: Record<string, string> = {
  aux_contact: 'a feedback contact confirmed it',
  pin_readback: 'only the output pin was read back (the relay contact itself is not observed)',
  encoder: 'the encoder measured the position',
  sensor: 'the sensor answered with a checked, plausible reading',
  load_current: 'verified by its load current',
  tachometer: 'the fan\'s tachometer measured the expected speed',
  none: 'nothing observed it',
};

/** One or two sentences that stand on their own for a command status. */
export function summarizeCommand(s: CommandStatus): string {
  const head = `Command ${s.command_id} (${what(s)}): `;
  const pos = s.position_mm !== null ? ` Measured position ${s.position_mm} mm.` : '';
  const detail = s.detail ? ` ${s.detail}` : '';
  switch (s.state) {
    case 'completed':
      if (s.evidence === 'load_current') {
        const amps = loadAmpsOf(s.detail);
        return `${head}DONE and verified by its load current${amps !== null ? ` (${amps} A)` : ''}.${detail}`;
      }
      return `${head}DONE and verified: ${EVIDENCE_WORDS[s.evidence ?? 'none'] ?? s.evidence}.${pos}${detail}`;
    case 'unverified':
      return `${head}executed, but NOT verified: this output has no feedback, so nobody knows whether it really switched. Tell the person it is unconfirmed.${detail}`;
    case 'failed':
      return `${head}FAILED (${s.error_code}).${pos}${detail} Read the device state before trying again.`;
    case 'rejected':
      return `${head}REJECTED before anything moved (${s.error_code}).${detail}`;
    case 'timeout':
      return `${head}outcome UNKNOWN: no evidence arrived by the deadline even after asking the device (timeout, not failure).${detail} Read the device state before deciding.`;
    case 'cancelled':
      return `${head}cancelled before it finished.${pos}${detail}`;
    default: {
      const left = s.estimated_remaining_seconds !== null ? ` About ${s.estimated_remaining_seconds.toFixed(1)} s left.` : '';
      const pct = s.progress_pct !== null ? ` ${s.progress_pct}% done.` : '';
      return `${head}${s.state}, NOT finished yet.${pct}${pos}${left} Call get_action_status with command_id ${s.command_id} for the outcome.`;
    }
  }
}

/** One line per device: online or not, how fresh its state is, and its outputs. */
export function summarizeDevice(d: DeviceView): string {
  const seen = d.last_seen_age_ms !== null ? `, last seen ${Math.round(d.last_seen_age_ms / 1000)} s ago` : ', never seen';
  const booting = !d.online && (d as { booting?: boolean }).booting ? ' (booting: expected online shortly)' : '';
  // What a person calls things first: "bench lamp, pump, fan, spare (lab bench): relay-rig-4ch ...".
  const named = d as DeviceView & { names?: string[]; area?: string | null };
  const names = named.names?.length ? `${named.names.join(', ')}${named.area ? ` (${named.area})` : ''}: ` : named.area ? `${named.area}: ` : '';
  const parts = [`${names}${d.device_id} (${d.board_name}): ${d.online ? 'online' : 'OFFLINE'}${booting}${seen}.`];
  if (d.state?.estop) parts.push(`E-STOP LATCHED: every output is off until an operator clears it (estop_clear)${d.state.sensors?.length ? '; sensors can still be read (read_sensor)' : ''}.`);
  if (d.state) {
    const age = d.state_age_ms !== null ? ` (state observed ${Math.round(d.state_age_ms / 1000)} s ago)` : '';
    const relays = d.state.relays.map((r) => `channel ${r.ch} ${r.cmd === null ? 'never switched' : r.cmd ? 'on' : 'off'}`).join(', ');
    const axes = (d.state.axes ?? []).map((a) => `axis ${a.axis} at ${a.pos} mm${a.homed ? '' : ' (not homed)'}${a.moving ? ' moving' : ''}${a.fault ? ' FAULT' : ''}`).join(', ');
    // The rows list_devices adds (a value only while fresh), else the snapshot's own.
    const rows = (d as { sensors?: { id: string; unit: string; value: number | null; status: string; age_ms: number | null }[] }).sensors;
    const sensors = rows
      ? rows.map((s) => `${s.id} ${s.status === 'ok' ? `${s.value} ${s.unit}` : s.status === 'none' ? 'not read yet' : s.status}${s.age_ms !== null ? ` (${Math.round(s.age_ms / 1000)} s ago)` : ''}`).join(', ')
      : (d.state.sensors ?? []).map((s) => `${s.id} ${s.st === 'ok' ? s.v : s.st === 'none' ? 'not read yet' : s.st}`).join(', ');
    const fans = (d.state.fans ?? []).map((f) => `fan ${f.id} at ${f.duty} %${f.rpm === null ? '' : ` (${f.rpm} rpm measured)`}`).join(', ');
    const servos = (d.state.servos ?? []).map((s) => `servo ${s.id} ${s.deg === null ? 'not driven' : `sent to ${s.deg}° (unverified)`}`).join(', ');
    parts.push(`${[relays, axes, sensors, fans, servos].filter(Boolean).join('; ')}${age}.`);
  }
  return parts.join(' ');
}

export function summarizeDevices(list: DeviceView[]): string {
  if (list.length === 0) return 'No devices are provisioned.';
  return list.map(summarizeDevice).join('\n');
}

/** A list of commands, newest first: how many, and the newest few in a line each. */
export function summarizeCommands(list: CommandStatus[]): string {
  if (list.length === 0) return 'No commands match.';
  const shown = list.slice(0, 3).map((c) => `${c.command_id} ${what(c)}: ${c.state}${c.error_code ? ' ' + c.error_code : ''}`);
  return `${list.length} command${list.length === 1 ? '' : 's'}, newest first: ${shown.join('; ')}${list.length > 3 ? '; …' : ''}.`;
}

/**
 * The plain-language line for any tool result, chosen by its shape: a command status, a cancel
 * answer, a device list, one device, a list of commands, a device removal.
 */
export function summarize(data: Record<string, unknown>): string | undefined {
  if (Array.isArray(data.commands)) return summarizeCommands(data.commands as CommandStatus[]);
  if (typeof data.removed === 'boolean' && typeof data.device_id === 'string')
    return data.removed
      ? `Device ${data.device_id} removed: its secret is forgotten${data.was_online ? ' and it was disconnected' : ''}; it cannot connect until an upload provisions it again.`
      : `Device ${data.device_id} was NOT removed${data.reason ? ': ' + String(data.reason) : ''}.`;
  if (typeof data.command_id === 'string' && typeof data.state === 'string' && typeof data.action === 'string') return summarizeCommand(data as unknown as CommandStatus);
  if (typeof data.cancel_requested === 'boolean' && data.command && typeof data.command === 'object') {
    const head = data.cancel_requested ? 'Cancel requested: the axis was told to stop.' : `Nothing was cancelled${data.reason ? ': ' + String(data.reason) : ''}.`;
    return head + ' ' + summarizeCommand(data.command as CommandStatus);
  }
  if (Array.isArray(data.devices)) return summarizeDevices(data.devices as DeviceView[]);
  if (typeof data.device_id === 'string' && typeof data.online === 'boolean') {
    const d = data as unknown as DeviceView & { refresh_error?: string | null };
    return summarizeDevice(d) + (d.refresh_error ? ` Could not ask the device now: ${d.refresh_error}` : '');
  }
  return undefined;
}
