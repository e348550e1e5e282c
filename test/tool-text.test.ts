// Text-only clients (xiaozhi, voice assistants) read just the first text block of a tool
// result: it must say what happened, what confirmed it, and what to do next — and never
// sound like success when nothing confirmed it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { RELAY_BOARD, RIG, startE2E, type E2E } from './helpers/e2e.js';
import type { CommandStatus } from '../host/src/core/command-view.js';
import { summarizeCommand, summarizeDevice } from '../host/src/mcp/summary.js';

const STEPPER_BOARD = fileURLToPath(new URL('../boards/stepper-rig.json', import.meta.url));
const SLIDE = 'stepper-rig';

function status(p: Partial<CommandStatus>): CommandStatus {
  return {
    command_id: 'cmd_1', request_id: 'r1', device_id: 'rig', action: 'relay.set', args: { ch: 2, on: true },
    state: 'accepted', terminal: false, accepted: true, executed: false, verified: false, evidence: null, error_code: null,
    detail: null, submitted_at: '', terminal_at: null, elapsed_ms: 1, deadline_ms: 100, estimated_seconds: 0.1,
    estimated_remaining_seconds: 0.1, progress_pct: null, position_mm: null, device_state: null,
    device_state_observed_at: null, device_state_age_ms: null, ...p,
  };
}

describe('the text of a command result stands on its own', () => {
  it('completed names the evidence that confirmed it', () => {
    expect(summarizeCommand(status({ state: 'completed', terminal: true, verified: true, evidence: 'pin_readback' }))).toBe(
      'Command cmd_1 (switch relay channel 2 of rig on): DONE and verified: only the output pin was read back (the relay contact itself is not observed).',
    );
  });

  it('unverified never reads as done', () => {
    const t = summarizeCommand(status({ state: 'unverified', terminal: true, evidence: 'none' }));
    expect(t).toMatch(/NOT verified/);
    expect(t).not.toMatch(/DONE/);
  });

  it('failed, rejected and timeout say so with the code, and timeout says the outcome is unknown', () => {
    expect(summarizeCommand(status({ state: 'failed', terminal: true, error_code: 'NO_FEEDBACK', detail: 'K2: no contact' }))).toMatch(/FAILED \(NO_FEEDBACK\)\. K2: no contact Read the device state/);
    expect(summarizeCommand(status({ state: 'rejected', terminal: true, error_code: 'DEVICE_OFFLINE' }))).toMatch(/REJECTED before anything moved \(DEVICE_OFFLINE\)/);
    expect(summarizeCommand(status({ state: 'timeout', terminal: true, error_code: 'TIMEOUT' }))).toMatch(/outcome UNKNOWN.*not failure/);
  });

  it('a running move gives progress, measured position, time left and how to get the outcome', () => {
    const t = summarizeCommand(status({ action: 'stepper.move', args: { axis: 'x', mm: 150 }, state: 'running', progress_pct: 40, position_mm: 60.2, estimated_remaining_seconds: 3.14 }));
    expect(t).toBe('Command cmd_1 (move axis x of rig to 150 mm): running, NOT finished yet. 40% done. Measured position 60.2 mm. About 3.1 s left. Call get_action_status with command_id cmd_1 for the outcome.');
  });
});

describe('the text of a device status stands on its own', () => {
  it('says offline plainly and how old the state is', () => {
    const t = summarizeDevice({
      device_id: 'rig', online: false, board_id: 'b', board_name: 'Bench', boot_id: null, firmware: null, last_seen: null,
      last_seen_age_ms: 65_000, rtt_max_ms: 5, state_observed_at: null, state_age_ms: 64_000, refused_frames: { by_host: 0, by_device: 0 }, interlock_events: [],
      state: { up: 1, relays: [{ ch: 1, cmd: true, pin: true, aux: true }, { ch: 2, cmd: null, pin: null, aux: null }], axes: [{ axis: 'x', pos: 12.5, cmd: 12.5, moving: false, homed: true, fault: false, home: false, limit: false }] },
    });
    expect(t).toBe('rig (Bench): OFFLINE, last seen 65 s ago. channel 1 on, channel 2 never switched; axis x at 12.5 mm (state observed 64 s ago).');
  });
});

