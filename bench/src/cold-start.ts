// Bench section 6: cold start.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ROOT, CLI, RELAY_BOARD, quick, pct, until, tmpDb, children, stop, tokenOf, mcpClient } from './harness.js';

export async function freePort(): Promise<number> {
  const s: Server = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return p;
}

export async function answering(url: string, body?: string, token?: string): Promise<boolean> {
  try {
    const r = await fetch(url, body ? { method: 'POST', body, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) } } : {});
    await r.arrayBuffer();
    return r.status < 500 && (body ? r.ok : true);
  } catch {
    return false;
  }
}

export const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });

export async function coldStart(): Promise<{ serve: number; online: number; bare: number; sdk: number }> {
  const runs = quick ? 2 : 4;
  const serveMs: number[] = [];
  const onlineMs: number[] = [];
  const bareMs: number[] = [];
  const sdkMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    let port = await freePort();
    let t = performance.now();
    let c = spawn(process.execPath, ['-e', `require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`], { stdio: 'ignore' });
    children.push(c);
    await until(() => answering(`http://127.0.0.1:${port}/`), 20000, 'bare http server');
    bareMs.push(performance.now() - t);
    await stop(c);
    const out = await new Promise<string>((resolve) => {
      const k = spawn(process.execPath, ['--input-type=module', '-e', "const t = performance.now(); await import('@modelcontextprotocol/sdk/server/mcp.js'); await import('@modelcontextprotocol/sdk/server/streamableHttp.js'); console.log(performance.now() - t);"], { cwd: join(ROOT, 'host') });
      let s = '';
      k.stdout.on('data', (b) => (s += b));
      k.on('exit', () => resolve(s));
    });
    sdkMs.push(Number(out.trim()));
    port = await freePort();
    t = performance.now();
    let db = tmpDb();
    c = spawn(process.execPath, [CLI, 'serve', '--http', String(port), '--db', db, '--log-level', 'silent'], { stdio: 'ignore' });
    children.push(c);
    await until(() => answering(`http://127.0.0.1:${port}/mcp`, INIT, tokenOf(db)), 20000, 'proofrig serve answering MCP');
    serveMs.push(performance.now() - t);
    await stop(c);
    port = await freePort();
    t = performance.now();
    db = tmpDb();
    c = spawn(process.execPath, [CLI, 'serve', '--http', String(port), '--db', db, '--log-level', 'silent', '--sim', RELAY_BOARD], { stdio: 'ignore' });
    children.push(c);
    await until(async () => {
      try {
        const m = await mcpClient(`http://127.0.0.1:${port}/mcp`, tokenOf(db));
        const r = (await m.callTool({ name: 'list_devices', arguments: {} })) as { structuredContent?: { devices?: { online?: boolean }[] } };
        await m.close();
        return r.structuredContent?.devices?.[0]?.online === true;
      } catch {
        return false;
      }
    }, 30000, 'simulated device online');
    onlineMs.push(performance.now() - t);
    await stop(c);
  }
  return { serve: pct(serveMs, 50), online: pct(onlineMs, 50), bare: pct(bareMs, 50), sdk: pct(sdkMs, 50) };
}
