// The firmware's network: require('net') over real TCP, Espruino's events and error codes, link outages, Wifi.
import * as net from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { firmware } from './helpers/sim-script.js';
import { realClock, VirtualClock, type Clock } from '@proofrig/protocol/clock';
import { SimRig, WIFI_CONNECT_MS } from '@proofrig/sim';

async function waitFor(pred: () => boolean, what: string, ms = 3000): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface Server {
  port: number;
  sockets: net.Socket[];
  received: string[];
  closed: number;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function server(onConn?: (s: net.Socket) => void): Promise<Server> {
  const srv: Server = { port: 0, sockets: [], received: [], closed: 0, close: async () => {} };
  const s = net.createServer((sock) => {
    srv.sockets.push(sock);
    sock.on('data', (b) => srv.received.push(b.toString('latin1')));
    sock.on('close', () => srv.closed++);
    sock.on('error', () => {});
    onConn?.(sock);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  srv.port = (s.address() as net.AddressInfo).port;
  srv.close = () =>
    new Promise<void>((r) => {
      for (const k of srv.sockets) k.destroy();
      s.close(() => r());
    });
  cleanups.push(() => srv.close());
  return srv;
}

function start(src: string, clock: Clock = realClock, extra: Partial<ConstructorParameters<typeof SimRig>[0]> = {}) {
  const lines: string[] = [];
  const rig = new SimRig({ firmwarePath: firmware(src), clock, seed: 1, console: (l) => lines.push(l), ...extra });
  cleanups.push(() => rig.shutdown());
  rig.boot();
  return { rig, lines };
}

describe('net sockets over real TCP', () => {
  it('connects, exchanges latin1 byte strings both ways, drains, and ends with close(false)', async () => {
    const srv = await server((s) => s.once('data', () => s.write(Buffer.from([0x68, 0x69, 0xff, 0x00]))));
    const { lines } = start(`
      var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} }, function (s) {
        print('connect', s === sock);
        print('write returns', sock.write('ab\\xff'));
      });
      sock.on('drain', function () { print('drain'); });
      sock.on('data', function (d) {
        print('data', JSON.stringify(d), d.charCodeAt(2));
        sock.end('bye');
      });
      sock.on('end', function () { print('end'); });
      sock.on('close', function (hadError) { print('close', hadError); });
      print('returned', typeof sock.write);`);
    await waitFor(() => lines.some((l) => l.startsWith('close')), 'close');
    expect(lines).toEqual([
      'returned function',
      'connect true',
      'write returns false',
      'drain',
      'data "hi\u00ff\\u0000" 255',
      'end',
      'close false',
    ]);
    await waitFor(() => srv.received.join('') === 'ab\u00ffbye', 'bytes at the server');
    await waitFor(() => srv.closed === 1, 'server side close');
  });

  it("delivers at most 536 bytes per 'data' event, as the ESP32 build reads them", async () => {
    const big = 'x'.repeat(2000);
    const srv = await server((s) => s.write(big));
    const { lines } = start(`
      var n = 0, sizes = [];
      var sock = require('net').connect('127.0.0.1:${srv.port}');
      sock.on('data', function (d) { sizes.push(d.length); n += d.length; if (n === 2000) print(JSON.stringify(sizes)); });`);
    await waitFor(() => lines.length > 0, 'all data');
    const sizes = JSON.parse(lines[0]) as number[];
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(2000);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(536);
    void srv;
  });

  it('data with no listener waits for read()/available()', async () => {
    const srv = await server((s) => s.write('queued'));
    const { lines } = start(`
      var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} });
      setTimeout(function poll() {
        if (sock.available() === 0) return setTimeout(poll, 10);
        print(sock.available(), sock.read(3), sock.read());
      }, 10);`);
    await waitFor(() => lines.length > 0, 'read');
    expect(lines).toEqual(['6 que ued']);
  });

  it('never fires an event synchronously inside connect() or write()', async () => {
    const srv = await server();
    const { lines } = start(`
      var inside = true;
      var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} }, function () { print('connect, inside=' + inside); });
      sock.on('drain', function () { print('drain, inside=' + inside); });
      sock.write('x');
      inside = false;`);
    await waitFor(() => lines.length === 2, 'events');
    expect(lines).toEqual(['connect, inside=false', 'drain, inside=false']);
  });

  it('a loopback port nobody listens on: net.connect throws "Unable to create socket" at once (the interpreter\'s blocking connect)', async () => {
    const srv = await server();
    const port = srv.port;
    await srv.close();
    const { lines } = start(`
      try { require('net').connect({ host: '127.0.0.1', port: ${port} }, function () { print('connected?!'); }); }
      catch (e) { print('threw', e.message); }`);
    expect(lines).toEqual(['ERROR: Connect failed (err 111)', 'threw Unable to create socket']);
  });

  it('a refusal that arrives after connect() returned reports error -9 "connection reset", then end and close(true)', async () => {
    const srv = await server();
    const port = srv.port;
    await srv.close();
    // A connector that does not look first: the refusal comes back asynchronously.
    const connect = (o: { host: string; port: number }) => net.connect(o);
    const { lines } = start(
      `
      var sock = require('net').connect({ host: '127.0.0.1', port: ${port} }, function () { print('connected?!'); });
      sock.on('error', function (e) { print('error', e.code, e.message, e instanceof Object); });
      sock.on('end', function () { print('end'); });
      sock.on('close', function (h) { print('close', h); });`,
      realClock,
      { connect },
    );
    await waitFor(() => lines.some((l) => l.startsWith('close')), 'close');
    expect(lines).toEqual(['error -9 connection reset true', 'end', 'close true']);
  });

  it('maps other Node errors to Espruino codes (-6 DNS, -3 timeout, -4 no route)', async () => {
    const cases: [string, number, string][] = [
      ['ENOTFOUND', -6, 'not found'],
      ['ETIMEDOUT', -3, 'timeout'],
      ['EHOSTUNREACH', -4, 'no route'],
    ];
    for (const [code, espruino, message] of cases) {
      const connect = () => {
        const s = new net.Socket();
        setTimeout(() => s.destroy(Object.assign(new Error(code), { code })), 1);
        return s;
      };
      const { lines } = start(
        `var s = require('net').connect({ host: 'nowhere.invalid', port: 1 });
         s.on('error', function (e) { print(e.code, e.message); }); s.on('close', function (h) { print('close', h); });`,
        realClock,
        { connect },
      );
      await waitFor(() => lines.length === 2, code);
      expect(lines).toEqual([`${espruino} ${message}`, 'close true']);
    }
  });

  it('the peer closing the connection gives end and close(false) without an error', async () => {
    const srv = await server((s) => setTimeout(() => s.end(), 20));
    const { lines } = start(`
      var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} });
      sock.on('error', function (e) { print('error', e.code); });
      sock.on('end', function () { print('end'); });
      sock.on('close', function (h) { print('close', h); });`);
    await waitFor(() => lines.length === 2, 'close');
    expect(lines).toEqual(['end', 'close false']);
  });

  it('power loss destroys sockets abruptly and calls nothing in the dead firmware', async () => {
    const srv = await server();
    const clock = new VirtualClock(0);
    const { rig, lines } = start(
      `var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} }, function () { print('connect'); });
       sock.on('close', function () { print('close'); }); sock.on('error', function () { print('error'); });`,
      clock,
    );
    await waitFor(() => lines.length === 1 && srv.sockets.length === 1, 'connection');
    rig.powerLoss(1_000_000);
    await waitFor(() => srv.closed === 1, 'the server to see the connection die');
    await new Promise((r) => setTimeout(r, 30));
    expect(lines).toEqual(['connect']);
  });
});

describe("the chip's Nagle (lwIP; Espruino sets no TCP_NODELAY)", () => {
  const twoWrites = (port: number) => `
      var sock = require('net').connect({ host: '127.0.0.1', port: ${port} }, function () {
        sock.write('ack');
        setTimeout(function () { sock.write('res'); }, 3);
      });`;

  it("a small write behind unacknowledged data waits for the silent peer's delayed ACK (~40 ms)", async () => {
    const at: number[] = [];
    const srv = await server((s) => s.on('data', () => at.push(Date.now())));
    const { rig } = start(twoWrites(srv.port));
    const released: [string, number][] = [];
    rig.on('nagle', (by: string, ms: number) => released.push([by, ms]));
    await waitFor(() => srv.received.join('') === 'ackres', 'both writes at the server');
    expect(srv.received).toEqual(['ack', 'res']);
    expect(released.map(([by]) => by)).toEqual(['delack']); // released by the peer's ACK 40 ms after the 'ack'
    expect(released[0][1]).toBeGreaterThan(25);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(30);
  });

  it('data from the peer carries the ACK at once and releases the held write', async () => {
    // On a virtual clock the delayed ACK (40 ms) cannot fire: only the peer's reply can release 'res'
    // (on the wall clock a loaded machine could let the 40 ms pass before the reply is read).
    const clock = new VirtualClock(0);
    let peer: import('node:net').Socket | undefined;
    const srv = await server((s) => s.once('data', () => (peer = s)));
    const { rig } = start(twoWrites(srv.port), clock);
    const released: string[] = [];
    rig.on('nagle', (by: string) => released.push(by));
    await waitFor(() => srv.received.join('') === 'ack' && peer !== undefined, "the first write at the server");
    clock.advance(3); // the firmware's second write: held behind the unacknowledged 'ack'
    expect(srv.received.join('')).toBe('ack');
    peer!.write('ok');
    await waitFor(() => srv.received.join('') === 'ackres', 'both writes at the server');
    expect(released).toEqual(['peer']);
    expect(clock.now()).toBe(3);
  });

  it('the writes of one callback leave as one segment', async () => {
    const srv = await server();
    start(`
      var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} }, function () {
        sock.write('head'); sock.write('body');
      });`);
    await waitFor(() => srv.received.join('') === 'headbody', 'both writes');
    expect(srv.received).toEqual(['headbody']);
  });

  it('a full segment is never held, even behind unacknowledged data', async () => {
    const srv = await server();
    const big = 'x'.repeat(1500);
    const { rig } = start(`
      var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} }, function () {
        sock.write('a');
        setTimeout(function () { sock.write('${big}'); }, 3);
      });`);
    const released: string[] = [];
    rig.on('nagle', (by: string) => released.push(by));
    const t0 = Date.now();
    await waitFor(() => srv.received.join('').length === 1501, 'all bytes');
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(released).toEqual([]);
  });
});

describe('link outages (linkDrop)', () => {
  const CLIENT = (port: number) => `
    function dial() {
      var sock = require('net').connect({ host: '127.0.0.1', port: ${port} }, function () { print('connect'); sock.write('hello'); });
      sock.on('data', function (d) { print('data ' + d); });
      sock.on('error', function (e) { print('error ' + e.code); });
      sock.on('close', function (h) { print('close ' + h); setTimeout(dial, 100); });
      global.sock = sock;
    }
    dial();
    global.send = function (s) { global.sock.write(s); };
    setInterval(function () { if (global.outbox) { global.sock.write(global.outbox); global.outbox = ''; } }, 10);`;

  it('swallows bytes both ways, then cuts the old connection and lets a reconnect through', async () => {
    const srv = await server();
    const clock = new VirtualClock(0);
    const link: string[] = [];
    const { rig, lines } = start(CLIENT(srv.port), clock);
    rig.on('link', (s: string) => link.push(s));
    await waitFor(() => srv.received.join('') === 'hello', 'first hello');
    rig.linkDrop({ ms: 1500 });
    srv.sockets[0].write('lost-in');
    await new Promise((r) => setTimeout(r, 30));
    clock.advance(20); // the firmware's interval runs; nothing to send yet
    expect(lines).toEqual(['connect']);
    expect(link).toEqual(['drop']);
    clock.advance(1480);
    expect(link).toEqual(['drop', 'restore']);
    expect(lines).toEqual(['connect', 'error -9', 'close true']);
    await waitFor(() => srv.closed === 1, 'old connection closed at the server');
    clock.advance(100); // the firmware redials
    await waitFor(() => srv.sockets.length === 2 && srv.received.join('') === 'hellohello', 'second hello');
    expect(srv.received.join('')).not.toContain('lost');
  });

  it("'to_device' swallows only what travels towards the device", async () => {
    const srv = await server();
    const clock = new VirtualClock(0);
    const { rig, lines } = start(
      `var sock = require('net').connect({ host: '127.0.0.1', port: ${srv.port} });
       sock.on('data', function (d) { print('data ' + d); });
       setTimeout(function () { sock.write('up-during-drop'); }, 50);`,
      clock,
    );
    await waitFor(() => srv.sockets.length === 1, 'connection');
    rig.linkDrop({ direction: 'to_device', ms: 1000 });
    srv.sockets[0].write('down-during-drop');
    clock.advance(50);
    await waitFor(() => srv.received.join('') === 'up-during-drop', 'the device bytes at the server');
    await new Promise((r) => setTimeout(r, 30));
    expect(lines).toEqual([]);
  });

  it('connection attempts during the outage fail with -9 and close; the peer never sees them', async () => {
    const srv = await server();
    const clock = new VirtualClock(0);
    const { rig, lines } = start(
      `setTimeout(function () {
         var s = require('net').connect({ host: '127.0.0.1', port: ${srv.port} }, function () { print('connect'); });
         s.on('error', function (e) { print('error ' + e.code + ' ' + e.message); });
         s.on('close', function (h) { print('close ' + h); });
       }, 100);`,
      clock,
    );
    rig.linkDrop({ ms: 1500 });
    clock.advance(200);
    expect(lines).toEqual(['error -9 connection reset', 'close true']);
    await new Promise((r) => setTimeout(r, 30));
    expect(srv.sockets).toHaveLength(0);
  });

  it('ending a socket during the outage destroys the Node socket', async () => {
    const srv = await server();
    const clock = new VirtualClock(0);
    const { rig, lines } = start(
      `var s = require('net').connect({ host: '127.0.0.1', port: ${srv.port} });
       s.on('close', function (h) { print('close ' + h); });
       setTimeout(function () { s.end(); }, 100);`,
      clock,
    );
    await waitFor(() => srv.sockets.length === 1, 'connection');
    rig.linkDrop({ ms: 1500 });
    clock.advance(100);
    expect(lines).toEqual(['close false']);
    await waitFor(() => srv.closed === 1, 'server sees the socket go');
  });
});

describe('Wifi (simulated: always connects)', () => {
  it(`connect() calls back with null after ${WIFI_CONNECT_MS} ms, with 'associated' and 'connected' events and an IP`, () => {
    const clock = new VirtualClock(0);
    const { lines } = start(
      `var w = require('Wifi');
       w.on('associated', function (d) { print('associated', d.ssid); });
       w.on('connected', function (d) { print('connected', d.ip); });
       print(w.getStatus().station);
       w.connect('lab', { password: 'pw' }, function (err) {
         print('cb', err, getTime(), w.getStatus().station);
         w.getIP(function (e, ip) { print('getIP', e, typeof ip.ip, ip.mac.length); });
       });`,
      clock,
    );
    clock.advance(WIFI_CONNECT_MS);
    clock.advance(0);
    expect(lines).toEqual(['off', 'associated lab', `cb null ${WIFI_CONNECT_MS / 1000} connected`, 'connected 192.168.4.20', 'getIP null string 17']);
  });
});
