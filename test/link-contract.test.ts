// One contract, run against every Link implementation: the core may rely on exactly this.
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { Socket, type AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createMemoryLinkPair, type Link } from '../host/src/core/memory-link.js';
import { WsGateway, WsLink } from '../host/src/gateway/ws-gateway.js';
import { DEVICE_PATH } from '@proofrig/protocol';

type Pair = { a: Link; b: Link; dispose: () => Promise<void> };

const implementations: [string, () => Promise<Pair>][] = [
  ['in-memory pair', async () => {
    const [a, b] = createMemoryLinkPair();
    return { a, b, dispose: async () => {} };
  }],
  ['WebSocket gateway', async () => {
    let accepted!: (l: Link) => void;
    const got = new Promise<Link>((r) => (accepted = r));
    const gw = new WsGateway((l) => accepted(l));
    const server: Server = createServer();
    gw.attachTo(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}${DEVICE_PATH}`);
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const b = new WsLink(ws, 'client');
    const a = await got;
    return {
      a,
      b,
      dispose: async () => {
        gw.close();
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      },
    };
  }],
];

const until = async (f: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe.each(implementations)('Link contract: %s', (_name, make) => {
  let pair: Pair;
  afterEach(async () => pair && (await pair.dispose()));

  it('delivers every frame, in order, both ways, including non-ASCII text', async () => {
    pair = await make();
    const atA: string[] = [];
    const atB: string[] = [];
    pair.a.onmessage = (t) => atA.push(t);
    pair.b.onmessage = (t) => atB.push(t);
    const frames = Array.from({ length: 50 }, (_, i) => JSON.stringify({ t: 'hb', up: i, note: 'µ✓' }));
    for (const f of frames) pair.a.send(f);
    pair.b.send('back');
    await until(() => atB.length === 50 && atA.length === 1);
    expect(atB).toEqual(frames);
    expect(atA).toEqual(['back']);
  });

  it('frames given together (sendBatch where the link has it) arrive as separate frames, in order with those sent alone', async () => {
    pair = await make();
    const atB: string[] = [];
    pair.b.onmessage = (t) => atB.push(t);
    const batch = (texts: string[]) => (pair.a.sendBatch ? pair.a.sendBatch(texts) : texts.forEach((t) => pair.a.send(t)));
    pair.a.send('one');
    batch(['two', 'three', 'four']);
    pair.a.send('five');
    await until(() => atB.length === 5);
    expect(atB).toEqual(['one', 'two', 'three', 'four', 'five']);
  });

  it('close fires onclose once on both sides, and later sends are dropped silently', async () => {
    pair = await make();
    let closedA = 0;
    let closedB = 0;
    const atB: string[] = [];
    pair.a.onclose = () => closedA++;
    pair.b.onclose = () => closedB++;
    pair.b.onmessage = (t) => atB.push(t);
    pair.a.close('bye');
    pair.a.close('again');
    await until(() => closedA === 1 && closedB === 1);
    expect(() => pair.a.send('late')).not.toThrow();
    await new Promise((r) => setTimeout(r, 30));
    expect(atB).toEqual([]);
    expect(closedA).toBe(1);
    expect(closedB).toBe(1);
    expect(pair.a.closed && pair.b.closed).toBe(true);
  });

  it('a frame is never delivered synchronously inside send', async () => {
    pair = await make();
    let inside = true;
    let seenInside = false;
    let delivered = 0;
    pair.b.onmessage = () => {
      seenInside = seenInside || inside;
      delivered++;
    };
    pair.a.send('x');
    inside = false;
    await until(() => delivered === 1);
    expect(seenInside).toBe(false);
  });
});

describe('the WebSocket gateway link', () => {
  it('writes a batch of frames to its socket in one write (corked), not one write per frame', async () => {
    const [, make] = implementations[1];
    const pair = await make();
    try {
      const got: string[] = [];
      pair.b.onmessage = (t) => got.push(t);
      const writes: number[] = [];
      const proto = Socket.prototype as unknown as { _writev: (chunks: unknown[], cb: () => void) => void; _write: (c: unknown, e: string, cb: () => void) => void };
      const writev = proto._writev;
      const write = proto._write;
      proto._writev = function (chunks, cb) {
        writes.push(chunks.length);
        return writev.call(this, chunks, cb);
      };
      proto._write = function (c, e, cb) {
        writes.push(1);
        return write.call(this, c, e, cb);
      };
      try {
        expect(pair.a.sendBatch).toBeTypeOf('function');
        pair.a.sendBatch!(['a', 'b', 'c']);
      } finally {
        proto._writev = writev;
        proto._write = write;
      }
      // one write holding a header and a payload per frame
      expect(writes).toEqual([6]);
      await until(() => got.length === 3);
      expect(got).toEqual(['a', 'b', 'c']);
    } finally {
      await pair.dispose();
    }
  });
});
