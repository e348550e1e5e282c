// proofrig installs anywhere: `npm pack` of the host gives a tarball that, installed globally
// into a clean prefix and run from a folder with no repo around it, serves a bundled simulated
// rig and uploads the bundled firmware into a simulated blank ESP32 — with nothing but the
// package's own files.
//
// The install runs with --ignore-scripts and is then given the repo's own compiled
// better_sqlite3.node, after checking it is the same better-sqlite3 version and that the `node`
// the installed command runs on has the same ABI as this test's Node (which loads that binary).
// Compiling better-sqlite3 from source again (what its install script does where no prebuilt
// binary can be downloaded, as here) cost about 3.5 min of the suite on 2 cores and proves
// something about better-sqlite3, not about proofrig: the tarball's files, its dependency list
// resolved from the registry, and the command running outside the repo are still all tested.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const root = new URL('..', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'proofrig-pkg-'));
const prefix = join(work, 'prefix');
const elsewhere = join(work, 'elsewhere');
const bin = join(prefix, 'bin', 'proofrig');
const children: ChildProcess[] = [];

function run(args: string[], cwd = elsewhere, timeout = 60_000) {
  return spawnSync(bin, args, { cwd, encoding: 'utf8', timeout, env: { ...cleanEnv, PROOFRIG_URL: undefined } });
}

