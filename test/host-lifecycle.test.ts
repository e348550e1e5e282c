// The host as a process, the way MCP clients and people start it: stdio under npx ends with its
// client, hosts side by side, one host per journal, a taken port names the flag, ready configs,
// --version, PROOFRIG_URL, and device management.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { serve, type Running } from '../host/src/serve.js';
import { Journal } from '../host/src/core/journal/journal.js';
import { blankCommand } from '../host/src/core/journal/records.js';
import { clientConfig } from '../host/src/cli/config.js';
import { RELAY_BOARD, RIG, until } from './helpers/e2e.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'host/bin/proofrig.js');
const STEPPER_BOARD = join(ROOT, 'boards/stepper-rig.json');
const tmpDb = () => join(mkdtempSync(join(tmpdir(), 'proofrig-life-')), 'journal.db');
const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8'));

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 20000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function stdioClient(command: string, args: string[]) {
  const transport = new StdioClientTransport({ command, args, cwd: ROOT, stderr: 'ignore' });
  const client = new Client({ name: 'stdio-test', version: '1' });
  await client.connect(transport);
  return { client, transport };
}

describe('stdio lifecycle', () => {
  it('an SDK stdio client launched through npx and closed leaves no process behind, and the journal lock is released', async () => {
    const db = tmpDb();
    const { client, transport } = await stdioClient('npx', ['--no-install', 'proofrig', 'serve', '--stdio', '--db', db, '--sim', RELAY_BOARD]);
    const r = (await client.callTool({ name: 'relay_set', arguments: { device_id: RIG, channel: 1, on: true, wait_ms: 5000 } })) as CallToolResult;
    expect(r.structuredContent).toMatchObject({ state: 'completed' });
    const host = JSON.parse(readFileSync(db + '.lock', 'utf8')) as { pid: number; port: number };
    const npx = transport.pid!;
    expect(host.pid).not.toBe(npx);
    const t0 = Date.now();
    await client.close();
    await until(() => !alive(host.pid) && !alive(npx), 8000, 'host and npx gone');
    expect(Date.now() - t0).toBeLessThan(8000);
    expect(existsSync(db + '.lock')).toBe(false);
  }, 40000);

  it('SIGTERM to npx (the client kills what it launched) ends the host too, although npm does not pass the signal on', async () => {
    const db = tmpDb();
    // The client keeps its end of the pipe open: only the signal says goodbye.
    const npx = spawn('npx', ['--no-install', 'proofrig', 'serve', '--stdio', '--db', db], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    npx.stderr.on('data', (d) => (err += d));
    await until(() => err.includes('proofrig is running'), 20000, 'host up');
    const host = JSON.parse(readFileSync(db + '.lock', 'utf8')).pid as number;
    expect(host).not.toBe(npx.pid);
    npx.kill('SIGTERM');
    await until(() => !alive(host), 8000, 'host gone after npx got SIGTERM');
    expect(existsSync(db + '.lock')).toBe(false);
    npx.stdin.end();
  }, 40000);

  it('SIGTERM ends a stdio host cleanly (lock released, exit 0)', async () => {
    const db = tmpDb();
    const p = spawn(process.execPath, [BIN, 'serve', '--stdio', '--db', db], { stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    await until(() => err.includes('proofrig is running'), 15000, 'host up');
    p.kill('SIGTERM');
    const code = await new Promise((r) => p.once('exit', r));
    expect(code).toBe(0);
    expect(existsSync(db + '.lock')).toBe(false);
  }, 20000);

  it('two stdio clients and an HTTP host run side by side (stdio hosts take a free port)', async () => {
    const http = await serve({ db: tmpDb(), port: 0, sims: [{ boardFile: RELAY_BOARD }], logger: pino({ level: 'silent' }), heartbeatMs: 200 });
    const a = await stdioClient(process.execPath, [BIN, 'serve', '--stdio', '--db', tmpDb(), '--sim', RELAY_BOARD]);
    const b = await stdioClient(process.execPath, [BIN, 'serve', '--stdio', '--db', tmpDb(), '--sim', RELAY_BOARD]);
    try {
      for (const c of [a.client, b.client]) {
        const r = (await c.callTool({ name: 'list_devices', arguments: {} })) as CallToolResult;
        expect((r.structuredContent as { devices: { online: boolean }[] }).devices[0].online).toBe(true);
      }
      await until(() => http.core.devices.view(RIG)?.online === true, 8000, 'http host rig online');
    } finally {
      await a.client.close();
      await b.client.close();
      await http.close();
    }
  }, 40000);
});

describe('one host per journal, and a taken port names the flag', () => {
  let running: Running;
  let db: string;
  beforeAll(async () => {
    db = tmpDb();
    running = await serve({ db, port: 0, logger: pino({ level: 'silent' }) });
  });
  afterAll(() => running.close());

  it('a second host on the same journal is refused, naming the PID and port of the first', async () => {
    const r = await run(['serve', '--stdio', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`in use by another proofrig (PID ${process.pid}, port ${running.http.port}`);
    expect(r.stderr).toMatch(/--db FILE/);
  });

  it('a taken --http port says which flag chooses another', async () => {
    const r = await run(['serve', '--http', String(running.http.port), '--db', tmpDb()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`port ${running.http.port} on 127.0.0.1 is already in use.*--http PORT`));
  });

  it('proofrig call takes its --url from PROOFRIG_URL', async () => {
    const r = await run(['call', 'list_devices', '--db', db], { PROOFRIG_URL: running.url });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ devices: [] });
  });
});

describe('ready configs and --version', () => {
  it('--version prints the package version', async () => {
    const r = await run(['--version']);
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'host/package.json'), 'utf8')).version);
  });

  it.each(['claude', 'cursor', 'vscode'])('config %s --stdio is JSON with absolute paths that start a working host', async (client) => {
    const r = await run(['config', client, '--stdio']);
    expect(r.code).toBe(0);
    const cfg = JSON.parse(r.stdout);
    const server = (cfg.mcpServers ?? cfg.servers).proofrig;
    expect(server.command).toBe(process.execPath);
    expect(server.args[0]).toBe(BIN);
    for (const a of server.args) if (a.includes('/')) expect(a.startsWith('/')).toBe(true);
  });

  it('the stdio config really launches from another directory', async () => {
    const cfg = JSON.parse((await run(['config', 'claude'])).stdout).mcpServers.proofrig;
    const args = cfg.args.map((a: string) => (a.endsWith('claude.db') ? tmpDb() : a));
    const transport = new StdioClientTransport({ command: cfg.command, args, cwd: tmpdir(), stderr: 'ignore' });
    const client = new Client({ name: 'cfg', version: '1' });
    await client.connect(transport);
    const r = (await client.callTool({ name: 'list_devices', arguments: {} })) as CallToolResult;
    expect((r.structuredContent as { devices: { device_id: string }[] }).devices.map((d) => d.device_id)).toEqual([RIG]);
    await client.close();
  }, 30000);

  it('http configs carry the URL and, when a token exists, an Authorization header', () => {
    const cfg = JSON.parse(clientConfig({ client: 'vscode', transport: 'http', url: 'http://127.0.0.1:9999/mcp', token: 'tok123' }));
    expect(cfg.servers.proofrig).toEqual({ type: 'http', url: 'http://127.0.0.1:9999/mcp', headers: { Authorization: 'Bearer tok123' } });
    expect(clientConfig({ client: 'inspector', transport: 'http', token: null })).toBe(
      'npx @modelcontextprotocol/inspector --cli http://127.0.0.1:8787/mcp --transport http --method tools/list',
    );
  });

  it('an unknown client is refused with the choices', async () => {
    const r = await run(['config', 'emacs']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/claude, cursor, vscode, inspector/);
  });
});

