// The MCP server beyond tools, through the real SDK client over Streamable HTTP against real
// simulated rigs: named outputs, list_commands, resources with subscriptions, prompts,
// completions, logging, tasks, wait_ms and progress on action tools, and the start-up race.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type CallToolResult,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { serve } from '../host/src/serve.js';
import { rememberedProgress } from '../host/src/mcp/progress.js';
import type { CommandStatus } from '../host/src/core/command-view.js';
import { mcpTransport, RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const STEPPER_BOARD = fileURLToPath(new URL('../boards/stepper-rig.json', import.meta.url));
const SLIDE = 'stepper-rig';
const sc = (r: CallToolResult) => r.structuredContent as unknown as CommandStatus;
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

let e: E2E;
const readJson = async (uri: string) => {
  const c = (await e.client.readResource({ uri })).contents[0];
  return JSON.parse('text' in c ? c.text : '');
};
beforeAll(async () => {
  e = await startE2E({ sims: [{ boardFile: RELAY_BOARD }, { boardFile: STEPPER_BOARD }] });
  await e.waitOnline(SLIDE);
}, 30000);
afterAll(() => e?.close());

describe('named outputs: boards label channels and axes, tools take the number or the name', () => {
  it('list_devices shows every channel and axis with its label, and refuses unknown keys', async () => {
    const r = await e.call('list_devices');
    const relay = (r.structuredContent as { devices: Record<string, unknown>[] }).devices.find((d) => d.device_id === RIG)!;
    expect(relay).toMatchObject({ online: true, booting: false });
    expect((relay.outputs as { relays: unknown[] }).relays).toContainEqual({ ch: 1, name: 'K1', label: 'bench lamp' });
    const bogus = await e.call('list_devices', { bogus: true });
    expect(bogus.isError).toBe(true);
    expect(text(bogus)).toMatch(/bogus/);
  });

  it('relay_set channel "bench lamp" switches channel 1 and journals the number', async () => {
    const r = await e.call('relay_set', { device_id: RIG, channel: 'Bench Lamp', on: true, wait_ms: 5000 });
    expect(sc(r)).toMatchObject({ args: { ch: 1, on: true }, state: 'completed', evidence: 'aux_contact', terminal: true });
    expect(e.running.rigs.get(RIG)!.relay(1).contactClosed).toBe(true);
  });

  it('a name the board does not have is a tool error listing the channels, and nothing is journaled', async () => {
    const before = e.running.core.journal.recent({ limit: 200 }).length;
    const r = await e.call('relay_set', { device_id: RIG, channel: 'coffee machine', on: true });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/"coffee machine" is neither.*1 \("bench lamp"\), 2 \("pump"\)/);
    expect(e.running.core.journal.recent({ limit: 200 }).length).toBe(before);
  });

  it('stepper_home takes the axis label "slide" for axis x', async () => {
    const r = await e.call('stepper_home', { device_id: SLIDE, axis: 'slide', wait_ms: 30000 });
    expect(sc(r)).toMatchObject({ args: { axis: 'x' }, state: 'completed', evidence: 'aux_contact' });
  }, 40000);
});

describe('wait_ms and progress on action tools', () => {
  it('without wait_ms an action answers once accepted; with wait_ms the outcome comes in the same call', async () => {
    const quick = sc(await e.call('relay_set', { device_id: RIG, channel: 2, on: true }));
    expect(quick.state).not.toBe('rejected');
    const full = sc(await e.call('relay_set', { device_id: RIG, channel: 4, on: true, wait_ms: 5000 }));
    expect(full).toMatchObject({ terminal: true, state: 'unverified', evidence: 'none', verified: false });
  });

  it('wait_ms above the bound is refused with the range', async () => {
    const r = await e.call('relay_set', { device_id: RIG, channel: 1, on: true, wait_ms: 999999 });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/wait_ms must be 0\.\.55000/);
  });

  it('stepper_move with wait_ms and a progress token sends increasing progress and returns the measured arrival', async () => {
    const seen: number[] = [];
    const r = (await e.client.callTool({ name: 'stepper_move', arguments: { device_id: SLIDE, axis: 'x', target_mm: 40, wait_ms: 30000 } }, CallToolResultSchema, {
      onprogress: (p) => seen.push(p.progress),
      resetTimeoutOnProgress: true,
    })) as CallToolResult;
    expect(sc(r)).toMatchObject({ state: 'completed', evidence: 'encoder', terminal: true });
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.at(-1)).toBe(100);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
  }, 40000);
  it('progress followed by a call that gave up before the end is forgotten once the command ends', async () => {
    const seen: number[] = [];
    const r = (await e.client.callTool({ name: 'stepper_move', arguments: { device_id: SLIDE, axis: 'x', target_mm: 5, wait_ms: 300 } }, CallToolResultSchema, {
      onprogress: (p) => seen.push(p.progress),
    })) as CallToolResult;
    expect(sc(r).terminal).toBe(false);
    expect(rememberedProgress()).toBeGreaterThan(0);
    await until(() => e.running.core.commands.status(sc(r).command_id)!.terminal, 20000, 'the move ends');
    // status() sees the host's own batch; the change that ends the entry is told once that batch is on disk.
    await e.running.core.journal.flushed();
    expect(rememberedProgress()).toBe(0);
  }, 30000);
});

