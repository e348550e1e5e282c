// Wires a running proofrig: host core + HTTP (MCP and device gateway) + optional stdio MCP
// + simulated rigs that run the built firmware file and dial into the gateway over real TCP.
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { DEVICE_PATH } from '@proofrig/protocol';
import type { HostConfirm } from './mcp/operator-tools.js';
import type { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Clock } from '@proofrig/protocol/clock';
import { HostCore } from './core/host.js';
import { newSecret } from './core/ids.js';
import { startHttpHost, type HttpHost, type HttpOptions } from './mcp/http.js';
import { createMcpServer, type McpOptions } from './mcp/tools.js';
import type { Exposure } from './mcp/exposure.js';
import { XiaozhiBridge } from './mcp/xiaozhi.js';
import { lockJournal } from './journal-lock.js';
import { isPostgresUrl } from './core/journal/db-url.js';
import { FIRMWARE_FILE, FIRMWARE_MQTT_FILE } from './paths.js';
// Only --broker needs mqtt.js: loaded with import() then.
import type { MqttGateway } from './gateway/mqtt-gateway.js';
import { loadOrCreateBrokerPassword } from './broker/host-password.js';
import { HOST_USER } from './broker/mosquitto-auth.js';
import { ephemeralTokens, loadOrCreateTokens, prepareStateDir, stateDir, type TokenSet } from './state-dir.js';
import { loadBoard } from './cli/board.js';
// Only --sim needs the simulator: it is loaded with import() then, never for a plain `serve`.
import type { Engine, SimRig } from '@proofrig/sim';

export interface SimSpec {
  boardFile: string;
  deviceId?: string;
}

/** The MCP-over-HTTP limits `serve` passes through unchanged (documented on HttpOptions). */
type HttpLimits = Pick<HttpOptions, 'allowRemoteMcp' | 'allowedHosts' | 'allowedOrigins' | 'sessionIdleMs' | 'maxSessions' | 'maxConnections' | 'maxConnectionsPerAddress'>;

export interface ServeOptions extends HttpLimits {
  db: string;
  /** Port for MCP over HTTP and the device gateway (0 = any free port). */
  port: number;
  listenHost?: string;
  /** Require a bearer token on /mcp (default true). false = --no-auth, loopback only. */
  auth?: boolean;
  /** Asks the person at the host's own terminal to confirm operator-only calls without the operator token. */
  confirmAtHost?: HostConfirm;
  /** What MCP clients (HTTP, stdio, xiaozhi) see and act on; default everything. */
  exposure?: Exposure;
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
  /** Dial out to a xiaozhi MCP endpoint (ws:// or wss:// URL with its token) and serve the tools there too. */
  xiaozhi?: string;
  /** Back-off of the xiaozhi bridge (tests shorten it). */
  xiaozhiBackoff?: { minMs: number; maxMs: number; healthyMs: number };
  /** Where the simulated rigs' firmware runs: 'vm' (default) or 'espruino' (PROOFRIG_ESPRUINO). */
  engine?: Engine;
  /** With engine 'espruino': run each interpreter no faster than an ESP32 (a CPU quota per process, calibrated here). */
  chipSpeed?: boolean;
  /** Longest the tools wait for the simulated rigs to come online at start (default 10000). */
  simBootWaitMs?: number;
  /** The option that sets the port, for the message when it is taken (default "--http"). */
  portFlag?: string;
  /** Journal retention of terminal commands (default 30 days, 1,000,000 commands). */
  retention?: { maxAgeMs?: number; maxCommands?: number };
  /**
   * Also take devices through this MQTT broker (mqtt://[USER:PASS@]HOST[:PORT]); simulated rigs then
   * run the MQTT firmware (firmware/dist/proofrig-mqtt.js) and reach the host through it. Without
   * credentials in the URL the host logs in as HOST_USER with the password beside the journal
   * (`proofrig broker acl` writes both into the broker's files).
   */
  broker?: string;
  /**
   * With a broker: called once simulated rigs are provisioned, before they boot, with every
   * provisioned device and its secret, so the broker's password and ACL files can be brought up to date.
   */
  brokerAuth?: (devices: { device_id: string; secret: string }[]) => Promise<void>;
}

