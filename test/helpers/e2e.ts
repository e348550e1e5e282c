// End-to-end harness: the real MCP client (SDK Client over Streamable HTTP) → MCP server →
// host core → real WebSocket → simulated rig running the built firmware file.
import type { Exposure } from '../../host/src/mcp/exposure.js';
import type { HostConfirm } from '../../host/src/mcp/operator-tools.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { serve, type Running } from '../../host/src/serve.js';
import type { CommandStatus } from '../../host/src/core/command-view.js';
import { engineOf, type Tier } from './engines.js';

export const RELAY_BOARD = new URL('../../boards/relay-rig-4ch.json', import.meta.url).pathname;
export const RIG = 'relay-rig-4ch';

export interface E2E {
  running: Running;
  client: Client;
  db: string;
  logs: Record<string, unknown>[];
  call(tool: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** Call an action tool, then get_action_status until terminal. */
  act(tool: string, args: Record<string, unknown>): Promise<{ first: CommandStatus; final: CommandStatus }>;
  waitTerminal(commandId: string, ms?: number): Promise<CommandStatus>;
  waitOnline(dev?: string, ms?: number): Promise<void>;
  /**
   * What happened to a command, for an assertion's message (`expect(final, e.story(final))`): its
   * detail, its journal history, the host's log lines about its device and the device's console, times relative to its
   * submission. A failure on a slow machine then says why instead of only which field differed.
   */
  story(c: CommandStatus): string;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A Streamable HTTP client transport to a running host, sending its agent (or operator) token. */
export function mcpTransport(running: Running, who: 'agent' | 'operator' = 'agent'): StreamableHTTPClientTransport {
  const token = running.tokens?.[who];
  return new StreamableHTTPClientTransport(new URL(running.url + '/mcp'), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : undefined);
}

export async function until(f: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export async function startE2E(
  o: { faults?: string[]; db?: string; sims?: { boardFile: string; deviceId?: string }[]; device?: string; engine?: Tier; firmwareFile?: string; offlineGraceMs?: number; heartbeatMs?: number; confirmAtHost?: HostConfirm; exposure?: Exposure; broker?: string; brokerAuth?: (devices: { device_id: string; secret: string }[]) => Promise<void> } = {},
): Promise<E2E> {
  const db = o.db ?? join(mkdtempSync(join(tmpdir(), 'proofrig-e2e-')), 'journal.db');
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l) logs.push(JSON.parse(l));
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  // A real interpreter starts as a process (and installs its Storage on first boot): more time, not less rigour.
  const engine = o.engine === undefined ? undefined : engineOf(o.engine);
  const slow = engine === 'espruino';
  const start = async () => {
    const running = await serve({
      db,
      port: 0,
      sims: o.sims ?? [{ boardFile: RELAY_BOARD }],
      faults: o.faults,
      firmwareFile: o.firmwareFile,
      logger,
      // A real interpreter answers from its own event loop, which idles up to 50 ms between polls of
      // its sockets (Linux build), on a machine shared by several runs: give it a slower heartbeat.
      // At chip speed the production default (2000 ms): every frame in and out costs today's firmware
      // millions of instructions (ws masking and MACs in JavaScript), tenths of a second on an ESP32,
      // and a 400 ms heartbeat leaves a stepper rig no time for its command (docs/chip-speed.md).
      heartbeatMs: o.heartbeatMs ?? (o.engine === 'chip-speed' ? 2000 : engine === 'espruino' ? 400 : 150),
      offlineGraceMs: o.offlineGraceMs ?? 8000,
      seed: 7,
      engine,
      chipSpeed: o.engine === 'chip-speed',
      confirmAtHost: o.confirmAtHost,
      exposure: o.exposure,
      broker: o.broker,
      brokerAuth: o.brokerAuth,
    });
    const client = new Client({ name: 'e2e', version: '1' });
    await client.connect(mcpTransport(running));
    return { running, client };
  };
  let { running, client } = await start();

  const e: E2E = {
    get running() {
      return running;
    },
    get client() {
      return client;
    },
    db,
    logs,
    call: (tool, args = {}) => client.callTool({ name: tool, arguments: args }) as Promise<CallToolResult>,
    async waitTerminal(commandId, ms = slow ? 30000 : 15000) {
      const end = Date.now() + ms;
      for (;;) {
        const r = await e.call('get_action_status', { command_id: commandId, wait_ms: 2000 });
        if (r.isError) throw new Error(JSON.stringify(r.content));
        const s = r.structuredContent as unknown as CommandStatus;
        if (s.terminal) return s;
        if (Date.now() > end) throw new Error(`command ${commandId} not terminal within ${ms} ms: ${JSON.stringify(s)}`);
      }
    },
    async act(tool, args) {
      const r = await e.call(tool, args);
      if (r.isError) throw new Error(JSON.stringify(r.content));
      const first = r.structuredContent as unknown as CommandStatus;
      return { first, final: await e.waitTerminal(first.command_id) };
    },
    story(c) {
      const t0 = Date.parse(c.submitted_at);
      const rel = (t: unknown) => (typeof t === 'number' ? `+${t - t0} ms` : '?');
      const hist = running.core.commands.history(c.command_id).map((h) => `  ${rel(h.at)} ${h.state}${h.note ? ` (${h.note})` : ''}`);
      const lines = logs
        .filter((l) => l.device_id === c.device_id && (l.command_id === c.command_id || l.command_id === undefined))
        .map((l) =>
          l.evt === 'sim_console'
            ? `  ${rel(l.time)} device console: ${String(l.line).replace(/[\r\x1b]\[?J?|^>/g, '').trim()}`
            : `  ${rel(l.time)} ${String(l.evt ?? l.msg)}${l.reason ? ` ${String(l.reason)}` : ''}${l.detail ? `: ${String(l.detail)}` : ''}`,
        );
      return [`${c.state} ${c.error_code ?? ''} after ${c.elapsed_ms} ms (deadline ${c.deadline_ms} ms): ${c.detail ?? ''}`, 'history:', ...hist, 'host log:', ...lines].join('\n');
    },
    async waitOnline(dev = o.device ?? RIG, ms = slow ? 30000 : 8000) {
      await until(() => running.core.devices.view(dev)?.online === true && running.core.devices.view(dev)?.state !== null, ms, `${dev} online`);
    },
    async restart() {
      await client.close();
      await running.close();
      ({ running, client } = await start());
    },
    async close() {
      await client.close().catch(() => {});
      await running.close();
    },
  };
  // A rig that never came online is still running (an interpreter process on the Espruino engine): close it.
  await e.waitOnline().catch(async (err) => {
    await e.close();
    throw err;
  });
  return e;
}