describe('list_commands finds a lost command_id', () => {
  it('filters by device, state and time, newest first', async () => {
    const since = new Date(Date.now() - 1).toISOString();
    const s = sc(await e.call('relay_set', { device_id: RIG, channel: 3, on: true, wait_ms: 5000 }));
    const mine = (await e.call('list_commands', { device_id: RIG, since })).structuredContent as { commands: { command_id: string }[] };
    expect(mine.commands.map((c) => c.command_id)).toEqual([s.command_id]);
    const unverified = (await e.call('list_commands', { state: ['unverified'] })).structuredContent as { commands: { state: string; device_id: string }[] };
    expect(unverified.commands.length).toBeGreaterThan(0);
    expect(unverified.commands.every((c) => c.state === 'unverified')).toBe(true);
    const none = (await e.call('list_commands', { device_id: SLIDE, until: '2000-01-01T00:00:00Z' })).structuredContent as { commands: unknown[] };
    expect(none.commands).toEqual([]);
    const bad = await e.call('list_commands', { since: 'yesterday' });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/ISO 8601/);
  });
});

describe('resources', () => {
  it('lists devices, boards and the recent commands; a device resource carries state and labels', async () => {
    const { resources } = await e.client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toEqual(expect.arrayContaining([`proofrig://devices/${RIG}`, `proofrig://devices/${SLIDE}`, 'proofrig://boards/relay-rig-4ch', 'proofrig://commands/recent']));
    const dev = await readJson(`proofrig://devices/${RIG}`);
    expect(dev).toMatchObject({ device_id: RIG, online: true, outputs: { relays: expect.arrayContaining([{ ch: 2, name: 'K2', label: 'pump' }]) } });
    expect(dev.state.relays.length).toBe(4);
    const board = await readJson('proofrig://boards/stepper-rig');
    expect(board.steppers[0]).toMatchObject({ axis: 'x', label: 'slide' });
  });

  it('one command with its full event history', async () => {
    const s = sc(await e.call('relay_set', { device_id: RIG, channel: 1, on: false, wait_ms: 5000 }));
    const c = await readJson(`proofrig://commands/${s.command_id}`);
    expect(c.command).toMatchObject({ command_id: s.command_id, state: 'completed' });
    // A relay sends no ack (it ends within its settle time): sent, then its result.
    expect(c.events.map((x: { state: string }) => x.state)).toEqual(['submitted', 'sent', 'completed']);
    const recent = await readJson('proofrig://commands/recent');
    expect(recent.commands[0].command_id).toBe(s.command_id);
    await expect(e.client.readResource({ uri: 'proofrig://commands/cmd_nope' })).rejects.toThrow(/no command "cmd_nope"/);
  });

  it('a subscriber hears when the device reports and when a command changes; after unsubscribe it hears nothing', async () => {
    const updated: string[] = [];
    e.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    await e.client.subscribeResource({ uri: `proofrig://devices/${RIG}` });
    await e.client.subscribeResource({ uri: 'proofrig://commands/recent' });
    await e.call('get_device_status', { device_id: RIG, refresh: true });
    await until(() => updated.includes(`proofrig://devices/${RIG}`), 3000, 'device resource updated');
    await e.call('relay_set', { device_id: RIG, channel: 2, on: false, wait_ms: 5000 });
    await until(() => updated.includes('proofrig://commands/recent'), 3000, 'recent commands updated');
    await e.client.unsubscribeResource({ uri: `proofrig://devices/${RIG}` });
    await e.client.unsubscribeResource({ uri: 'proofrig://commands/recent' });
    updated.length = 0;
    await e.call('get_device_status', { device_id: RIG, refresh: true });
    await e.call('relay_set', { device_id: RIG, channel: 2, on: true, wait_ms: 5000 });
    await new Promise((r) => setTimeout(r, 200));
    expect(updated).toEqual([]);
  });
});