/** Bounded wait for this run's simulated rigs to dial in before tools answer. */
const SIM_BOOT_WAIT_MS = 10000;

export interface Running {
  core: HostCore;
  http: HttpHost;
  rigs: Map<string, SimRig>;
  /** Console port of each simulated rig, when consolePort was given. */
  consoles: Map<string, number>;
  /** The MQTT device gateway, when a broker was given. */
  mqtt: MqttGateway | undefined;
  /** The xiaozhi bridge, when --xiaozhi was given. */
  xiaozhi: XiaozhiBridge | undefined;
  url: string;
  /** The MCP bearer tokens (null with auth off). */
  tokens: TokenSet | null;
  /** Resolves once every simulated rig is online, or the bounded boot wait passed. */
  ready: Promise<void>;
  /** Stop everything (sims, stdio MCP, gateway, journal); safe to call more than once. */
  close(): Promise<void>;
}

/** Parse "boards/x.json=my-id" (the id part is optional). */
export function parseSimSpec(s: string): SimSpec {
  const i = s.lastIndexOf('=');
  return i > 0 ? { boardFile: s.slice(0, i), deviceId: s.slice(i + 1) } : { boardFile: s };
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
  const simLib = sims.length > 0 || (o.faults ?? []).length > 0 ? await import('@proofrig/sim') : undefined;
  const engine = o.engine ?? 'vm';
  if (engine !== 'vm' && engine !== 'espruino') throw new Error(`--engine must be vm or espruino, got "${String(engine)}"`);
  if (simLib && engine === 'espruino') simLib.espruinoBinary(); // a clear error before anything starts
  if (o.chipSpeed && engine !== 'espruino') throw new Error('--chip-speed needs --engine espruino');
  const noChip = simLib && o.chipSpeed ? simLib.chipSpeedUnavailable() : undefined;
  if (noChip) throw new Error(noChip);
  const faults = (o.faults ?? []).map((f) => {
    const { parseFault, resolveFault } = simLib!;
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
  // Checked before anything starts (a bad URL throws here); dialled once the host is up.
  const bridge = o.xiaozhi
    ? new XiaozhiBridge({
        url: o.xiaozhi,
        createServer: () => createMcpServer(core, mcp),
        logger: o.logger,
        minBackoffMs: o.xiaozhiBackoff?.minMs,
        maxBackoffMs: o.xiaozhiBackoff?.maxMs,
        healthyMs: o.xiaozhiBackoff?.healthyMs,
      })
    : undefined;
  let brokerUrl: URL | undefined;
  if (o.broker !== undefined) {
    try {
      brokerUrl = new URL(o.broker);
    } catch {
      brokerUrl = undefined;
    }
    if (!brokerUrl || brokerUrl.protocol !== 'mqtt:' || !brokerUrl.hostname || (brokerUrl.pathname !== '' && brokerUrl.pathname !== '/'))
      throw new Error(`--broker must be mqtt://[USER:PASS@]HOST[:PORT], got "${o.broker}"`);
  }
  const firmware = o.firmwareFile ?? (brokerUrl ? FIRMWARE_MQTT_FILE : FIRMWARE_FILE);
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
  // A PostgreSQL journal is held by an advisory lock in the database itself (core/journal/postgres.ts).
  const lock = o.db === ':memory:' || isPostgresUrl(o.db) ? undefined : lockJournal(o.db);
  let core: HostCore;
  let http: HttpHost;
  const mcp: McpOptions = { confirmAtHost: o.confirmAtHost, exposure: o.exposure };
  try {
    core = new HostCore({ db: o.db, clock: o.clock, logger: o.logger, heartbeatMs: o.heartbeatMs, offlineGraceMs: o.offlineGraceMs, retention: o.retention });
  } catch (e) {
    lock?.release();
    throw e;
  }
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
      mcp,
    });
  } catch (e) {
    core.close();
    lock?.release();
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE')
      throw new Error(
        `port ${o.port} on ${o.listenHost ?? '127.0.0.1'} is already in use (another proofrig, e.g. npm start?); choose another with ${o.portFlag ?? '--http'} PORT, or ${o.portFlag ?? '--http'} 0 for any free port`,
      );
    throw e;
  }
  lock?.setPort(http.port);
  const url = `http://${o.listenHost ?? '127.0.0.1'}:${http.port}`;
  let mqtt: MqttGateway | undefined;
  if (brokerUrl) {
    const creds = brokerUrl.username
      ? {}
      : { username: HOST_USER, password: o.db === ':memory:' ? undefined : loadOrCreateBrokerPassword(stateDir(o.db)) };
    try {
      const { MqttGateway } = await import('./gateway/mqtt-gateway.js');
      mqtt = await MqttGateway.start({ url: brokerUrl.href, ...creds, log: o.logger }, (link) => core.attach(link));
    } catch (e) {
      await http.close();
      core.close();
      lock?.release();
      throw e;
    }
    o.logger.info({ evt: 'broker_connected', broker: `${brokerUrl.hostname}:${brokerUrl.port || 1883}` }, 'devices also connect through the MQTT broker');
  }
  // Simulated rigs of earlier runs that this run does not start are gone for good: forget them
  // (unless commands of theirs are still open) so they do not pile up as offline devices.
  for (const d of core.journal.devices())
    if (d.simulated && !sims.some((s) => s.id === d.device_id)) {
      const r = core.removeDevice(d.device_id);
      if (r.ok) o.logger.info({ evt: 'sim_forgotten', device_id: d.device_id }, 'simulated rig of an earlier run removed');
    }

  const rigs = new Map<string, SimRig>();
  const consoles = new Map<string, number>();
  let stdio: StdioServerTransport | undefined;
  const bootWait = o.simBootWaitMs ?? SIM_BOOT_WAIT_MS;
  const ready = Promise.all(sims.map((s) => core.waitOnline(s.id, bootWait))).then(() => {});
  mcp.ready = ready;
  try {
    for (const s of sims) {
      const secret = newSecret();
      core.provision(s.id, secret, s.board, true);
      core.expect(s.id, bootWait);
      const rig = new simLib!.SimRig({
        engine,
        chipSpeed: o.chipSpeed,
        firmwarePath: firmware,
        config: { dev: s.id, secret, host: brokerUrl ? `mqtt://${brokerUrl.host}` : `ws://127.0.0.1:${http.port}${DEVICE_PATH}`, board: s.board },
        clock: o.clock,
        seed: o.seed,
        console: (line) => o.logger.debug({ evt: 'sim_console', device_id: s.id, line }, 'firmware console'),
      });
      rigs.set(s.id, rig);
      const chip = rig.espruino?.chipSpeed;
      if (chip) o.logger.info({ evt: 'chip_speed', device_id: s.id, ...chip }, `simulated rig ${s.id} at chip speed: ${(chip.share * 100).toFixed(2)} % of a CPU (quota ${chip.quotaUs} µs per ${chip.periodUs} µs)`);
    }
    if (brokerUrl && o.brokerAuth && sims.length) await o.brokerAuth(core.journal.devices().map((d) => ({ device_id: d.device_id, secret: d.secret })));
    for (const f of faults) rigs.get(f.device)!.setFault(f.part, f.fault as never, f.where);
    for (const rig of rigs.values()) rig.boot();
    if (o.consolePort !== undefined) {
      let i = 0;
      for (const [id, rig] of rigs) consoles.set(id, await rig.serveConsole(o.consolePort === 0 ? 0 : o.consolePort + i++));
    }

    if (o.stdio) {
      const server = createMcpServer(core, mcp);
      // Loaded only for --stdio: a cold `serve` does not pay for it.
      const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
      stdio = new StdioServerTransport();
      await server.connect(stdio);
    }
    bridge?.start();
  } catch (e) {
    await bridge?.close();
    for (const r of rigs.values()) r.shutdown();
    await mqtt?.close();
    await http.close();
    core.close();
    lock?.release();
    throw e;
  }

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await bridge?.close();
      for (const r of rigs.values()) r.shutdown();
      await stdio?.close().catch(() => {});
      await mqtt?.close();
      await http.close();
      core.close();
      lock?.release();
    })());
  return { core, http, rigs, consoles, url, tokens, ready, xiaozhi: bridge, mqtt, close };
}
