// No request body ends the host: a body over the limit is refused 413 from its Content-Length or
// while it is read, and the host (a real `proofrig serve` process) answers the next call. And SIGTERM
// ends it within its documented bound whatever its connections are doing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import * as net from 'node:net';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { guardProcess } from '../host/src/process-guard.js';
import { until } from './helpers/e2e.js';

const BIN = fileURLToPath(new URL('../host/bin/proofrig.js', import.meta.url));
const MiB = 1024 * 1024;

interface Answer {
  status: number;
  body: string;
}

/** POST /mcp with a body of `size` bytes: with a Content-Length, or chunked (no length header). */
function postBig(port: number, token: string, size: number, withLength: boolean): Promise<Answer> {
  const head = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"';
  const tail = '"}}';
  const body = Buffer.alloc(size, 'a');
  body.write(head, 0);
  body.write(tail, size - tail.length);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
          ...(withLength ? { 'content-length': String(size) } : { 'transfer-encoding': 'chunked' }),
        },
      },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      },
    );
    req.on('error', reject);
    // In 64 KiB writes, as a client streaming a body does.
    for (let i = 0; i < size; i += 64 * 1024) req.write(body.subarray(i, Math.min(size, i + 64 * 1024)));
    req.end();
  });
}

function initialize(port: number, token: string): Promise<Answer> {
  const data = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } } });
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` } },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('no request body ends the host', () => {
  let child: ChildProcess;
  let port = 0;
  let token = '';
  let stderr = '';
  let exited: number | null | undefined;

  beforeAll(async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'proofrig-limits-')), '.proofrig', 'journal.db');
    child = spawn(process.execPath, [BIN, 'serve', '--http', '0', '--db', db], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('exit', (code) => (exited = code));
    await until(() => /MCP \(Streamable HTTP\): http:\/\/127\.0\.0\.1:(\d+)\/mcp/.test(stdout) || exited !== undefined, 20000, 'host banner');
    port = Number(/127\.0\.0\.1:(\d+)\/mcp/.exec(stdout)![1]);
    token = readFileSync(join(db, '..', 'agent-token'), 'utf8').trim();
  });
  afterAll(() => void child?.kill('SIGKILL'));

  it.each([
    [1, true],
    [2, true],
    [10, true],
    [1, false],
    [2, false],
    [10, false],
  ])('a %i MiB body (Content-Length: %s) is refused 413 saying why, and the host answers the next call', async (mib, withLength) => {
    const r = await postBig(port, token, mib * MiB + 1, withLength);
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body).error.message).toMatch(/request body over 1048576 bytes \(1 MiB\)/);
    expect(exited).toBeUndefined();
    const next = await initialize(port, token);
    expect(next.status).toBe(200);
    expect(exited).toBeUndefined();
    expect(stderr).not.toMatch(/TypeError|unhandled|uncaught/i);
  });

  it('a body just under the limit is read and answered as MCP (not refused for its size)', async () => {
    const r = await postBig(port, token, MiB - 100, true);
    expect(r.status).not.toBe(413);
    expect(exited).toBeUndefined();
  });

  it('a body that is not JSON gets 400 with a JSON-RPC parse error, and the host goes on', async () => {
    const r = await new Promise<Answer>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` } },
        (res) => {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => resolve({ status: res.statusCode!, body: b }));
        },
      );
      req.on('error', reject);
      req.end('{"jsonrpc": "2.0", "id": 1,');
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error).toMatchObject({ code: -32700, message: 'request body is not JSON' });
    expect((await initialize(port, token)).status).toBe(200);
  });
});

describe('the process guard', () => {
  it('logs a rejection nobody handled with its stack, once per message and window, and the process goes on', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'error' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    // vitest has its own listeners; ours runs beside them and must not throw.
    const remove = guardProcess(log);
    try {
      const listeners = process.listeners('unhandledRejection');
      const ours = listeners[listeners.length - 1] as (r: unknown) => void;
      for (let i = 0; i < 20; i++) ours(new TypeError("Cannot read properties of null (reading 'remoteAddress')"));
      expect(lines.length).toBe(5);
      expect(lines[0]).toMatchObject({ evt: 'unhandled_rejection', err: "Cannot read properties of null (reading 'remoteAddress')" });
      expect(String(lines[0].stack)).toMatch(/TypeError/);
    } finally {
      remove();
    }
  });
});

describe('SIGTERM ends the host within its bound, whatever its connections are doing', () => {
  it('during a flood of held and churning connections from loopback aliases and open event streams: exit 0 within 5 s, sockets closed, journal closed (no WAL left)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-term-'));
    const db = join(dir, '.proofrig', 'journal.db');
    const child = spawn(process.execPath, [BIN, 'serve', '--http', '0', '--db', db], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let exit: { code: number | null; at: number } | undefined;
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('exit', (code) => (exit = { code, at: Date.now() }));
    await until(() => /127\.0\.0\.1:(\d+)\/mcp/.test(stdout), 20000, 'host banner');
    const port = Number(/127\.0\.0\.1:(\d+)\/mcp/.exec(stdout)![1]);
    const token = readFileSync(join(dir, '.proofrig', 'agent-token'), 'utf8').trim();
    const socks: net.Socket[] = [];
    // Event streams held open with the agent token, and raw connections with half-sent headers.
    for (let i = 0; i < 8; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      s.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      socks.push(s);
    }
    let churning = true;
    const churn = async (alias: number) => {
      while (churning) {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${alias}` });
        s.on('error', () => {});
        socks.push(s);
        await new Promise((r) => s.once('connect', r).once('close', r));
        s.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        await new Promise((r) => setImmediate(r));
      }
    };
    const churners = [2, 3, 4, 5].map((a) => churn(a));
    try {
      await new Promise((r) => setTimeout(r, 500));
      const sent = Date.now();
      child.kill('SIGTERM');
      await until(() => exit !== undefined, 8000, 'host exit');
      expect(exit!.code).toBe(0);
      expect(exit!.at - sent).toBeLessThan(5000);
      expect(stderr).toMatch(/"evt":"shutdown_done"/);
      expect(existsSync(db + '-wal')).toBe(false);
    } finally {
      churning = false;
      await Promise.all(churners);
      for (const s of socks) s.destroy();
      child.kill('SIGKILL');
    }
  }, 30_000);
});