describe('prompts and completions', () => {
  it('offers the safe sequences, filled in with what the board says', async () => {
    const { prompts } = await e.client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(['move_axis_safely', 'recover_after_failure', 'switch_relay_and_verify']);
    const sw = await e.client.getPrompt({ name: 'switch_relay_and_verify', arguments: { device_id: RIG, channel: 'spare', on: 'true' } });
    const t = (sw.messages[0].content as { text: string }).text;
    expect(t).toMatch(/observed by NOTHING: expect state "unverified"/);
    expect(t).toMatch(/relay_set device_id=relay-rig-4ch channel=4/);
    const mv = (await e.client.getPrompt({ name: 'move_axis_safely', arguments: { device_id: SLIDE, axis: 'slide', target_mm: '120' } })).messages[0].content as { text: string };
    expect(mv.text).toMatch(/stepper_home .* axis=x/);
    expect(mv.text).toMatch(/evidence "encoder"/);
    for (const outcome of ['timeout', 'MOTOR_STALL', 'DEVICE_REBOOTED']) {
      const r = (await e.client.getPrompt({ name: 'recover_after_failure', arguments: { outcome, device_id: SLIDE } })).messages[0].content as { text: string };
      expect(r.text).toMatch(/get_device_status device_id=stepper-rig refresh=true/);
    }
    const stall = (await e.client.getPrompt({ name: 'recover_after_failure', arguments: { outcome: 'MOTOR_STALL', device_id: SLIDE } })).messages[0].content as { text: string };
    expect(stall.text).toMatch(/home the axis again/);
  });

  it('completes device_id, channel (number or label) and axis from the device named in the arguments', async () => {
    const ref = (name: string) => ({ type: 'ref/prompt' as const, name });
    const dev = await e.client.complete({ ref: ref('switch_relay_and_verify'), argument: { name: 'device_id', value: 'st' } });
    expect(dev.completion.values).toEqual([SLIDE]);
    const ch = await e.client.complete({ ref: ref('switch_relay_and_verify'), argument: { name: 'channel', value: 'p' }, context: { arguments: { device_id: RIG } } });
    expect(ch.completion.values).toEqual(['pump']);
    const ax = await e.client.complete({ ref: ref('move_axis_safely'), argument: { name: 'axis', value: '' }, context: { arguments: { device_id: SLIDE } } });
    expect(ax.completion.values).toEqual(['x', 'slide']);
    const tpl = await e.client.complete({ ref: { type: 'ref/resource', uri: 'proofrig://devices/{device_id}' }, argument: { name: 'device_id', value: 'rel' } });
    expect(tpl.completion.values).toEqual([RIG]);
  });
});

describe('logging', () => {
  it('a session that never set a level hears no log notifications (another session\'s outcomes included)', async () => {
    const quiet = new Client({ name: 'quiet', version: '1' });
    const heard: unknown[] = [];
    quiet.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard.push(n.params));
    await quiet.connect(mcpTransport(e.running));
    try {
      const mine = sc(await quiet.callTool({ name: 'relay_set', arguments: { device_id: RIG, channel: 2, on: true, wait_ms: 5000 } }) as CallToolResult);
      expect(mine.terminal).toBe(true);
      expect(sc(await e.call('relay_set', { device_id: RIG, channel: 2, on: false, wait_ms: 5000 })).terminal).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      expect(heard).toEqual([]);
    } finally {
      await quiet.close();
    }
  });

  it('terminal outcomes arrive as log notifications at the level the client set', async () => {
    const logs: LoggingMessageNotification['params'][] = [];
    e.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    await e.client.setLoggingLevel('info');
    const s = sc(await e.call('relay_set', { device_id: RIG, channel: 1, on: true, wait_ms: 5000 }));
    await until(() => logs.some((l) => (l.data as { command_id?: string }).command_id === s.command_id), 3000, 'log of the outcome');
    expect(logs.find((l) => (l.data as { command_id?: string }).command_id === s.command_id)).toMatchObject({ level: 'info', data: { event: 'command_terminal', state: 'completed' } });
    await e.client.setLoggingLevel('warning');
    logs.length = 0;
    const u = sc(await e.call('relay_set', { device_id: RIG, channel: 4, on: false, wait_ms: 5000 }));
    expect(u.state).toBe('unverified');
    await new Promise((r) => setTimeout(r, 200));
    expect(logs).toEqual([]);
  });

  it('a device going offline and online is logged', async () => {
    const logs: LoggingMessageNotification['params'][] = [];
    e.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    await e.client.setLoggingLevel('info');
    e.running.rigs.get(RIG)!.powerLoss(300);
    await until(() => logs.some((l) => (l.data as { event?: string }).event === 'device_online'), 15000, 'device back online');
    expect(logs.map((l) => [(l.data as { event: string }).event, l.level])).toEqual(expect.arrayContaining([['device_offline', 'warning'], ['device_online', 'info']]));
  }, 20000);
});

