// The command line as a person and an MCP desktop client use it: built bin, real processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { serve, type Running } from '../host/src/serve.js';
import { RELAY_BOARD, RIG, until } from './helpers/e2e.js';

const BIN = fileURLToPath(new URL('../host/bin/proofrig.js', import.meta.url));
const tmp = () => join(mkdtempSync(join(tmpdir(), 'proofrig-cli-')), 'journal.db');

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 20000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('proofrig call drives a running rig and follows the command to its end', () => {
  let running: Running;
  let db: string;
  beforeAll(async () => {
    db = tmp();
    running = await serve({ db, port: 0, sims: [{ boardFile: RELAY_BOARD }], logger: pino({ level: 'silent' }), heartbeatMs: 200, seed: 1 });
    await until(() => running.core.devices.view(RIG)?.online === true, 8000, 'rig online');
  });
  afterAll(() => running.close());

  it('prints the live state until completed, with the evidence, and exits 0', async () => {
    const r = await run(['call', 'relay_set', `device_id=${RIG}`, 'channel=1', 'on=true', '--url', running.url, '--db', db]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/cmd_\w+ {2}completed {2}evidence=aux_contact {2}verified=true/);
    expect(r.stdout).toMatch(/detail: K1: aux contact on GPIO34 closed/);
  });

  it('exits 3 for an outcome that is not completed (unverified channel 4)', async () => {
    const r = await run(['call', 'relay_set', `device_id=${RIG}`, 'channel=4', 'on=true', '--url', running.url, '--db', db]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/unverified {2}evidence=none {2}verified=false/);
  });

  it('--json prints the final structured status only', async () => {
    const r = await run(['call', 'relay_set', `device_id=${RIG}`, 'channel=3', 'on=false', '--json', '--url', running.url, '--db', db]);
    expect(JSON.parse(r.stdout)).toMatchObject({ state: 'completed', evidence: 'pin_readback', terminal: true });
  });

  it('a string where an integer belongs is a tool error with the rule, exit 1', async () => {
    const r = await run(['call', 'relay_set', `device_id=${RIG}`, 'channel="1"', 'on=true', '--url', running.url, '--db', db]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/channel must be an integer/);
  });

  it('no server at the URL says how to start one, exit 2', async () => {
    const r = await run(['call', 'list_devices', '--url', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot reach a proofrig server.*npm start/);
  });
});

describe('proofrig call follows a move with live progress', () => {
  let running: Running;
  let db: string;
  const STEPPER = fileURLToPath(new URL('../boards/stepper-rig.json', import.meta.url));
  beforeAll(async () => {
    db = tmp();
    running = await serve({ db, port: 0, sims: [{ boardFile: STEPPER }], logger: pino({ level: 'silent' }), heartbeatMs: 200, seed: 1 });
    await until(() => running.core.devices.view('stepper-rig')?.online === true, 8000, 'slide online');
  });
  afterAll(() => running.close());

  it('prints position, percent and remaining time until the move is terminal', async () => {
    const home = await run(['call', 'stepper_home', 'device_id=stepper-rig', 'axis=x', '--url', running.url, '--db', db]);
    expect(home.code).toBe(0);
    const r = await run(['call', 'stepper_move', 'device_id=stepper-rig', 'axis=x', 'target_mm=60', '--url', running.url, '--db', db]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/running .*pos=\d+(\.\d+)? mm {2}\d+% {2}~\d+\.\d s left/);
    expect(r.stdout.trim().split('\n').at(-2)).toMatch(/completed {2}evidence=encoder {2}verified=true {2}pos=(59\.[89]|60(\.[0-2])?)\d* mm/);
  });
});

describe('proofrig serve --stdio', () => {
  it('speaks nothing but MCP on stdout and drives the simulated rig; logs go to stderr', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'serve', '--stdio', '--http', '0', '--sim', RELAY_BOARD, '--db', tmp(), '--heartbeat-ms', '200'],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr!.on('data', (d) => (stderr += d));
    const errors: Error[] = [];
    const client = new Client({ name: 'stdio-test', version: '1' });
    client.onerror = (e) => errors.push(e);
    await client.connect(transport);
    try {
      const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
      await until(async () => {
        const r = await call('list_devices', {});
        return (r.structuredContent as { devices: { online: boolean }[] }).devices[0]?.online === true;
      }, 10000, 'rig online over stdio');
      const set = await call('relay_set', { device_id: RIG, channel: 2, on: true });
      const id = (set.structuredContent as { command_id: string }).command_id;
      const s = await call('get_action_status', { command_id: id, wait_ms: 5000 });
      expect(s.structuredContent).toMatchObject({ state: 'completed', evidence: 'aux_contact' });
      expect(errors).toEqual([]);
      // The log line and the answer leave together after the commit, on two pipes: no order between them.
      await until(() => /"phase":"terminal"/.test(stderr), 5000, 'the terminal log line on stderr');
      expect(stderr).toMatch(/proofrig is running/);
    } finally {
      await client.close();
    }
  });
});

