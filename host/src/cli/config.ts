// `proofrig config`: ready-to-paste MCP client configurations with absolute paths, so they
// work whatever directory the client starts the server in (and never ask the npm registry).
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PKG_ROOT, STATE_HOME } from '../paths.js';
import { AGENT_TOKEN_FILE } from '../state-dir.js';

export const CLIENTS = ['claude', 'cursor', 'vscode', 'inspector'] as const;
export type ClientKind = (typeof CLIENTS)[number];

/** Where a bearer token for /mcp is kept when the host requires one; sent as an Authorization header when present. */
export const TOKEN_FILE = resolve(STATE_HOME, AGENT_TOKEN_FILE);
export const BIN = resolve(PKG_ROOT, 'bin', 'proofrig.js');
/** A bundled board by id: `serve --sim` finds it in the repo and in an installed package alike. */
export const DEFAULT_BOARD = 'relay-rig-4ch';

export interface ConfigOptions {
  client: ClientKind;
  transport: 'stdio' | 'http';
  /** MCP URL for http (default http://127.0.0.1:8787/mcp). */
  url?: string;
  /** Boards to simulate in the stdio host (bundled board ids or paths, made absolute); default the 4-channel relay rig. */
  sims?: string[];
  /** Bearer token; default: the token file when it exists. */
  token?: string | null;
}

function readToken(): string | null {
  try {
    return existsSync(TOKEN_FILE) ? readFileSync(TOKEN_FILE, 'utf8').trim() || null : null;
  } catch {
    return null;
  }
}

/** The stdio launch: this Node binary and the repo's bin, a journal of its own per client (one host per journal file). */
export function stdioLaunch(client: ClientKind, sims = [DEFAULT_BOARD]): { command: string; args: string[] } {
  return {
    command: process.execPath,
    args: [BIN, 'serve', '--stdio', '--db', resolve(STATE_HOME, `${client}.db`), ...sims.flatMap((s) => ['--sim', /[\\/]|\.json$/.test(s) ? resolve(s) : s])],
  };
}

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The configuration text for a client: JSON for the editors, a command line for the inspector. */
export function clientConfig(o: ConfigOptions): string {
  const url = o.url ?? 'http://127.0.0.1:8787/mcp';
  const token = o.token === undefined ? readToken() : o.token;
  const headers = token ? { Authorization: `Bearer ${token}` } : undefined;
  const launch = stdioLaunch(o.client, o.sims);
  const out = (x: unknown) => JSON.stringify(x, null, 2);
  switch (o.client) {
    case 'claude':
      return out({ mcpServers: { proofrig: o.transport === 'stdio' ? launch : { type: 'http', url, ...(headers && { headers }) } } });
    case 'cursor':
      return out({ mcpServers: { proofrig: o.transport === 'stdio' ? launch : { url, ...(headers && { headers }) } } });
    case 'vscode':
      return out({ servers: { proofrig: o.transport === 'stdio' ? { type: 'stdio', ...launch } : { type: 'http', url, ...(headers && { headers }) } } });
    case 'inspector':
      return o.transport === 'stdio'
        ? ['npx', '@modelcontextprotocol/inspector', '--cli', launch.command, ...launch.args, '--method', 'tools/list'].map(quote).join(' ')
        : ['npx', '@modelcontextprotocol/inspector', '--cli', url, '--transport', 'http', ...(headers ? ['--header', `Authorization: Bearer ${token}`] : []), '--method', 'tools/list']
            .map(quote)
            .join(' ');
  }
}

/** Where a client reads this configuration: some take only command-based (stdio) servers. */
export function configHome(client: ClientKind, transport: 'stdio' | 'http'): string {
  if (client === 'claude' && transport === 'http') return 'Claude Code: .mcp.json (Claude Desktop takes command-based servers only: use --stdio for it)';
  return CONFIG_HOME[client];
}

/** Where each client reads its configuration, for the banner and `proofrig config`. */
export const CONFIG_HOME: Record<ClientKind, string> = {
  claude: 'Claude Desktop: claude_desktop_config.json (stdio only); Claude Code: .mcp.json (stdio or http)',
  cursor: 'Cursor: ~/.cursor/mcp.json or .cursor/mcp.json',
  vscode: 'VS Code: .vscode/mcp.json',
  inspector: 'MCP Inspector (needs Node.js 22.19 or later): run this command',
};
