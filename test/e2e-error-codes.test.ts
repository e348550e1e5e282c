// The error-code table of docs/error-codes.md, row by row, through the real MCP client: each code an agent can
// meet is provoked on a simulated rig running the built firmware, and the table's retry column
// is then performed (same request id / fix input / after a fresh state read / no) and must
// succeed or, for "no", change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ERROR_CODES, type BoardDef, type ErrorCode } from '@proofrig/protocol';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import type { CommandStatus } from '../host/src/core/command-view.js';

const README = readFileSync(new URL('../docs/error-codes.md', import.meta.url), 'utf8');
const STEPPER_BOARD = new URL('../boards/stepper-rig.json', import.meta.url).pathname;
const relayBoard: BoardDef = JSON.parse(readFileSync(RELAY_BOARD, 'utf8'));
const pinOf = (ch: number) => relayBoard.relays.find((r) => r.ch === ch)!.pin;
const DEV = 'stepper-rig';
const sc = (r: CallToolResult) => r.structuredContent as unknown as CommandStatus;

/** The retry column as docs/error-codes.md prints it. */
const RETRY_TEXT = { same_request_id: 'same request id', after_fresh_state_read: 'after fresh state read', fix_input: 'fix input', no: 'no' } as const;

/** Rows an agent meets as a command's error_code, walked below through MCP. */
const WALKED: ErrorCode[] = [
  'DEVICE_OFFLINE', 'DEVICE_REBOOTED', 'INVALID_ARGS', 'UNKNOWN_ACTION', 'BUSY', 'READBACK_MISMATCH', 'NO_FEEDBACK', 'TIMEOUT',
  'MOTOR_STALL', 'POSITION_ERROR', 'LIMIT_HIT', 'NOT_HOMED', 'STATE_READ_REQUIRED', 'CANCELLED', 'UNKNOWN_COMMAND',
];
/** Rows no honest stack can produce through MCP, and where each is pinned instead. */
const ELSEWHERE: Partial<Record<ErrorCode, string>> = {
  UNPROVEN_COMPLETION: 'the validator refuses such a result first: test/host-core.test.ts (guard) and test/e2e-lying-device.test.ts',
  INTERNAL: 'only a firmware action that throws produces it; the firmware catches and reports it (firmware/src/exec.ts)',
  MALFORMED_FRAME: 'a frame-level answer, not a command outcome: test/host-core.test.ts, test/firmware-bundle.test.ts',
  FRAME_TOO_LARGE: 'a frame-level answer from the device before parsing: test/sim-memory.test.ts',
  UNKNOWN_FRAME: 'a frame-level answer: test/host-core.test.ts',
  AUTH_FAILED: 'a connection-level answer: test/host-core.test.ts, test/firmware-bundle.test.ts',
  PROTOCOL_VERSION: 'a connection-level answer: test/link-contract.test.ts',
  MAX_ON_TIME: 'an interlock on the device (board max_on_ms): test/interlock-device.test.ts, test/firmware-interlock.test.ts',
  MIN_OFF_TIME: 'an interlock on the device (board min_off_ms): test/firmware-interlock.test.ts, test/interlock-device.test.ts',
  ESTOP_LATCHED: 'needs the e-stop input, which only the stepper rig board wires: test/interlock-device.test.ts',
  ESTOP_ACTIVE: 'needs the e-stop input held: test/interlock-device.test.ts',
  OPERATOR_REQUIRED: 'a tool-level refusal of operator-only tools: test/mcp-operator.test.ts, test/interlock-device.test.ts',
  COMMAND_PRUNED: 'needs journal retention to have pruned the command: test/journal-retention.test.ts',
  BUS_NAK: 'a sensor read on the climate rig (unplugged, unpowered, slow): test/e2e-sensor.test.ts',
  SENSOR_CRC: 'a sensor read on the climate rig with corrupted CRCs: test/e2e-sensor.test.ts',
  OUT_OF_RANGE: 'a sensor read on the climate rig (an unplugged ADC input): test/e2e-sensor.test.ts',
  SENSOR_STALE: 'a cached reading older than max_age_ms on the climate rig: test/e2e-sensor.test.ts',
};

/** An action's final status and its story (detail, history, host log), as expect's two arguments. */
async function told(e: E2E, p: Promise<{ final: CommandStatus }>): Promise<[CommandStatus, string]> {
  const { final } = await p;
  return [final, e.story(final)];
}

describe('the error-code table', () => {
  it('every row is walked here or named with the suite that pins it, and its retry column is what the protocol says', () => {
    expect([...WALKED, ...Object.keys(ELSEWHERE)].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      const row = README.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
      expect(row, code).toBeDefined();
      expect(row!.split('|').map((c) => c.trim()).at(-2), code).toBe(RETRY_TEXT[info.retry]);
    }
  });
});