describe('serve --console-port', () => {
  it("exposes each simulated rig's Espruino console on loopback TCP, evaluating against its Storage", async () => {
    const running = await serve({ db: tmp(), port: 0, sims: [{ boardFile: RELAY_BOARD }], logger: pino({ level: 'silent' }), consolePort: 0, seed: 1 });
    try {
      const port = running.consoles.get(RIG)!;
      expect(port).toBeGreaterThan(0);
      const { connect } = await import('node:net');
      const sock = connect(port, '127.0.0.1');
      let out = '';
      sock.on('data', (d) => (out += d.toString('latin1')));
      await new Promise((r) => sock.once('connect', r));
      sock.write('\x10print("dev=" + require("Storage").readJSON("proofrig.json").dev)\n');
      await until(() => out.includes('dev=' + RIG), 3000, 'console answer');
      sock.destroy();
    } finally {
      await running.close();
    }
  });
});

describe('proofrig serve refuses bad input before starting anything', () => {
  it.each([
    [['serve', '--sim', 'boards/nope.json'], /board file boards\/nope.json does not exist/],
    [['serve', '--http', '70000'], /--http must be an integer 0..65535/],
    [['serve', '--sim', RELAY_BOARD, '--fault', 'ghost:relay1:coil_open'], /no simulated rig has device id "ghost"/],
    [['serve', '--sim', RELAY_BOARD, '--fault', `${RIG}:relay9:coil_open`], /relay9/],
    [['serve', '--sim', RELAY_BOARD, '--fault', `${RIG}:relay1:melted`], /melted/],
  ])('%j', async (args, msg) => {
    const r = await run([...args, '--db', tmp()]);
    expect(r.code).toBe(2); // exits by itself, before listening
    expect(r.stderr).toMatch(msg);
  });
});

describe('usage errors exit 2, as the README says (1 is a tool error)', () => {
  it.each([
    [['serve', '--bogus'], /unknown option '--bogus'/],
    [['flash', '--baud', 'x'], /--baud must be an integer/],
    [['nosuch'], /unknown command 'nosuch'/],
    [['devices', 'list', '--bogus'], /unknown option '--bogus'/],
  ])('%j', async (args, msg) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(msg);
  });

  it('--version and --help are not errors: exit 0', async () => {
    expect((await run(['--version'])).code).toBe(0);
    expect((await run(['call', '--help'])).code).toBe(0);
  });
});

describe('a host started through npx goes when npx goes', () => {
  it('in HTTP mode: killing the npx process ends the node process it started (no orphan holding the port and the journal)', async () => {
    const { spawn } = await import('node:child_process');
    const { readdirSync, readFileSync } = await import('node:fs');
    const db = tmp();
    const npx = spawn('npx', ['proofrig', 'serve', '--http', '0', '--db', db], { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    let out = '';
    npx.stderr!.on('data', (d) => (err += d));
    npx.stdout!.on('data', (d) => (out += d));
    await until(() => /MCP \(Streamable HTTP\)/.test(out), 30_000, 'host banner');
    // The node process npx started: the one whose command line names this journal.
    const hosts = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== npx.pid).filter((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return cmd.includes(db) && cmd.includes('serve') && /node$/.test(cmd[0]);
      } catch {
        return false;
      }
    });
    expect(hosts).toHaveLength(1);
    const pid = Number(hosts[0]);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    npx.kill('SIGTERM');
    await until(() => !alive(), 10_000, 'the host process gone after its npx');
    expect(err).toMatch(/"reason":"parent process exited"/);
  }, 45_000);
});
