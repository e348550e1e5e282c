// The `proofrig` command line.
import { DEFAULT_DB } from '../paths.js';
import { Command, Option } from 'commander';
import pino from 'pino';
import type { TokenSet } from '../state-dir.js';
import { redactUrl } from '../core/journal/db-url.js';
import { parseSimSpec, serve, type Running } from '../serve.js';
import { registerBoardCommand } from './board.js';
import { guardProcess } from '../process-guard.js';
import { terminalConfirm } from './terminal-confirm.js';
import { Exposure } from '../mcp/exposure.js';
import { VERSION } from '../version.js';
import { CLIENTS, clientConfig as configText, CONFIG_HOME, configHome, type ClientKind } from './config.js';
import { registerDevicesCommand } from './devices.js';
import { registerBrokerCommand } from './broker.js';

/** Longest a shutdown may take before the process exits anyway. */
const SHUTDOWN_HARD_MS = 5000;
/** How often a stdio host checks that the process that started it is still there. */
const PARENT_CHECK_MS = 500;
/** The exit code of a host whose journal became unwritable under it (after the journal_unwritable log line). */
export const EXIT_JOURNAL_LOST = 3;

const collect = (v: string, prev: string[]) => prev.concat([v]);

/** Every verb but serve, loaded only when the command line is not `serve` (esptool-js, serialport, the MCP client and the simulator cost `serve` a cold start). */
export async function loadVerbs() {
  const [call, flash, upload, sim, rigs] = await Promise.all([
    import('./call.js'),
    import('../flash/command.js'),
    import('../upload/index.js'),
    import('./sim.js'),
    import('./rigs.js'),
  ]);
  return { ...call, ...flash, ...upload, ...sim, ...rigs };
}
type Verbs = Awaited<ReturnType<typeof loadVerbs>>;

function intOption(name: string, min: number, max: number) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer ${min}..${max}, got "${v}"`);
    return n;
  };
}

/**
 * The client config block of the banner. The token itself is printed only when it was just
 * created (shown once); afterwards the banner says which file holds it.
 */
/** The dashboard's address: the page takes the token from the fragment, which browsers never send to the server. */
export function dashboardUrl(base: string, tokens: TokenSet | null, mayShowToken = true): string {
  if (!tokens) return `${base}/`;
  if ((tokens.created && mayShowToken) || !tokens.agentFile) return `${base}/#token=${encodeURIComponent(tokens.agent)}`;
  return `${base}/#token=<the token in ${tokens.agentFile}>`;
}

export function clientConfig(mcpUrl: string, tokens: TokenSet | null, mayShowToken = true): string[] {
  if (!tokens) {
    return [
      'MCP runs WITHOUT authentication (--no-auth). Connect an MCP client, e.g. in its config:',
      JSON.stringify({ mcpServers: { proofrig: { type: 'http', url: mcpUrl } } }, null, 2),
      '',
    ];
  }
  const shown = (tokens.created && mayShowToken) || !tokens.agentFile;
  const bearer = shown ? `Bearer ${tokens.agent}` : `Bearer <the token in ${tokens.agentFile}>`;
  return [
    shown
      ? `MCP needs a bearer token. New tokens were generated${tokens.agentFile ? ` (stored 0600 in ${tokens.agentFile} and ${tokens.operatorFile})` : ' for this run only'}; this is the only time they are printed.`
      : `MCP needs the bearer token stored in ${tokens.agentFile} (operator: ${tokens.operatorFile}).`,
    'Connect an MCP client, e.g. in its config:',
    JSON.stringify({ mcpServers: { proofrig: { type: 'http', url: mcpUrl, headers: { Authorization: bearer } } } }, null, 2),
    ...(shown && !tokens.agentFile ? [`Operator token (operator-only actions): ${tokens.operator}`] : []),
    '',
  ];
}