describe('relay rig rows', () => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E({ offlineGraceMs: 1000 });
  });
  afterAll(() => e?.close());
  const rig = () => e.running.rigs.get(RIG)!;
  const refresh = async (dev = RIG) => expect(sc(await e.call('get_device_status', { device_id: dev, refresh: true }))).toMatchObject({ source: 'device' });

  it('DEVICE_OFFLINE (retry: same request id) runs once the device is back, and the pin is written once for it', async () => {
    expect(ERROR_CODES.DEVICE_OFFLINE.retry).toBe('same_request_id');
    const bootWrites = rig().writes(pinOf(1)) / rig().bootCount;
    const boots = rig().bootCount;
    rig().powerLoss(8000); // longer than the 5 s an action waits for a device that just dropped
    await until(() => e.running.core.devices.view(RIG)!.online === false, 3000, 'offline');
    const off = sc(await e.call('relay_set', { device_id: RIG, channel: 1, on: true, request_id: 'walk-offline' }));
    expect(off).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE', request_id: 'walk-offline', executed: false });
    await until(() => rig().bootCount === boots + 1, 12000, 'reboot');
    await e.waitOnline();
    const before = rig().writes(pinOf(1));
    const { first, final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true, request_id: 'walk-offline' });
    expect(first.command_id).not.toBe(off.command_id);
    expect(final).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true, request_id: 'walk-offline' });
    expect(rig().writes(pinOf(1))).toBe(before + 1);
    // the request id now names the command that ran: a third call returns it and writes nothing
    const again = sc(await e.call('relay_set', { device_id: RIG, channel: 1, on: true, request_id: 'walk-offline' }));
    expect(again).toMatchObject({ command_id: first.command_id, state: 'completed' });
    expect(rig().writes(pinOf(1))).toBe(before + 1);
    // the rejection is still in the journal under its own id
    expect(sc(await e.call('get_action_status', { command_id: off.command_id, wait_ms: 0 }))).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
    expect(bootWrites).toBeGreaterThan(0);
  }, 40000);

  it('DEVICE_REBOOTED (retry: after fresh state read) succeeds after get_device_status refresh=true', async () => {
    const boots = rig().bootCount;
    const cut = (gpio: number) => {
      if (gpio === pinOf(2) && rig().bootCount === boots) rig().powerLoss(200);
    };
    rig().on('write', cut);
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 2, on: true });
    rig().off('write', cut);
    expect(final).toMatchObject({ state: 'failed', error_code: 'DEVICE_REBOOTED', verified: false });
    await e.waitOnline();
    await refresh();
    expect(...(await told(e, e.act('relay_set', { device_id: RIG, channel: 2, on: true })))).toMatchObject({ state: 'completed', verified: true });
  });

  it('INVALID_ARGS (retry: fix input) succeeds with the input fixed', async () => {
    expect(sc(await e.call('relay_set', { device_id: RIG, channel: 9, on: true }))).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
    expect(...(await told(e, e.act('relay_set', { device_id: RIG, channel: 1, on: false })))).toMatchObject({ state: 'completed', verified: true });
  });

  it('UNKNOWN_ACTION (retry: no): no tool sends one, the core refuses it, and asking again changes nothing', async () => {
    const writes = relayBoard.relays.map((r) => rig().writes(r.pin));
    const a = await e.running.core.submit({ device_id: RIG, action: 'relay.toggle', args: { ch: 1 } });
    const b = await e.running.core.submit({ device_id: RIG, action: 'relay.toggle', args: { ch: 1 } });
    for (const s of [a, b]) expect(s).toMatchObject({ state: 'rejected', error_code: 'UNKNOWN_ACTION', executed: false });
    expect(relayBoard.relays.map((r) => rig().writes(r.pin))).toEqual(writes);
  });

  for (const [code, ch, fault] of [
    ['READBACK_MISMATCH', 3, 'pin_stuck_high'],
    ['NO_FEEDBACK', 2, 'coil_open'],
  ] as const) {
    it(`${code} (retry: after fresh state read) succeeds once the fault is gone and the state was read`, async () => {
      rig().setFault(`relay${ch}`, fault);
      expect(...(await told(e, e.act('relay_set', { device_id: RIG, channel: ch, on: true })))).toMatchObject({ state: 'failed', error_code: code, verified: false });
      rig().setFault(`relay${ch}`, null);
      await refresh();
      expect(...(await told(e, e.act('relay_set', { device_id: RIG, channel: ch, on: true })))).toMatchObject({ state: 'completed', verified: true });
    });
  }

  it('TIMEOUT (retry: after fresh state read): a device cut off past the grace ends timeout; after it is back and read, the retry completes', async () => {
    rig().linkDrop({ direction: 'both', ms: 5000 });
    const first = sc(await e.call('relay_set', { device_id: RIG, channel: 1, on: true }));
    // No acknowledgement: the tool answers after at most 1.5 s with what is known then. With this
    // rig's short deadline and a 1 s offline grace the host may already have decided timeout
    // (asked the device, no answer, grace over); otherwise the command is still only sent.
    expect(first).toMatchObject({ accepted: false, executed: false });
    if (first.terminal) expect(first).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT' });
    else expect(first).toMatchObject({ state: 'sent' });
    const final = await e.waitTerminal(first.command_id, 10000);
    expect(final).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT', verified: false });
    await until(() => e.running.core.devices.view(RIG)!.online === true, 15000, 'back online');
    await refresh();
    expect(...(await told(e, e.act('relay_set', { device_id: RIG, channel: 1, on: true })))).toMatchObject({ state: 'completed', verified: true });
  });

  it('UNKNOWN_COMMAND (retry: no): an unknown command id is a tool error, every time', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await e.call('get_action_status', { command_id: 'cmd_doesnotexist', wait_ms: 0 });
      expect(r.isError).toBe(true);
      expect((r.content as { text: string }[])[0].text).toMatch(/^UNKNOWN_COMMAND: /);
    }
  });
});

