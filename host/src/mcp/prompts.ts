// MCP prompts: the safe sequences agents get wrong, filled in with what this host knows about
// the device (labels, feedback of the channel, travel of the axis).
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { axisByName, findRelay, relayByName } from '@proofrig/protocol';
import type { HostCore } from '../core/host.js';

const user = (text: string) => ({ messages: [{ role: 'user' as const, content: { type: 'text' as const, text } }] });

/** Completions for device_id, channel and axis (channel/axis from the device named in the other arguments). */
export function completers(core: HostCore) {
  const board = (ctx?: { arguments?: Record<string, string> }) => {
    const dev = ctx?.arguments?.device_id;
    return dev ? core.devices.board(dev) : undefined;
  };
  const starts = (list: string[], v: string) => list.filter((x) => x.toLowerCase().startsWith((v ?? '').toLowerCase()));
  return {
    device_id: completable(z.string().describe('device id from list_devices'), (v) => starts(core.devices.ids(), v)),
    channel: completable(z.string().describe('channel number or label, e.g. 1 or "bench lamp"'), (v, ctx) => {
      const b = board(ctx);
      const all = b ? b.relays.flatMap((r) => [String(r.ch), ...(r.label ? [r.label] : [])]) : [];
      return starts(all, v);
    }),
    axis: completable(z.string().describe('axis id or label, e.g. "x" or "slide"'), (v, ctx) => {
      const b = board(ctx);
      const all = b ? (b.steppers ?? []).flatMap((s) => [s.axis, ...(s.label ? [s.label] : [])]) : [];
      return starts(all, v);
    }),
  };
}

export const FAILURE_OUTCOMES = ['timeout', 'MOTOR_STALL', 'DEVICE_REBOOTED'] as const;