describe('every tool result, over MCP, tasks included, starts with a plain-language sentence', () => {
  // A live host with the relay rig and the stepper rig (vm engine); each tool called for each kind of outcome.
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E({ sims: [{ boardFile: RELAY_BOARD }, { boardFile: STEPPER_BOARD }], faults: ['relay-rig-4ch:relay2:coil_open'] });
    await e.waitOnline(SLIDE);
  }, 30_000);
  afterAll(() => e?.close());

  const firstLine = (r: CallToolResult) => (r.content[0]?.type === 'text' ? r.content[0].text : '').split('\n')[0];
  /** A sentence: it starts with a word (or an error code and a colon), never with JSON. */
  const sentence = (r: CallToolResult, what: string) => {
    const l = firstLine(r);
    expect(l, what).toMatch(r.isError ? /^[A-Z_]+: [A-Za-z]/ : /^[A-Za-z0-9][^{[]/);
    expect(l.length, what).toBeGreaterThan(12);
  };

  it('for every tool and kind of outcome', async () => {
    const calls: [string, Record<string, unknown>][] = [
      ['list_devices', {}],
      ['get_device_status', { device_id: RIG }],
      ['get_device_status', { device_id: RIG, refresh: true }],
      ['relay_set', { device_id: RIG, channel: 1, on: true, wait_ms: 5000 }], // completed, aux contact
      ['relay_set', { device_id: RIG, channel: 4, on: true, wait_ms: 5000 }], // unverified
      ['relay_set', { device_id: RIG, channel: 2, on: true, wait_ms: 5000 }], // failed NO_FEEDBACK (coil open)
      ['relay_set', { device_id: RIG, channel: 3, on: true }], // accepted, not waited for
      ['relay_set', { device_id: 'nope', channel: 1, on: true }], // rejected DEVICE_OFFLINE
      ['stepper_home', { device_id: SLIDE, axis: 'x', wait_ms: 20_000 }],
      ['stepper_move', { device_id: SLIDE, axis: 'x', target_mm: 20, wait_ms: 20_000 }],
      ['stepper_move', { device_id: SLIDE, axis: 'x', target_mm: 60 }], // running
      ['stop_device', { device_id: SLIDE }],
      ['list_commands', {}],
      ['list_commands', { device_id: 'nope' }],
      ['estop_clear', { device_id: RIG }], // operator-only: refused
      ['relay_set', { device_id: RIG, channel: 'nine', on: true }], // invalid argument
    ];
    for (const [tool, args] of calls) sentence(await e.call(tool, args), `${tool} ${JSON.stringify(args)}`);
    const last = (e.running.core.commands.recent(1)[0]).command_id;
    sentence(await e.call('get_action_status', { command_id: last }), 'get_action_status');
    sentence(await e.call('get_action_status', { command_id: 'cmd_nosuchthing' }), 'get_action_status unknown');
    sentence(await e.call('cancel_action', { command_id: last }), 'cancel_action');
  }, 60_000);

  it('for a task-augmented move: the task result too', async () => {
    const created = await e.client.request(
      { method: 'tools/call', params: { name: 'stepper_move', arguments: { device_id: SLIDE, axis: 'x', target_mm: 30 }, task: { ttl: 60000 } } },
      CreateTaskResultSchema,
    );
    const res = (await e.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema, { timeout: 30000 })) as CallToolResult;
    sentence(res, 'tasks/result of stepper_move');
    expect(firstLine(res)).toMatch(/^Command cmd_\S+ \(move axis x of stepper-rig to 30 mm\): /);
  }, 40_000);
});
