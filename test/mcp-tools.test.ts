// The MCP surface: strict inputs, structured results, isError only for tool-level failure.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HostCore } from '../host/src/core/host.js';
import { createMcpServer } from '../host/src/mcp/tools.js';
import type { BoardDef } from '@proofrig/protocol';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));

let core: HostCore;
let client: Client;

beforeEach(async () => {
  core = new HostCore({ db: ':memory:' });
  core.provision('rig1', 'a'.repeat(64), board);
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await createMcpServer(core).connect(st);
  client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
});
afterEach(async () => {
  await client.close();
  core.close();
});

const callTool = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('tool list', () => {
  it('offers the tools, each with input and output schemas and an honest description', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_action',
      'estop_clear',
      'fan_set',
      'get_action_status',
      'get_device_status',
      'list_commands',
      'list_devices',
      'read_sensor',
      'relay_set',
      'remove_device',
      'servo_set',
      'stepper_home',
      'stepper_move',
      'stop_device',
    ]);
    for (const t of tools) expect(t.outputSchema, t.name).toMatchObject({ type: 'object', properties: expect.any(Object) });
    const relay = tools.find((t) => t.name === 'relay_set')!;
    expect(relay.description).toMatch(/NOT that the relay switched/);
    expect(relay.description).toMatch(/get_action_status/);
    // A unique name alone, or device_id + channel: only `on` is required by the schema itself.
    expect(relay.inputSchema.required).toEqual(['on']);
    expect(Object.keys(relay.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['name', 'device_id', 'channel', 'on']));
    const move = tools.find((t) => t.name === 'stepper_move')!;
    expect(move.description).toMatch(/ABSOLUTE/);
    expect(move.description).toMatch(/ENCODER/);
    expect(move.inputSchema.properties).not.toHaveProperty('distance_mm');
  });
});

describe('inputs are strict and errors name the rule', () => {
  it.each([
    [{ device_id: 'rig1', channel: '1', on: true }, /channel must be an integer/],
    [{ device_id: 'rig1', channel: 1.5, on: true }, /whole number/],
    [{ device_id: 'rig1', channel: 0, on: true }, /channel must be 1 or more/],
    [{ device_id: 'rig1', channel: 1, on: 'yes' }, /on must be true or false/],
    [{ device_id: 'rig1', channel: 1 }, /on must be true or false/],
    [{ device_id: 'rig1', channel: 1, on: true, speed: 3 }, /speed/],
    [{ device_id: 'rig1', channel: 1, on: true, request_id: 'has space' }, /request_id must be/],
  ])('relay_set %j is refused as a tool error', async (args, msg) => {
    const r = await callTool('relay_set', args);
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(msg);
    expect(core.journal.open()).toHaveLength(0);
  });

  it.each([
    [{ command_id: 'cmd_x', wait_ms: 6000 }, /wait_ms must be 0\.\.5000/],
    [{ command_id: 'cmd_x', wait_ms: -1 }, /wait_ms must be 0\.\.5000/],
    [{ command_id: 'cmd_x', wait_ms: 10.5 }, /whole number/],
  ])('get_action_status %j is refused as a tool error', async (args, msg) => {
    const r = await callTool('get_action_status', args);
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(msg);
  });

  it.each([
    [{ device_id: 'rig1', axis: 'x', target_mm: '150' }, /target_mm must be a number/],
    [{ device_id: 'rig1', axis: 'x', target_mm: 10, speed_mm_s: 0 }, /speed_mm_s must be more than 0/],
    [{ device_id: 'rig1', axis: 'x', distance_mm: 10 }, /target_mm|distance_mm/],
  ])('stepper_move %j is refused as a tool error', async (args, msg) => {
    const r = await callTool('stepper_move', args);
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(msg);
  });

  it('an unknown command id is a tool error naming UNKNOWN_COMMAND', async () => {
    const r = await callTool('get_action_status', { command_id: 'cmd_nope', wait_ms: 0 });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/UNKNOWN_COMMAND/);
  });
});

describe('business outcomes are results, not tool errors', () => {
  it('relay_set to an offline device returns state rejected with DEVICE_OFFLINE in structured content, and as text a sentence that says so followed by the same JSON', async () => {
    const r = await callTool('relay_set', { device_id: 'rig1', channel: 1, on: true });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ state: 'rejected', terminal: true, accepted: false, executed: false, verified: false, error_code: 'DEVICE_OFFLINE' });
    const [line, ...json] = text(r).split('\n\n');
    expect(line).toMatch(/^Command cmd_\S+ \(switch relay channel 1 of rig1 on\): REJECTED before anything moved \(DEVICE_OFFLINE\)\./);
    expect(JSON.parse(json.join('\n\n'))).toEqual(r.structuredContent);
  });

  it('get_action_status answers a terminal command at once, from the journal', async () => {
    const r = await callTool('relay_set', { device_id: 'ghost', channel: 1, on: true });
    const id = (r.structuredContent as { command_id: string }).command_id;
    const t0 = Date.now();
    const s = await callTool('get_action_status', { command_id: id });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(s.structuredContent).toMatchObject({ command_id: id, state: 'rejected', error_code: 'DEVICE_OFFLINE' });
  });

  it('list_devices shows a provisioned device offline with no cached state', async () => {
    const r = await callTool('list_devices', {});
    expect(r.structuredContent).toMatchObject({ devices: [{ device_id: 'rig1', online: false, state: null, state_age_ms: null }] });
  });
});
