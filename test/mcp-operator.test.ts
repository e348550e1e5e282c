// Operator-only tools are refused at dispatch, not merely hidden (seed 004). The scope comes from
// the bearer token as `extra.authInfo` (scopes ['agent'] or ['agent', 'operator']); these specs set
// it on an in-memory MCP transport, as the HTTP layer does from the Authorization header. The only
// other authority is a person at the host's own terminal (`confirmAtHost`), never the MCP client.
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { BoardDef } from '@proofrig/protocol';
import { HostCore } from '../host/src/core/host.js';
import { createMcpServer } from '../host/src/mcp/tools.js';
import { XIAOZHI_AUTH, type ConfirmRequest, type HostConfirm } from '../host/src/mcp/operator-tools.js';
import { terminalConfirm } from '../host/src/cli/terminal-confirm.js';
import { PassThrough } from 'node:stream';
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
async function connect(auth: AuthInfo | undefined, answer?: (message: string) => ElicitResult, confirmAtHost?: HostConfirm): Promise<{ client: Client; asked: string[] }> {
  const [ct, st] = InMemoryTransport.createLinkedPair();
  const send = ct.send.bind(ct);
  ct.send = (m, o) => send(m, { ...o, authInfo: auth });
  await createMcpServer(core, { confirmAtHost }).connect(st);
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

  it('a scope that allows no confirmation is never asked, at the client or at the host', async () => {
    const dev = await setup();
    const host = hostTerminal('rig1');
    const { client, asked } = await connect({ token: 't', clientId: 'bot', scopes: ['unattended'] }, () => ({ action: 'accept', content: { device_id: 'rig1' } }), host.confirm);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(text(r)).toMatch(/never confirmed on its behalf/);
    expect(asked).toHaveLength(0);
    expect(host.asked).toHaveLength(0);
    expect(cmds(dev)).toHaveLength(0);
  });
});

/** A double of the host's terminal: answers every question with `typed`, records what it was asked. */
function hostTerminal(typed: string | null): { confirm: HostConfirm; asked: ConfirmRequest[] } {
  const asked: ConfirmRequest[] = [];
  return {
    asked,
    confirm: async (q) => {
      asked.push(q);
      return typed === q.deviceId ? { ok: true } : { ok: false, why: typed === null ? 'no answer within 120 s' : `typed "${typed}", not the device id` };
    },
  };
}