/** Start a long-running proofrig command and wait until its output matches. */
function startUntil(args: string[], ready: RegExp, ms = 30_000): Promise<{ child: ChildProcess; out: () => string; match: RegExpMatchArray }> {
  const child = spawn(bin, args, { cwd: elsewhere, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no ${ready} within ${ms} ms; output:\n${out}`)), ms);
    const on = (d: Buffer) => {
      out += d.toString();
      const m = out.match(ready);
      if (m) {
        clearTimeout(t);
        resolve({ child, out: () => out, match: m });
      }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.on('exit', (code) => reject(new Error(`proofrig ${args.join(' ')} exited ${code}:\n${out}`)));
  });
}

/** npm of a user's shell: none of the npm_* settings that running under `npm test` puts in the environment. */
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

beforeAll(() => {
  mkdirSync(elsewhere, { recursive: true });
  const pack = spawnSync('npm', ['pack', '-w', 'host', '--pack-destination', work], { cwd: root, encoding: 'utf8', env: cleanEnv });
  expect(pack.status, pack.stderr.slice(-2000)).toBe(0);
  const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
  const install = spawnSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', join(work, tgz)],
    { cwd: elsewhere, encoding: 'utf8', timeout: 300_000, env: cleanEnv },
  );
  expect(install.status, install.stderr.slice(-3000)).toBe(0);
  // The native SQLite binding: the repo's build, only when it fits exactly (see the top of the file).
  const installed = join(prefix, 'lib', 'node_modules', '@proofrig', 'host', 'node_modules', 'better-sqlite3');
  const repo = join(root, 'node_modules', 'better-sqlite3');
  const version = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
  expect(version(installed), 'the packed host resolves another better-sqlite3 than the repo: the reused binary would not match').toBe(version(repo));
  const abi = spawnSync('node', ['-p', 'process.versions.modules'], { cwd: elsewhere, encoding: 'utf8', env: cleanEnv });
  expect(abi.stdout.trim(), 'the `node` on PATH (which runs the installed command) has another ABI than the Node that built the repo binary').toBe(process.versions.modules);
  expect(existsSync(join(installed, 'build', 'Release', 'better_sqlite3.node'))).toBe(false);
  mkdirSync(join(installed, 'build', 'Release'), { recursive: true });
  copyFileSync(join(repo, 'build', 'Release', 'better_sqlite3.node'), join(installed, 'build', 'Release', 'better_sqlite3.node'));
}, 300_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

describe('the packed host, installed globally into a clean prefix', () => {
  it('ships its firmware and boards and knows its version, without the repo', () => {
    const pkg = join(prefix, 'lib', 'node_modules', '@proofrig', 'host');
    expect(existsSync(join(pkg, 'assets', 'proofrig.js'))).toBe(true);
    expect(readdirSync(join(pkg, 'assets', 'boards')).sort()).toEqual(['board.schema.json', 'climate-rig.json', 'relay-rig-4ch.json', 'stepper-rig.json']);
    // Nothing of the workspace is needed at run time: the protocol and simulator are bundled in.
    expect(existsSync(join(pkg, 'node_modules', '@proofrig'))).toBe(false);
    const check = run(['board', 'check', join(pkg, 'assets', 'boards', 'stepper-rig.json')]);
    expect(check.stdout).toMatch(/stepper-rig\.json: ok/);
  });

  it('serves a bundled board by its id as a simulated rig and completes a relay command', async () => {
    const { match } = await startUntil(['serve', '--http', '0', '--sim', 'relay-rig-4ch', '--db', join(elsewhere, 'serve.db')], /MCP \(Streamable HTTP\): (http:\/\/127\.0\.0\.1:\d+)\/mcp/);
    const url = match[1];
    const db = ['--db', join(elsewhere, 'serve.db')];
    let r = run(['call', '--url', url, ...db, 'list_devices', '--json']);
    for (let i = 0; i < 50 && !/"online": true/.test(r.stdout); i++) {
      await new Promise((res) => setTimeout(res, 200));
      r = run(['call', '--url', url, ...db, 'list_devices', '--json']);
    }
    expect(r.stdout).toMatch(/"online": true/);
    const call = run(['call', '--url', url, ...db, 'relay_set', 'device_id=relay-rig-4ch', 'channel=1', 'on=true']);
    expect(call.stdout).toMatch(/completed {2}evidence=aux_contact {2}verified=true/);
    expect(call.status).toBe(0);
  }, 60_000);

  it('`proofrig config claude` prints a stdio launch whose paths exist outside the repo (bundled board by id, journal in the user\'s state folder), and a client started from it drives the rig', async () => {
    const home = join(work, 'state');
    const cfg = spawnSync(bin, ['config', 'claude'], { cwd: elsewhere, encoding: 'utf8', env: { ...cleanEnv, PROOFRIG_HOME: home } });
    expect(cfg.status, cfg.stderr).toBe(0);
    expect(cfg.stderr).toMatch(/Claude Desktop: claude_desktop_config\.json \(stdio only\)/);
    const launch = JSON.parse(cfg.stdout).mcpServers.proofrig as { command: string; args: string[] };
    expect(existsSync(launch.args[0])).toBe(true);
    expect(launch.args).toEqual([launch.args[0], 'serve', '--stdio', '--db', join(home, 'claude.db'), '--sim', 'relay-rig-4ch']);
    const client = new Client({ name: 'pkg', version: '1' });
    await client.connect(new StdioClientTransport({ command: launch.command, args: launch.args, cwd: elsewhere, env: { ...cleanEnv, PROOFRIG_HOME: home } as Record<string, string>, stderr: 'ignore' }));
    try {
      const r = (await client.callTool({ name: 'relay_set', arguments: { device_id: 'relay-rig-4ch', channel: 1, on: true, wait_ms: 10_000 } })) as CallToolResult;
      expect(r.structuredContent).toMatchObject({ state: 'completed', evidence: 'aux_contact' });
    } finally {
      await client.close();
    }
    expect(existsSync(join(home, 'claude.db'))).toBe(true);
    const insp = run(['config', 'inspector']);
    expect(insp.stdout).toMatch(/^npx @modelcontextprotocol\/inspector --cli /);
    const http = spawnSync(bin, ['config', 'claude', '--http'], { cwd: elsewhere, encoding: 'utf8', env: { ...cleanEnv, PROOFRIG_HOME: home } });
    expect(http.stderr).toMatch(/^Claude Code: \.mcp\.json \(Claude Desktop takes command-based servers only/);
  }, 60_000);

  it('uploads the bundled firmware into a blank simulated ESP32 and the device then completes a command', async () => {
    const { match } = await startUntil(['serve', '--http', '0', '--db', join(elsewhere, 'up.db')], /MCP \(Streamable HTTP\): (http:\/\/127\.0\.0\.1:(\d+))\/mcp/);
    const [, url, port] = match;
    const blank = await startUntil(['sim', '--board', 'relay-rig-4ch', '--blank', '--console-port', '0'], /tcp:\/\/127\.0\.0\.1:(\d+)/);
    const consolePort = blank.match[1];
    const up = run(
      ['upload', '--tcp', `127.0.0.1:${consolePort}`, '--board', 'relay-rig-4ch', '--device-id', 'pkg-1', '--host', `ws://127.0.0.1:${port}`, '--db', join(elsewhere, 'up.db')],
      elsewhere,
      120_000,
    );
    expect(up.status, up.stdout + up.stderr).toBe(0);
    const args = ['call', '--url', url, '--db', join(elsewhere, 'up.db'), 'relay_set', 'device_id=pkg-1', 'channel=1', 'on=true'];
    let call = run(args);
    for (let i = 0; i < 40 && /DEVICE_OFFLINE/.test(call.stdout); i++) {
      await new Promise((res) => setTimeout(res, 250));
      call = run(args);
    }
    expect(call.stdout).toMatch(/completed {2}evidence=aux_contact {2}verified=true/);
  }, 180_000);
});
