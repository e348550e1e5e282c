// Operator-only tools are refused at dispatch, not merely hidden (seed 004). The scope comes from
// the bearer token as `extra.authInfo` (scopes ['agent'] or ['agent', 'operator']); these specs set
// it on an in-memory MCP transport, as the HTTP layer will from the Authorization header.
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { BoardDef } from '@proofrig/protocol';
import { HostCore } from '../host/src/core/host.js';
import { createMcpServer } from '../host/src/mcp/tools.js';
import { FakeDevice, flush } from './helpers/fake-device.js';

const board: BoardDef = { ...JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')), estop: { pin: 18, active_low: false, pull: 'up' } };
const SECRET = 'b'.repeat(64);
const AGENT: AuthInfo = { token: 't-agent', clientId: 'agent', scopes: ['agent'] };
const OPERATOR: AuthInfo = { token: 't-op', clientId: 'operator', scopes: ['agent', 'operator'] };

let core: HostCore;
let clients: Client[] = [];
afterEach(async () => {
  for (const c of clients) await c.close();
  clients = [];
  core.close();
});

/** A device that acknowledges and completes every command it gets (the scripted end of the link). */
async function setup(): Promise<FakeDevice> {
  core = new HostCore({ db: ':memory:' });
  core.provision('rig1', SECRET, board);
  const dev = new FakeDevice(core, 'rig1', SECRET, 'boot-1');
  await dev.connect();
  dev.link.onmessage = (t) => {
    const f = JSON.parse(t);
    dev.received.push(f);
    if (f.t === 'q') dev.send({ t: 'state', q: f.q, s: { ...dev.state(), estop: true } });
    if (f.t === 'cmd') {
      dev.send({ t: 'ack', rid: f.rid, st: 'accepted' });
      dev.send({ t: 'res', rid: f.rid, st: 'completed', ev: 'aux_contact', ver: true, msg: 'latch cleared', s: { ...dev.state(), estop: false }, ms: 1 });
    }
  };
  await flush();
  return dev;
}

/** A client whose every request carries `auth` (undefined: stdio-like, no auth); `answer` makes it support form elicitation. */
async function connect(auth: AuthInfo | undefined, answer?: (message: string) => ElicitResult): Promise<{ client: Client; asked: string[] }> {
  const [ct, st] = InMemoryTransport.createLinkedPair();
  const send = ct.send.bind(ct);
  ct.send = (m, o) => send(m, { ...o, authInfo: auth });
  await createMcpServer(core).connect(st);
  const client = new Client({ name: 'test', version: '1' }, answer ? { capabilities: { elicitation: { form: {} } } } : {});
  const asked: string[] = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return answer(req.params.message);
    });
  }
  await client.connect(ct);
  clients.push(client);
  return { client, asked };
}

const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const cmds = (d: FakeDevice) => d.of('cmd');

describe('an operator action without the operator scope is refused where it is dispatched', () => {
  it.each([
    ['an agent token', AGENT],
    ['no authentication (stdio)', undefined],
  ])('estop_clear with %s and a client without elicitation: OPERATOR_REQUIRED, says how to do it from proofrig call, nothing sent', async (_w, auth) => {
    const dev = await setup();
    const { client } = await connect(auth);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^OPERATOR_REQUIRED: estop_clear is operator-only/);
    expect(text(r)).toMatch(/npx proofrig call --operator estop_clear device_id=rig1/);
    await flush();
    expect(cmds(dev)).toHaveLength(0);
    expect(core.journal.lastTerminal('rig1', 'estop.clear')).toHaveLength(0);
  });

  it('the tool is listed to every client (it is not hidden) and its description says it is operator-only', async () => {
    await setup();
    const { client } = await connect(AGENT);
    const t = (await client.listTools()).tools.find((x) => x.name === 'estop_clear')!;
    expect(t.description).toMatch(/^OPERATOR ONLY/);
  });

  it('remove_device with an agent token is refused and the device stays provisioned and connected', async () => {
    const dev = await setup();
    const { client } = await connect(AGENT);
    const r = await call(client, 'remove_device', { device_id: 'rig1' });
    expect(text(r)).toMatch(/^OPERATOR_REQUIRED: remove_device/);
    expect(core.journal.device('rig1')).toBeDefined();
    expect(dev.closed).toBe(false);
  });

  it('a scope that allows no human confirmation is never asked, even when the client offers elicitation', async () => {
    const dev = await setup();
    const { client, asked } = await connect({ token: 't', clientId: 'bot', scopes: ['unattended'] }, () => ({ action: 'accept', content: { device_id: 'rig1' } }));
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(text(r)).toMatch(/does not allow a confirmation at the client/);
    expect(asked).toHaveLength(0);
    expect(cmds(dev)).toHaveLength(0);
  });
});

describe('with elicitation, the person at the client can confirm', () => {
  it('an agent-scope call is confirmed by typing the device id: the command reaches the device and completes', async () => {
    const dev = await setup();
    const { client, asked } = await connect(AGENT, () => ({ action: 'accept', content: { device_id: 'rig1' } }));
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(r.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/Operator confirmation: clear the latched e-stop of device rig1/);
    expect(r.structuredContent).toMatchObject({ action: 'estop.clear', state: 'completed' });
    expect(cmds(dev)).toMatchObject([{ a: 'estop.clear', p: {} }]);
  });

  it.each([
    ['declines', { action: 'decline' } as ElicitResult, /answered "decline"/],
    ['cancels', { action: 'cancel' } as ElicitResult, /answered "cancel"/],
    ['types another device id', { action: 'accept', content: { device_id: 'rig2' } } as ElicitResult, /did not name device "rig1"/],
  ])('when the person %s, the call is refused and nothing is sent', async (_w, answer, why) => {
    const dev = await setup();
    const { client } = await connect(AGENT, () => answer);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(why);
    expect(text(r)).toMatch(/proofrig call --operator/);
    expect(cmds(dev)).toHaveLength(0);
  });
});

describe('with the operator scope', () => {
  it('estop_clear is dispatched without asking', async () => {
    const dev = await setup();
    const { client, asked } = await connect(OPERATOR, () => ({ action: 'decline' }));
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(r.structuredContent).toMatchObject({ state: 'completed' });
    expect(asked).toHaveLength(0);
    expect(cmds(dev)).toHaveLength(1);
  });

  it('remove_device forgets the device and disconnects it; it can no longer authenticate', async () => {
    const dev = await setup();
    const { client } = await connect(OPERATOR);
    const r = await call(client, 'remove_device', { device_id: 'rig1' });
    expect(r.structuredContent).toEqual({ device_id: 'rig1', removed: true, was_online: true, reason: null });
    await flush();
    expect(dev.closed).toBe(true);
    expect(core.journal.device('rig1')).toBeUndefined();
    const again = new FakeDevice(core, 'rig1', SECRET, 'boot-2');
    await again.connect();
    expect(again.of('err')).toMatchObject([{ code: 'AUTH_FAILED' }]);
  });
});
