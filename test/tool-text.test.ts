// Text-only clients (xiaozhi, voice assistants) read just the first text block of a tool
// result: it must say what happened, what confirmed it, and what to do next — and never
// sound like success when nothing confirmed it.
import { describe, expect, it } from 'vitest';
import type { CommandStatus } from '../host/src/core/command-view.js';
import { summarizeCommand, summarizeDevice } from '../host/src/mcp/summary.js';

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