export function registerPrompts(server: McpServer, core: HostCore): void {
  const c = completers(core);

  server.registerPrompt(
    'move_axis_safely',
    {
      title: 'Move an axis safely',
      description: 'Home → move to an absolute position → check the encoder evidence before reporting the carriage arrived.',
      argsSchema: { device_id: c.device_id, axis: c.axis, target_mm: z.string().describe('absolute target position in mm') },
    },
    ({ device_id, axis, target_mm }) => {
      const b = core.devices.board(device_id);
      const s = b ? axisByName(b, axis) : undefined;
      const travel = s ? ` Its travel is ${s.travel.min_mm}..${s.travel.max_mm} mm and a move is completed only within ±${s.tolerance_mm} mm of the target.` : '';
      const ax = s?.axis ?? axis;
      return user(
        `Move axis "${axis}" of device ${device_id} to ${target_mm} mm, safely.${travel}\n` +
          `1. get_device_status device_id=${device_id} refresh=true: the device must be online; if the axis is not homed since boot (homed=false) or its fault/limit input is active, stop and report that.\n` +
          `2. If not homed: stepper_home device_id=${device_id} axis=${ax} wait_ms=30000 (or follow it with get_action_status) — go on only when state is "completed" with evidence "aux_contact" (the home switch closed).\n` +
          `3. stepper_move device_id=${device_id} axis=${ax} target_mm=${target_mm} with a request_id you keep (a retry with the same request_id never moves twice), wait_ms for the outcome or get_action_status until terminal is true.\n` +
          `4. Report arrival ONLY if state is "completed" with evidence "encoder" and verified=true; quote position_mm (measured by the encoder). Any other state is not arrival: failed MOTOR_STALL / POSITION_ERROR / NO_FEEDBACK / LIMIT_HIT, timeout (outcome UNKNOWN) or rejected — say so plainly and use the recover_after_failure prompt.\n` +
          `Never use a relative move, never retry a move with a new request_id before reading the real state, and call stop_device at once if anything looks wrong.`,
      );
    },
  );

  server.registerPrompt(
    'switch_relay_and_verify',
    {
      title: 'Switch a relay and report honestly',
      description: 'Switch → check the evidence → report "unverified" as unverified, never as success.',
      argsSchema: { device_id: c.device_id, channel: c.channel, on: z.enum(['true', 'false']).describe('true = on, false = off') },
    },
    ({ device_id, channel, on }) => {
      const b = core.devices.board(device_id);
      const r = b ? (/^\d+$/.test(channel.trim()) ? findRelay(b, Number(channel)) : relayByName(b, channel)) : undefined;
      const fb = r
        ? r.feedback.kind === 'aux_contact'
          ? `Channel ${r.ch}${r.label ? ` ("${r.label}")` : ''} has an auxiliary contact: a success is state "completed" with evidence "aux_contact".`
          : r.feedback.kind === 'load_current'
            ? `Channel ${r.ch}${r.label ? ` ("${r.label}")` : ''} is proven by its load current (sensor ${r.feedback.sensor}): a success is state "completed" with evidence "load_current"; "failed" NO_FEEDBACK means the coil switched but the load drew no current.`
            : r.feedback.kind === 'pin_readback'
            ? `Channel ${r.ch}${r.label ? ` ("${r.label}")` : ''} is only read back at the MCU pin: "completed" with evidence "pin_readback" proves the pin, not the load.`
            : `Channel ${r.ch}${r.label ? ` ("${r.label}")` : ''} is observed by NOTHING: expect state "unverified" — the command was executed but nobody can confirm the relay moved.`
        : '';
      return user(
        `Switch channel ${channel} of device ${device_id} ${on === 'true' ? 'ON' : 'OFF'} and report what the hardware confirmed. ${fb}\n` +
          `1. relay_set device_id=${device_id} channel=${JSON.stringify(r?.ch ?? channel)} on=${on} with a request_id you keep, and wait_ms=5000 (or get_action_status until terminal is true).\n` +
          `2. Read state, evidence and verified of the final status.\n` +
          `3. Report: "completed" (verified=true) = switched and confirmed by the named evidence; "unverified" = executed but NOT confirmed — say exactly that, do not call it a success; ` +
          `"failed" = the evidence contradicts (say what detail reports); "rejected" = nothing was switched (error_code says why); "timeout" = outcome UNKNOWN: read get_device_status refresh=true before anything else.`,
      );
    },
  );

  server.registerPrompt(
    'recover_after_failure',
    {
      title: 'What to do after timeout, MOTOR_STALL or DEVICE_REBOOTED',
      description: 'The safe next steps after a command ended timeout, failed MOTOR_STALL or failed DEVICE_REBOOTED.',
      argsSchema: {
        outcome: completable(z.string().describe('timeout, MOTOR_STALL or DEVICE_REBOOTED'), (v) => FAILURE_OUTCOMES.filter((o) => o.toLowerCase().startsWith((v ?? '').toLowerCase()))),
        device_id: c.device_id,
      },
    },
    ({ outcome, device_id }) => {
      const common = `Start with get_device_status device_id=${device_id} refresh=true and list_commands device_id=${device_id} open=true; never repeat the command with a NEW request_id before you know the real state.`;
      const steps: Record<string, string> = {
        timeout:
          'A timeout means the outcome is UNKNOWN, not failed: the device gave no evidence by the deadline. Read the real state; if it shows the target state, report it as observed now (not as the command having completed). ' +
          'Retrying with the SAME request_id is safe (it never executes twice); a motion axis is refused (STATE_READ_REQUIRED) until you read the state.',
        MOTOR_STALL:
          'The driver reported FAULT: the axis stalled or overheated, position_mm is where the encoder measured it. Do not move again at once: call stop_device, read the state (fault must be false), tell the person what happened, ' +
          'home the axis again (stepper_home) before the next absolute move, and consider a lower speed_mm_s.',
        DEVICE_REBOOTED:
          'The device restarted while the command was in flight: its outcome was lost and outputs are back in their power-on state (relays off, axes not homed). Read the state, re-home any axis before moving it, ' +
          'and switch relays again only if the person still wants them on.',
      };
      const key = FAILURE_OUTCOMES.find((o) => o.toLowerCase() === outcome.trim().toLowerCase());
      return user(
        `A command on device ${device_id} ended ${outcome}. ${key ? steps[key] : `Unknown outcome "${outcome}"; expected one of ${FAILURE_OUTCOMES.join(', ')}.`}\n${common}`,
      );
    },
  );
}