export function buildCli(verbs?: Verbs): Command {
  const program = new Command('proofrig')
    .description('Drive relay/stepper rigs through ESP32 devices and report only what the hardware confirmed.')
    .version(VERSION, '-V, --version', 'print the proofrig version')
    .showHelpAfterError()
    // Commander would exit 1 on a usage error; the README promises 2 (1 is a tool error). Its
    // message and the help are already printed when this runs; subcommands inherit it.
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    });

  program
    .command('serve')
    .description('Run the host: device gateway (WebSocket at /device) and MCP server (Streamable HTTP at /mcp, or stdio).')
    .option('--stdio', 'serve MCP on stdin/stdout (logs go to stderr) and exit when stdin closes; the HTTP listener (any free port unless --http) still takes devices', false)
    .addOption(
      new Option('--http <port>', 'port for MCP over HTTP and the device gateway (default 8787; with --stdio any free port; real devices need a fixed one)').argParser(
        intOption('--http', 0, 65535),
      ),
    )
    .option('--listen <addr>', 'address to listen on (0.0.0.0 for real devices on your LAN)', '127.0.0.1')
    .option('--allow-remote-mcp', 'answer MCP requests from other machines too (they need the token; it travels in clear over http)', false)
    .option('--no-auth', 'serve MCP without the bearer token (only while MCP answers this machine only; a warning is logged)')
    .option('--allowed-host <name>', 'also accept this Host header on /mcp (name or name:port; repeatable)', collect, [])
    .option('--allowed-origin <origin>', 'also accept this browser Origin on /mcp, e.g. http://rig-pc.lan:8787 (repeatable)', collect, [])
    .addOption(new Option('--session-idle-s <s>', 'close an MCP session unused this long').default(600).argParser(intOption('--session-idle-s', 5, 86400)))
    .addOption(new Option('--max-sessions <n>', 'open MCP sessions at most').default(64).argParser(intOption('--max-sessions', 1, 10000)))
    .addOption(new Option('--max-connections <n>', 'open TCP connections (devices and MCP) at most').default(256).argParser(intOption('--max-connections', 1, 100000)))
    .addOption(new Option('--max-connections-per-address <n>', 'open TCP connections from one address at most').default(32).argParser(intOption('--max-connections-per-address', 1, 100000)))
    .option('--sim <board[=id]>', 'start a simulated rig running the built firmware (repeatable)', collect, [])
    .option('--fault <dev:part:fault>', 'inject a fault into a simulated rig, e.g. relay-rig-4ch:relay2:coil_open (repeatable)', collect, [])
    .option('--expose <list>', 'MCP clients see and act on only these: device ids, device:output pairs or output names, comma-separated, or @FILE with one a line (repeatable; default everything)', collect, [])
    .addOption(
      new Option('--console-port <port>', "serve each simulated rig's Espruino console on loopback TCP (rig i on port + i), for proofrig upload --tcp").argParser(
        intOption('--console-port', 0, 65535),
      ),
    )
    .addOption(
      new Option('--xiaozhi <url>', "also serve the tools to xiaozhi: dial out to its MCP endpoint (ws(s)://…?token=…); prefer the environment variable, which keeps the token out of ps")
        .env('XIAOZHI_MCP_ENDPOINT'),
    )
    .addOption(
      new Option('--engine <engine>', 'where simulated rigs run the firmware: vm, or espruino (the real interpreter named by PROOFRIG_ESPRUINO)')
        .choices(['vm', 'espruino'])
        .default('vm'),
    )
    .option('--chip-speed', 'with --engine espruino: run each interpreter no faster than an ESP32 (a CPU quota on its process, calibrated on this machine; needs root and the cgroup v1 cpu controller)', false)
    .option('--broker <url>', 'also take devices through this MQTT broker, mqtt://[USER:PASS@]HOST[:PORT]; without credentials the host logs in as proofrig-host with the password beside the journal (docs/mqtt.md)')
    .option('--db <path>', 'journal database file', DEFAULT_DB)
    .addOption(new Option('--heartbeat-ms <ms>', 'heartbeat period asked of devices').default(2000).argParser(intOption('--heartbeat-ms', 50, 600000)))
    .addOption(new Option('--retain-days <days>', 'prune terminal commands older than this from the journal (hourly; open ones never)').default(30).argParser(intOption('--retain-days', 1, 36500)))
    .addOption(new Option('--retain-commands <n>', 'keep at most this many terminal commands in the journal').default(1_000_000).argParser(intOption('--retain-commands', 1, 1_000_000_000)))
    .addOption(new Option('--log-level <level>', 'log level').choices(['debug', 'info', 'warn', 'error', 'silent']).default('info'))
    .action(async (o) => {
      const logger = pino({ level: o.logLevel, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination(2));
      guardProcess(logger);
      const port: number = o.http ?? (o.stdio ? 0 : 8787);
      // Signals and a closed stdin end the host even while it is still starting: close
      // whatever has started (sims, gateway, journal), then exit; a hung close cannot keep it alive.
      let running: Running | undefined;
      let stopping = false;
      const stop = (why: string) => {
        if (stopping) return;
        stopping = true;
        const t0 = Date.now();
        logger.info({ evt: 'shutdown', reason: why }, 'shutting down');
        // A close that hangs cannot keep the host alive; it then exits 1 and says the journal was not closed.
        setTimeout(() => {
          logger.error({ evt: 'shutdown_forced', after_ms: SHUTDOWN_HARD_MS }, `shutdown did not finish within ${SHUTDOWN_HARD_MS} ms; exiting without a clean journal close (SQLite recovers it at the next start)`);
          process.exit(1);
        }, SHUTDOWN_HARD_MS).unref();
        void started
          .then((r) => r.close())
          .then(
            () => {
              logger.info({ evt: 'shutdown_done', ms: Date.now() - t0 }, 'stopped: sockets closed, journal closed');
              process.exit(0);
            },
            (e: unknown) => {
              logger.error({ evt: 'shutdown_failed', err: (e as Error)?.message }, 'shutdown failed');
              process.exit(1);
            },
          );
      };
      for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => stop(sig));
      // A stdio client that goes away closes our stdin: that is the end of this host (under npx too).
      if (o.stdio) {
        process.stdin.once('end', () => stop('stdin closed'));
        process.stdin.once('close', () => stop('stdin closed'));
      }
      // Under npx or npm a SIGTERM reaches npm, not us, and leaves us re-parented (with a client's
      // pipe, or the port and the journal, still held): a changed parent means whoever started us
      // is gone. A host started directly (a shell, systemd) is left to its own signals.
      if (o.stdio || process.env.npm_command) {
        const parent = process.ppid;
        setInterval(() => {
          if (process.ppid !== parent) stop('parent process exited');
        }, PARENT_CHECK_MS).unref();
      }
      const started = serve({
        db: o.db,
        port,
        listenHost: o.listen,
        allowRemoteMcp: o.allowRemoteMcp,
        auth: o.auth,
        allowedHosts: o.allowedHost,
        allowedOrigins: o.allowedOrigin,
        maxConnections: o.maxConnections,
        maxConnectionsPerAddress: o.maxConnectionsPerAddress,
        sessionIdleMs: o.sessionIdleS * 1000,
        maxSessions: o.maxSessions,
        stdio: o.stdio,
        // The person at this terminal is the one who can confirm operator-only calls without the operator token.
        confirmAtHost: !o.stdio && process.stdin.isTTY && process.stderr.isTTY ? terminalConfirm(process.stdin, process.stderr) : undefined,
        sims: (o.sim as string[]).map(parseSimSpec),
        faults: o.fault,
        exposure: parseExposure(o.expose),
        logger,
        heartbeatMs: o.heartbeatMs,
        consolePort: o.consolePort,
        xiaozhi: o.xiaozhi,
        engine: o.engine,
        chipSpeed: o.chipSpeed,
        retention: { maxAgeMs: o.retainDays * 86400000, maxCommands: o.retainCommands },
        broker: o.broker,
      });
      running = await started;
      if (stopping) return;
      // Nothing more can be written, and closing the journal would touch the files that refuse it (a signal,
      // not an error, for SQLite's -shm mapping): the host ends at once, with its own exit code.
      running.core.events.once('journal_lost', () => process.exit(EXIT_JOURNAL_LOST));
      const mcpUrl = `${running.url}/mcp`;
      const banner = [
        `proofrig is running${running.rigs.size ? ` with simulated rig(s): ${[...running.rigs.keys()].join(', ')}` : ''}.`,
        `  MCP (Streamable HTTP): ${mcpUrl}${o.stdio ? '   (and stdio)' : ''}`,
        `  dashboard:             ${dashboardUrl(running.url, running.tokens, !o.stdio)}`,
        ...(running.tokens && !o.stdio ? ['                         (or `proofrig open` for a one-time link that needs no pasting)'] : []),
        `  devices connect to:    ws://${o.listen === '0.0.0.0' ? '<this-pc>' : o.listen}:${running.http.port}/device`,
        ...(running.mqtt ? [`                         and through the MQTT broker ${new URL(o.broker).host} (firmware/dist/proofrig-mqtt.js)`] : []),
        `  journal:               ${redactUrl(o.db)}`,
        ...[...running.consoles].map(([id, port]) => `  ${id} Espruino console: tcp://127.0.0.1:${port}`),
        ...(running.xiaozhi ? [`  xiaozhi MCP endpoint:  ${running.xiaozhi.safeUrl} (dialling out)`] : []),
        '',
        // Under --stdio the banner goes to stderr, which desktop clients keep in log files: no token there.
        ...clientConfig(mcpUrl, running.tokens, !o.stdio),
        `Or let the client start its own host over stdio (${CONFIG_HOME.claude}; other clients: npx proofrig config cursor|vscode|inspector [--stdio|--http]):`,
        configText({ client: 'claude', transport: 'stdio' }),
        '',
        'Or drive the rig from another terminal:',
        `  npx proofrig call list_devices`,
        `  npx proofrig call relay_set device_id=${[...running.rigs.keys()][0] ?? 'DEVICE'} channel=1 on=true`,
        '',
      ].join('\n');
      (o.stdio ? process.stderr : process.stdout).write(banner + '\n');
    });

  program
    .command('config')
    .description('Print a ready MCP client configuration with absolute paths (paste it into the client).')
    .argument('[client]', `one of ${CLIENTS.join(', ')}`, 'claude')
    .option('--stdio', 'the client starts its own host over stdio (default)')
    .option('--http', 'the client connects to a running host (npm start) over HTTP')
    .option('--url <url>', 'MCP URL of the running host for --http', process.env.PROOFRIG_URL ? new URL('/mcp', process.env.PROOFRIG_URL).href : 'http://127.0.0.1:8787/mcp')
    .option('--sim <board>', 'board to simulate in the stdio host: a bundled board id or a file (repeatable; default relay-rig-4ch)', collect, [])
    .action((client: string, o) => {
      if (!(CLIENTS as readonly string[]).includes(client)) throw new Error(`unknown client "${client}"; choose one of ${CLIENTS.join(', ')}`);
      if (o.stdio && o.http) throw new Error('choose one of --stdio and --http');
      const kind = client as ClientKind;
      process.stderr.write(`${configHome(kind, o.http ? 'http' : 'stdio')}:\n`);
      process.stdout.write(configText({ client: kind, transport: o.http ? 'http' : 'stdio', url: o.url, sims: o.sim.length ? o.sim : undefined }) + '\n');
    });

  if (!verbs) return program;
  const { call, findToken, parseToolArgs } = verbs;
  program
    .command('call')
    .description('Call one MCP tool of a running proofrig and follow the command until it is terminal.')
    .argument('<tool>', 'tool name, e.g. relay_set, get_action_status, list_devices, get_device_status')
    .argument('[args...]', 'key=value arguments; values are JSON when they parse (1, true, "x")')
    .option('--url <url>', 'proofrig server (default: $PROOFRIG_URL, else http://127.0.0.1:8787)', process.env.PROOFRIG_URL || 'http://127.0.0.1:8787')
    .option('--db <path>', "the server's journal: its folder holds the MCP token this command sends", DEFAULT_DB)
    .option('--token-file <file>', 'send the bearer token in this file instead (else PROOFRIG_TOKEN, else the one beside --db)')
    .option('--operator', 'act as the operator: send the operator token (.proofrig/operator-token) when the server has one (a --no-auth server asks the person at its own terminal instead)', false)
    .option('--json', 'print the final structured result as JSON only', false)
    .option('--no-follow', 'return right after the action tool answers')
    .action(async (tool: string, pairs: string[], o) => {
      const { token, source } = findToken({ db: o.db, operator: o.operator, tokenFile: o.tokenFile });
      const code = await call(tool, parseToolArgs(pairs), { url: o.url, token, tokenSource: source, json: o.json, follow: o.follow, out: process.stdout, operator: o.operator });
      process.exitCode = code;
    });

  program
    .command('open')
    .description("Print a one-time link that signs a browser into a running proofrig's dashboard (no token to paste; it opens once, within 60 s).")
    .option('--url <url>', 'proofrig server (default: $PROOFRIG_URL, else http://127.0.0.1:8787)', process.env.PROOFRIG_URL || 'http://127.0.0.1:8787')
    .option('--db <path>', "the server's journal: its folder holds the token this command sends", DEFAULT_DB)
    .option('--token-file <file>', 'send the bearer token in this file instead (else PROOFRIG_TOKEN, else the one beside --db)')
    .action(async (o) => {
      const { token, source } = findToken({ db: o.db, tokenFile: o.tokenFile });
      process.exitCode = await verbs.openDashboard({ url: o.url, token, tokenSource: source, out: process.stdout, err: process.stderr });
    });

  verbs.registerFlashCommand(program);
  verbs.registerUploadCommand(program);
  verbs.registerSimCommand(program);
  verbs.registerRigsCommand(program);
  registerBoardCommand(program);
  registerDevicesCommand(program);
  registerBrokerCommand(program);

  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli(argv[2] === 'serve' ? undefined : await loadVerbs()).parseAsync(argv);
  } catch (e) {
    process.stderr.write(`proofrig: ${(e as Error).message}\n`);
    process.exitCode = 2;
  }
}

/** --expose values, or a usage error (exit 2) naming what is wrong with them. */
function parseExposure(values: string[]): Exposure {
  try {
    return Exposure.parse(values);
  } catch (e) {
    process.stderr.write(`proofrig serve: --expose: ${(e as Error).message}\n`);
    process.exit(2);
  }
}
