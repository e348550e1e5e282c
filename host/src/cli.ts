// The `proofrig` command line.
import { Command, Option } from 'commander';
import pino from 'pino';
import { parseSimSpec, serve } from './serve.js';

const collect = (v: string, prev: string[]) => prev.concat([v]);

/** Every verb but serve, loaded only when the command line is not `serve` (esptool-js, serialport, the MCP client and the simulator cost `serve` a cold start). */
async function loadVerbs() {
  const [call, flash, upload, sim, rigs] = await Promise.all([
    import('./call.js'),
    import('./flash/command.js'),
    import('./upload/index.js'),
    import('./sim-command.js'),
    import('./rigs-command.js'),
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

export function buildCli(verbs?: Verbs): Command {
  const program = new Command('proofrig')
    .description('Drive relay/stepper rigs through ESP32 devices and report only what the hardware confirmed.')
    .showHelpAfterError();

  program
    .command('serve')
    .description('Run the host: device gateway (WebSocket at /device) and MCP server (Streamable HTTP at /mcp, or stdio).')
    .option('--stdio', 'serve MCP on stdin/stdout (logs go to stderr); the HTTP listener still takes devices', false)
    .addOption(new Option('--http <port>', 'port for MCP over HTTP and the device gateway').default(8787).argParser(intOption('--http', 0, 65535)))
    .option('--listen <addr>', 'address to listen on (0.0.0.0 for real devices on your LAN)', '127.0.0.1')
    .option('--allow-remote-mcp', 'answer MCP requests from other machines too (MCP has no authentication; devices always do)', false)
    .option('--sim <board[=id]>', 'start a simulated rig running the built firmware (repeatable)', collect, [])
    .option('--fault <dev:part:fault>', 'inject a fault into a simulated rig, e.g. relay-rig-4ch:relay2:coil_open (repeatable)', collect, [])
    .addOption(
      new Option('--console-port <port>', "serve each simulated rig's Espruino console on loopback TCP (rig i on port + i), for proofrig upload --tcp").argParser(
        intOption('--console-port', 0, 65535),
      ),
    )
    .option('--db <path>', 'journal database file', '.proofrig/journal.db')
    .addOption(new Option('--heartbeat-ms <ms>', 'heartbeat period asked of devices').default(2000).argParser(intOption('--heartbeat-ms', 50, 600000)))
    .addOption(new Option('--retain-days <days>', 'prune terminal commands older than this from the journal (hourly; open ones never)').default(30).argParser(intOption('--retain-days', 1, 36500)))
    .addOption(new Option('--retain-commands <n>', 'keep at most this many terminal commands in the journal').default(1_000_000).argParser(intOption('--retain-commands', 1, 1_000_000_000)))
    .addOption(new Option('--log-level <level>', 'log level').choices(['debug', 'info', 'warn', 'error', 'silent']).default('info'))
    .action(async (o) => {
      const logger = pino({ level: o.logLevel, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination(2));
      const running = await serve({
        db: o.db,
        port: o.http,
        listenHost: o.listen,
        allowRemoteMcp: o.allowRemoteMcp,
        stdio: o.stdio,
        sims: (o.sim as string[]).map(parseSimSpec),
        faults: o.fault,
        logger,
        heartbeatMs: o.heartbeatMs,
        consolePort: o.consolePort,
        retention: { maxAgeMs: o.retainDays * 86400000, maxCommands: o.retainCommands },
      });
      const mcpUrl = `${running.url}/mcp`;
      const banner = [
        `proofrig is running${running.rigs.size ? ` with simulated rig(s): ${[...running.rigs.keys()].join(', ')}` : ''}.`,
        `  MCP (Streamable HTTP): ${mcpUrl}${o.stdio ? '   (and stdio)' : ''}`,
        `  devices connect to:    ws://${o.listen === '0.0.0.0' ? '<this-pc>' : o.listen}:${running.http.port}/device`,
        `  journal:               ${o.db}`,
        ...[...running.consoles].map(([id, port]) => `  ${id} Espruino console: tcp://127.0.0.1:${port}`),
        '',
        'Connect an MCP client, e.g. in its config:',
        JSON.stringify({ mcpServers: { proofrig: { type: 'http', url: mcpUrl } } }, null, 2),
        '',
        'Or drive the rig from another terminal:',
        `  npx proofrig call list_devices`,
        `  npx proofrig call relay_set device_id=${[...running.rigs.keys()][0] ?? 'DEVICE'} channel=1 on=true`,
        '',
      ].join('\n');
      (o.stdio ? process.stderr : process.stdout).write(banner + '\n');
      const stop = async () => {
        await running.close();
        process.exit(0);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });

  if (!verbs) return program;
  const { call, parseToolArgs } = verbs;
  program
    .command('call')
    .description('Call one MCP tool of a running proofrig and follow the command until it is terminal.')
    .argument('<tool>', 'tool name, e.g. relay_set, get_action_status, list_devices, get_device_status')
    .argument('[args...]', 'key=value arguments; values are JSON when they parse (1, true, "x")')
    .option('--url <url>', 'proofrig server', 'http://127.0.0.1:8787')
    .option('--json', 'print the final structured result as JSON only', false)
    .option('--no-follow', 'return right after the action tool answers')
    .action(async (tool: string, pairs: string[], o) => {
      const code = await call(tool, parseToolArgs(pairs), { url: o.url, json: o.json, follow: o.follow, out: process.stdout });
      process.exitCode = code;
    });

  verbs.registerFlashCommand(program);
  verbs.registerUploadCommand(program);
  verbs.registerSimCommand(program);
  verbs.registerRigsCommand(program);

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