describe('device management', () => {
  it('devices list shows the devices; rm refuses while a command is open, then removes', async () => {
    const db = tmpDb();
    const j = new Journal(db);
    j.provision('bench-1', 'a'.repeat(64), board);
    j.insert({ ...blankCommand(), command_id: 'cmd_open1', device_id: 'bench-1', request_id: 'r1', action: 'relay.set', args: { ch: 1, on: true }, state: 'sent', submitted_at: 1, updated_at: 1 });
    j.close();
    const list = await run(['devices', 'list', '--db', db, '--json']);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ device_id: 'bench-1', simulated: false, open_commands: 1 })]);
    const refused = await run(['devices', 'rm', 'bench-1', '--db', db]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/1 open command\(s\) \(cmd_open1 relay.set sent\)/);
    const j2 = new Journal(db);
    const c = j2.get('cmd_open1')!;
    j2.update({ ...c, state: 'timeout', terminal_at: 2, updated_at: 2 }, true);
    j2.close();
    expect((await run(['devices', 'rm', 'bench-1', '--db', db])).stdout).toBe('removed bench-1\n');
    expect((await run(['devices', 'list', '--db', db])).stdout).toBe('no devices provisioned\n');
    const again = await run(['devices', 'rm', 'bench-1', '--db', db]);
    expect(again.stderr).toMatch(/no device "bench-1"/);
  });

  it('devices rm is refused while a host owns the journal', async () => {
    const db = tmpDb();
    const running = await serve({ db, port: 0, logger: pino({ level: 'silent' }) });
    try {
      const r = await run(['devices', 'rm', 'x', '--db', db]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/in use by another proofrig/);
    } finally {
      await running.close();
    }
  });

  it('simulated rigs of an earlier run do not pile up: a run forgets the ones it does not start', async () => {
    const db = tmpDb();
    const first = await serve({ db, port: 0, sims: [{ boardFile: RELAY_BOARD, deviceId: 'old-rig' }], logger: pino({ level: 'silent' }), heartbeatMs: 200 });
    await until(() => first.core.devices.view('old-rig')?.online === true, 8000, 'old rig online');
    await first.close();
    const second = await serve({ db, port: 0, sims: [{ boardFile: STEPPER_BOARD }], logger: pino({ level: 'silent' }), heartbeatMs: 200 });
    try {
      expect(second.core.devices.ids()).toEqual(['stepper-rig']);
    } finally {
      await second.close();
    }
  }, 30000);
});