describe('the MCP client never confirms an operator action, whatever it answers', () => {
  it.each([
    ['an agent token', AGENT],
    ['no authentication (stdio, --no-auth)', undefined],
    ['the xiaozhi bridge', XIAOZHI_AUTH],
  ])('with %s and a client that declares form elicitation and would accept: no form is sent, OPERATOR_REQUIRED, nothing reaches the device', async (_w, auth) => {
    const dev = await setup();
    const { client, asked } = await connect(auth, () => ({ action: 'accept', content: { device_id: 'rig1' } }));
    for (const [tool, what] of [
      ['estop_clear', /estop_clear is operator-only/],
      ['remove_device', /remove_device is operator-only/],
    ] as const) {
      const r = await call(client, tool, { device_id: 'rig1' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(what);
    }
    expect(asked).toHaveLength(0);
    await flush();
    expect(cmds(dev)).toHaveLength(0);
    expect(core.journal.device('rig1')).toBeDefined();
    expect(dev.closed).toBe(false);
  });
});

describe("the person at the host's own terminal can confirm", () => {
  it('an agent-token call is confirmed by typing the device id at the host: the command reaches the device and completes', async () => {
    const dev = await setup();
    const host = hostTerminal('rig1');
    const { client, asked } = await connect(AGENT, () => ({ action: 'decline' }), host.confirm);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(r.isError).toBeFalsy();
    expect(asked).toHaveLength(0);
    expect(host.asked).toEqual([{ tool: 'estop_clear', what: 'clear the latched e-stop of device rig1', deviceId: 'rig1', client: 'agent' }]);
    expect(r.structuredContent).toMatchObject({ action: 'estop.clear', state: 'completed' });
    expect(cmds(dev)).toMatchObject([{ a: 'estop.clear', p: {} }]);
  });

  it('a call without a token (--no-auth) is asked at the host too', async () => {
    await setup();
    const host = hostTerminal('rig1');
    const { client } = await connect(undefined, undefined, host.confirm);
    const r = await call(client, 'remove_device', { device_id: 'rig1' });
    expect(r.structuredContent).toMatchObject({ removed: true });
    expect(host.asked[0]).toMatchObject({ tool: 'remove_device', client: null });
  });

  it.each([
    ['types another device id', 'rig2', /did not confirm it \(typed "rig2", not the device id\)/],
    ['does not answer', null, /did not confirm it \(no answer within 120 s\)/],
  ])('when the person at the host %s, the call is refused and nothing is sent', async (_w, typed, why) => {
    const dev = await setup();
    const { client } = await connect(AGENT, undefined, hostTerminal(typed).confirm);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(why);
    expect(text(r)).toMatch(/proofrig call --operator/);
    expect(cmds(dev)).toHaveLength(0);
  });

  it('a xiaozhi call is refused without asking the host (a remote third party is never confirmed on its behalf)', async () => {
    const dev = await setup();
    const host = hostTerminal('rig1');
    const { client } = await connect(XIAOZHI_AUTH, undefined, host.confirm);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(text(r)).toMatch(/^OPERATOR_REQUIRED: .*client "xiaozhi" are never confirmed on its behalf/);
    expect(host.asked).toHaveLength(0);
    expect(cmds(dev)).toHaveLength(0);
  });

  it('a host without an interactive terminal says so', async () => {
    await setup();
    const { client } = await connect(AGENT);
    const r = await call(client, 'estop_clear', { device_id: 'rig1' });
    expect(text(r)).toMatch(/The host has no interactive terminal where a person could confirm it/);
  });
});

describe('the host terminal prompt', () => {
  const q = (deviceId: string): ConfirmRequest => ({ tool: 'estop_clear', what: `clear the latched e-stop of device ${deviceId}`, deviceId, client: 'agent' });
  const term = (timeoutMs = 5000) => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (d) => (shown += d));
    return { input, confirm: terminalConfirm(input, output, timeoutMs), shown: () => shown };
  };

  it('asks what the call would do and who asks; typing the device id confirms it', async () => {
    const t = term();
    const answer = t.confirm(q('rig1'), new AbortController().signal);
    await flush();
    expect(t.shown()).toMatch(/OPERATOR CONFIRMATION \(asked by MCP client "agent"\): clear the latched e-stop of device rig1/);
    t.input.write('rig1\n');
    expect(await answer).toEqual({ ok: true });
    expect(t.shown()).toMatch(/confirmed: estop_clear rig1/);
  });

  it('anything else, the deadline or the caller going away refuses it', async () => {
    const t = term(200);
    const wrong = t.confirm(q('rig1'), new AbortController().signal);
    await flush();
    t.input.write('yes\n');
    expect(await wrong).toEqual({ ok: false, why: 'typed "yes", not the device id' });
    expect(await t.confirm(q('rig1'), new AbortController().signal)).toEqual({ ok: false, why: 'no answer within 200 ms' });
    const ac = new AbortController();
    const gone = t.confirm(q('rig1'), ac.signal);
    await flush();
    ac.abort();
    expect(await gone).toEqual({ ok: false, why: 'the caller went away' });
  });

  it('asks one question at a time: a second call waits its turn and gets its own answer', async () => {
    const t = term();
    const a = t.confirm(q('rig1'), new AbortController().signal);
    const b = t.confirm(q('rig2'), new AbortController().signal);
    await flush();
    expect(t.shown()).not.toMatch(/rig2/);
    t.input.write('rig1\n');
    expect(await a).toEqual({ ok: true });
    await flush();
    expect(t.shown()).toMatch(/device rig2/);
    t.input.write('rig1\n');
    expect(await b).toMatchObject({ ok: false });
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