describe('stepper rig rows', () => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E({ sims: [{ boardFile: STEPPER_BOARD }], device: DEV });
  });
  afterAll(() => e?.close());
  const rig = () => e.running.rigs.get(DEV)!;
  const move = (mm: number) => e.act('stepper_move', { device_id: DEV, axis: 'x', target_mm: mm });
  const refresh = async () => expect(sc(await e.call('get_device_status', { device_id: DEV, refresh: true }))).toMatchObject({ source: 'device' });

  it('NOT_HOMED (retry: fix input) succeeds after homing', async () => {
    expect(...(await told(e, move(10)))).toMatchObject({ state: 'rejected', error_code: 'NOT_HOMED', executed: false });
    expect(...(await told(e, e.act('stepper_home', { device_id: DEV, axis: 'x' })))).toMatchObject({ state: 'completed', verified: true });
    expect(...(await told(e, move(10)))).toMatchObject({ state: 'completed', evidence: 'encoder', verified: true });
  });

  it('BUSY (retry: after fresh state read) succeeds once the running move ended and the state was read', async () => {
    const long = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 40 }));
    expect(...(await told(e, move(20)))).toMatchObject({ state: 'rejected', error_code: 'BUSY', executed: false });
    expect(await e.waitTerminal(long.command_id)).toMatchObject({ state: 'completed' });
    await refresh();
    expect(...(await told(e, move(20)))).toMatchObject({ state: 'completed', verified: true });
  });

  it('CANCELLED (retry: after fresh state read): a stopped move ends cancelled; the retried move completes', async () => {
    const m = sc(await e.call('stepper_move', { device_id: DEV, axis: 'x', target_mm: 60 }));
    await until(() => rig().axis('x').pos > 25, 5000, 'moving');
    expect(sc(await e.call('stop_device', { device_id: DEV }))).toMatchObject({ state: 'completed', evidence: 'encoder', verified: true });
    expect(await e.waitTerminal(m.command_id)).toMatchObject({ state: 'cancelled', error_code: 'CANCELLED' });
    await refresh();
    expect(...(await told(e, move(60)))).toMatchObject({ state: 'completed', verified: true });
  });

  it('MOTOR_STALL and STATE_READ_REQUIRED (both: after fresh state read): refused until the state is read, then the move completes', async () => {
    rig().setFault('x', 'stall', '70');
    expect(...(await told(e, move(80)))).toMatchObject({ state: 'failed', error_code: 'MOTOR_STALL', verified: false });
    rig().setFault('x', null);
    expect(...(await told(e, move(80)))).toMatchObject({ state: 'rejected', error_code: 'STATE_READ_REQUIRED', executed: false });
    await refresh();
    expect(...(await told(e, move(80)))).toMatchObject({ state: 'completed', verified: true });
  });

  it('POSITION_ERROR (retry: after fresh state read) succeeds once steps are no longer lost', async () => {
    rig().setFault('x', 'missed_steps', '20%');
    expect(...(await told(e, move(50)))).toMatchObject({ state: 'failed', error_code: 'POSITION_ERROR', verified: false });
    rig().setFault('x', null);
    await refresh();
    expect(...(await told(e, move(50)))).toMatchObject({ state: 'completed', verified: true });
  });

  it('LIMIT_HIT (retry: after fresh state read) succeeds once the switch is free', async () => {
    rig().setFault('x', 'limit_stuck');
    expect(...(await told(e, move(70)))).toMatchObject({ state: 'failed', error_code: 'LIMIT_HIT', verified: false });
    rig().setFault('x', null);
    await refresh();
    expect(...(await told(e, move(70)))).toMatchObject({ state: 'completed', verified: true });
  });
});
