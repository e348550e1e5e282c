// Wires a running proofrig: host core + HTTP (MCP and device gateway) + optional stdio MCP
// + simulated rigs that run the built firmware file and dial into the gateway over real TCP.
import { existsSync, readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { checkBoard, DEVICE_PATH, type BoardDef } from '@proofrig/protocol';
import type { Clock } from '@proofrig/protocol/clock';
import { HostCore } from './core/host.js';
import { newSecret } from './core/ids.js';
import { startHttpHost, type HttpHost } from './mcp/http.js';
import { createMcpServer } from './mcp/tools.js';
import { FIRMWARE_FILE } from './paths.js';
import { ephemeralTokens, loadOrCreateTokens, prepareStateDir, stateDir, type TokenSet } from './state-dir.js';
import type { SimRig } from '@proofrig/sim';

export interface SimSpec {
  boardFile: string;
  deviceId?: string;
}

export interface ServeOptions {
  db: string;
  /** Port for MCP over HTTP and the device gateway (0 = any free port). */
  port: number;
  listenHost?: string;
  /** Serve MCP to other machines too (they need the token, which travels in clear over http). */
  allowRemoteMcp?: boolean;
  /** Require a bearer token on /mcp (default true). false = --no-auth, loopback only. */
  auth?: boolean;
  /** Extra Host header names / Origins MCP accepts (--allowed-host, --allowed-origin). */
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /** MCP session idle expiry and cap, connection caps (see HttpOptions). */
  sessionIdleMs?: number;
  maxSessions?: number;
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  stdio?: boolean;
  sims?: SimSpec[];
  faults?: string[];
  logger: Logger;
  heartbeatMs?: number;
  offlineGraceMs?: number;
  clock?: Clock;
  firmwareFile?: string;
  /** Seed for the simulated rigs (actuation jitter); random when absent. */
  seed?: number;
  /** Serve each simulated rig's Espruino console on loopback TCP from this port on (rig i on port + i). */
  consolePort?: number;
  /** Journal retention of terminal commands (default 30 days, 1,000,000 commands). */
  retention?: { maxAgeMs?: number; maxCommands?: number };
}

export interface Running {
  core: HostCore;
  http: HttpHost;
  rigs: Map<string, SimRig>;
  /** Console port of each simulated rig, when consolePort was given. */
  consoles: Map<string, number>;
  url: string;
  /** The MCP bearer tokens (null with auth off). */
  tokens: TokenSet | null;
  close(): Promise<void>;
}

/** Parse "boards/x.json=my-id" (the id part is optional). */
export function parseSimSpec(s: string): SimSpec {
  const i = s.lastIndexOf('=');
  return i > 0 ? { boardFile: s.slice(0, i), deviceId: s.slice(i + 1) } : { boardFile: s };
}

export function loadBoard(file: string): BoardDef {
  if (!existsSync(file)) throw new Error(`board file ${file} does not exist`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`board file ${file} is not valid JSON: ${(e as Error).message}`);
  }
  const r = checkBoard(raw);
  if (!r.ok) throw new Error(`board file ${file} is invalid:\n  ${r.errors.join('\n  ')}`);
  return r.board;
}

export async function serve(o: ServeOptions): Promise<Running> {
  // Validate everything the user typed before anything starts.
  const sims = (o.sims ?? []).map((s) => {
    const board = loadBoard(s.boardFile);
    return { board, id: s.deviceId ?? board.id };
  });
  const ids = sims.map((s) => s.id);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup) throw new Error(`two simulated rigs would share the device id "${dup}"; give one another id with --sim FILE=ID`);
  // The simulator loads only when asked for (a cold `serve` for real devices does not pay for it).
  const simMod = sims.length > 0 || (o.faults ?? []).length > 0 ? await import('@proofrig/sim') : undefined;
  const faults = (o.faults ?? []).map((f) => {
    const { parseFault, resolveFault } = simMod!;
    const p = parseFault(f);
    const sim = sims.find((s) => s.id === p.device);
    if (!sim) throw new Error(`--fault ${f}: no simulated rig has device id "${p.device}" (rigs: ${ids.join(', ') || 'none'})`);
    try {
      resolveFault(sim.board, p.part, p.fault, p.where);
    } catch (e) {
      throw new Error(`--fault ${f}: ${(e as Error).message}`);
    }
    return p;
  });
  const firmware = o.firmwareFile ?? FIRMWARE_FILE;
  if (sims.length > 0 && !existsSync(firmware)) throw new Error(`firmware file ${firmware} is missing; build it with: npm run build`);
  const auth = o.auth ?? true;
  if (!auth && o.allowRemoteMcp) throw new Error('--no-auth is only allowed while MCP answers this machine only; drop --allow-remote-mcp or keep the token');
  let tokens: TokenSet | null = null;
  if (o.db !== ':memory:') {
    const dir = stateDir(o.db);
    const warning = prepareStateDir(dir);
    if (warning) o.logger.warn({ evt: 'state_dir_open' }, warning);
    if (auth) tokens = loadOrCreateTokens(dir);
  } else if (auth) tokens = ephemeralTokens();

  const core = new HostCore({ db: o.db, clock: o.clock, logger: o.logger, heartbeatMs: o.heartbeatMs, offlineGraceMs: o.offlineGraceMs, retention: o.retention });
  let http: HttpHost;
  try {
    http = await startHttpHost(core, o.port, {
      host: o.listenHost ?? '127.0.0.1',
      allowRemoteMcp: o.allowRemoteMcp ?? false,
      tokens,
      allowedHosts: o.allowedHosts,
      allowedOrigins: o.allowedOrigins,
      sessionIdleMs: o.sessionIdleMs,
      maxSessions: o.maxSessions,
      maxConnections: o.maxConnections,
      maxConnectionsPerAddress: o.maxConnectionsPerAddress,
    });
  } catch (e) {
    core.close();
    throw e;
  }
  const url = `http://${o.listenHost ?? '127.0.0.1'}:${http.port}`;

  const rigs = new Map<string, SimRig>();
  const consoles = new Map<string, number>();
  try {
    for (const s of sims) {
      const secret = newSecret();
      core.provision(s.id, secret, s.board);
      const rig = new simMod!.SimRig({
        firmwarePath: firmware,
        config: { dev: s.id, secret, host: `ws://127.0.0.1:${http.port}${DEVICE_PATH}`, board: s.board },
        clock: o.clock,
        seed: o.seed,
        console: (line) => o.logger.debug({ evt: 'sim_console', device_id: s.id, line }, 'firmware console'),
      });
      rigs.set(s.id, rig);
    }
    for (const f of faults) rigs.get(f.device)!.setFault(f.part, f.fault as never, f.where);
    for (const rig of rigs.values()) rig.boot();
    if (o.consolePort !== undefined) {
      let i = 0;
      for (const [id, rig] of rigs) consoles.set(id, await rig.serveConsole(o.consolePort === 0 ? 0 : o.consolePort + i++));
    }

    if (o.stdio) {
      const server = createMcpServer(core);
      const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
      await server.connect(new StdioServerTransport());
    }
  } catch (e) {
    for (const r of rigs.values()) r.shutdown();
    await http.close();
    core.close();
    throw e;
  }

  const close = async () => {
    for (const r of rigs.values()) r.shutdown();
    await http.close();
    core.close();
  };
  return { core, http, rigs, consoles, url, tokens, close };
}