describe('tasks: stepper_move as an MCP task backed by the journal', () => {
  it('a task-augmented move answers with a task whose id is the command id; tasks/result gives the outcome', async () => {
    const created = await e.client.request(
      { method: 'tools/call', params: { name: 'stepper_move', arguments: { device_id: SLIDE, axis: 'x', target_mm: 60 }, task: { ttl: 60000 } } },
      CreateTaskResultSchema,
    );
    const id = created.task.taskId;
    expect(id).toMatch(/^cmd_/);
    expect(e.running.core.status(id)).toMatchObject({ action: 'stepper.move', args: { axis: 'x', mm: 60 } });
    const got = await e.client.experimental.tasks.getTask(id);
    expect(['working', 'completed']).toContain(got.status);
    const res = (await e.client.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 30000 })) as CallToolResult;
    expect(sc(res), JSON.stringify(sc(res))).toMatchObject({ command_id: id, state: 'completed', evidence: 'encoder' });
    expect((await e.client.experimental.tasks.getTask(id)).status).toBe('completed');
    const listed = await e.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(id);
  }, 40000);

  it('cancelling the task stops the axis: the move ends cancelled with its measured position', async () => {
    const created = await e.client.request(
      { method: 'tools/call', params: { name: 'stepper_move', arguments: { device_id: SLIDE, axis: 'x', target_mm: 190 }, task: { ttl: 60000 } } },
      CreateTaskResultSchema,
    );
    const id = created.task.taskId;
    await until(() => e.running.core.status(id)!.state === 'running', 5000, 'move running');
    const c = await e.client.experimental.tasks.cancelTask(id);
    expect(c.status).toBe('cancelled');
    const s = e.running.core.status(id)!;
    expect(s).toMatchObject({ state: 'cancelled', terminal: true });
    expect(s.position_mm!).toBeLessThan(190);
    expect(e.running.rigs.get(SLIDE)!.axis('x').stepping).toBe(false);
  }, 30000);
});

describe('no start-up race', () => {
  it('with --sim, the first call right after start waits for the rig instead of answering DEVICE_OFFLINE', async () => {
    const running = await serve({
      db: join(mkdtempSync(join(tmpdir(), 'proofrig-race-')), 'journal.db'),
      port: 0,
      sims: [{ boardFile: RELAY_BOARD }],
      logger: pino({ level: 'silent' }),
      heartbeatMs: 150,
      seed: 3,
      auth: false,
    });
    try {
      expect(running.core.booting(RIG)).toBe(true);
      const client = new Client({ name: 'race', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(running.url + '/mcp')));
      const r = (await client.callTool({ name: 'relay_set', arguments: { device_id: RIG, channel: 1, on: true, wait_ms: 5000 } })) as CallToolResult;
      expect(sc(r)).toMatchObject({ state: 'completed', verified: true });
      await client.close();
    } finally {
      await running.close();
    }
  }, 30000);

  it('an action on a device that is reconnecting waits for it; list_devices says it is booting', async () => {
    const rig = e.running.rigs.get(RIG)!;
    rig.powerLoss(1200);
    await until(() => e.running.core.devices.view(RIG)?.online === false, 8000, 'rig offline');
    const list = (await e.call('list_devices')).structuredContent as { devices: { device_id: string; booting: boolean; online: boolean }[] };
    expect(list.devices.find((d) => d.device_id === RIG)).toMatchObject({ online: false, booting: true });
    const s = sc(await e.call('relay_set', { device_id: RIG, channel: 1, on: true, wait_ms: 8000 }));
    expect(s).toMatchObject({ state: 'completed', verified: true });
  }, 30000);
});
