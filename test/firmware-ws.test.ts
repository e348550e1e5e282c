// The firmware's RFC 6455 codec and UTF-8 helpers, as pure functions: what the chip sends must
// be a valid masked client frame, and whatever TCP chunking the host's bytes arrive in must decode.
import { describe, expect, it } from 'vitest';
import {
  OP_CLOSE, OP_CONT, OP_PING, OP_TEXT, WS_BAD, WS_MORE, WS_TOO_BIG,
  wsDecode, wsEncode, wsRequest, wsResponse, wsUrl, type WsFrame,
} from '@proofrig/protocol/wscodec';
import { utf8Dec, utf8Enc } from '../firmware/src/utf8';

const frame = (): WsFrame => ({ fin: false, op: -1, d: '' });
const bytes = (s: string) => Buffer.from(s, 'latin1');
/** A server frame as the `ws` package would put it on the wire (unmasked). */
const serverText = (s: string) => wsEncode(OP_TEXT, utf8Enc(s), '');

/** Feed chunks through an accumulate-and-parse loop like the client's; returns decoded texts. */
function feed(chunks: string[]): string[] {
  let buf = '';
  const out: string[] = [];
  const f = frame();
  for (const c of chunks) {
    buf += c;
    for (;;) {
      const n = wsDecode(buf, f);
      if (n === WS_MORE) break;
      if (n < 0) throw new Error('decode error ' + n);
      buf = buf.substr(n);
      out.push(utf8Dec(f.d));
    }
  }
  expect(buf).toBe('');
  return out;
}

describe('firmware ws encode', () => {
  it('masks every client text frame with the given 4-byte key and a 7-bit length', () => {
    const f = wsEncode(OP_TEXT, 'hello', '\x01\x02\x03\x04');
    const b = bytes(f);
    expect(b[0]).toBe(0x81);
    expect(b[1]).toBe(0x80 | 5);
    expect([...b.subarray(2, 6)]).toEqual([1, 2, 3, 4]);
    expect(Buffer.from(b.subarray(6).map((x, i) => x ^ [1, 2, 3, 4][i & 3])).toString('latin1')).toBe('hello');
  });

  it('uses the 16-bit length form from 126 bytes up to 65535, and refuses more', () => {
    const d126 = 'x'.repeat(126);
    const b = bytes(wsEncode(OP_TEXT, d126, 'abcd'));
    expect(b[1]).toBe(0x80 | 126);
    expect(b.readUInt16BE(2)).toBe(126);
    expect(b.length).toBe(2 + 2 + 4 + 126);
    expect(bytes(wsEncode(OP_TEXT, 'y'.repeat(65535), 'abcd')).readUInt16BE(2)).toBe(65535);
    expect(wsEncode(OP_TEXT, 'z'.repeat(65536), 'abcd')).toBe('');
  });

  it('round-trips through the decoder, masked or not', () => {
    const f = frame();
    for (const len of [0, 1, 125, 126, 127, 1000, 65535]) {
      const d = 'q'.repeat(len);
      for (const mask of ['', '\xde\xad\xbe\xef']) {
        const enc = wsEncode(OP_TEXT, d, mask);
        expect(wsDecode(enc, f)).toBe(enc.length);
        expect(f).toEqual({ fin: true, op: OP_TEXT, d });
      }
    }
  });
});

describe('firmware ws decode', () => {
  it('decodes a frame that arrives split across several data events, down to one byte each', () => {
    const msg = JSON.stringify({ t: 'cmd', rid: 'r1', a: 'relay.set', p: { ch: 1, on: true } });
    const wire = serverText(msg);
    expect(feed(wire.split(''))).toEqual([msg]);
    expect(feed([wire.slice(0, 1), wire.slice(1, 2), wire.slice(2)])).toEqual([msg]);
  });

  it('decodes several frames delivered in one data event', () => {
    const msgs = ['{"t":"hb"}', '{"t":"rack","rid":"a"}', '{"t":"q","q":"x"}'];
    expect(feed([msgs.map(serverText).join('')])).toEqual(msgs);
  });

  it('decodes 16-bit lengths split inside the extended length field', () => {
    const msg = JSON.stringify({ t: 'q', q: 'z'.repeat(300) });
    const wire = serverText(msg);
    expect(bytes(wire)[1]).toBe(126);
    expect(feed([wire.slice(0, 3), wire.slice(3, 200), wire.slice(200), serverText('{"t":"hb"}')])).toEqual([msg, '{"t":"hb"}']);
  });

  it('says "more" for a partial header and for a partial payload', () => {
    const f = frame();
    const wire = serverText('abcdef');
    expect(wsDecode('', f)).toBe(WS_MORE);
    expect(wsDecode(wire.slice(0, 1), f)).toBe(WS_MORE);
    expect(wsDecode(wire.slice(0, 5), f)).toBe(WS_MORE);
    expect(wsDecode(wire, f)).toBe(wire.length);
  });

  it('refuses 64-bit lengths and malformed control frames', () => {
    const f = frame();
    expect(wsDecode('\x81\x7f\x00\x00\x00\x00\x00\x01\x00\x00', f)).toBe(WS_TOO_BIG);
    expect(wsDecode('\x89\x7e\x00\x80' + 'p'.repeat(128), f)).toBe(WS_BAD);
    expect(wsDecode('\x09\x00', f)).toBe(WS_BAD);
    expect(wsDecode('\xc1\x00', f)).toBe(WS_BAD);
  });

  it('reports ping, close and continuation frames with their opcode and FIN bit', () => {
    const f = frame();
    wsDecode('\x89\x03abc', f);
    expect(f).toEqual({ fin: true, op: OP_PING, d: 'abc' });
    wsDecode('\x88\x02\x03\xe8', f);
    expect(f).toEqual({ fin: true, op: OP_CLOSE, d: '\x03\xe8' });
    wsDecode('\x01\x02ab', f);
    expect(f).toEqual({ fin: false, op: OP_TEXT, d: 'ab' });
    wsDecode('\x80\x02cd', f);
    expect(f).toEqual({ fin: true, op: OP_CONT, d: 'cd' });
  });
});

describe('firmware utf8', () => {
  const samples = ['', 'plain ascii', 'é', 'ü€', '中文 relay', '😀 and 🔌', 'mixed é中😀x', '\u0000\u007f\u0080\u07ff\u0800\uffff'];

  it('encodes exactly like Buffer.from(s, "utf8")', () => {
    for (const s of samples) expect(utf8Enc(s), JSON.stringify(s)).toBe(Buffer.from(s, 'utf8').toString('latin1'));
  });

  it('round-trips every sample, and passes ASCII through unchanged', () => {
    for (const s of samples) expect(utf8Dec(utf8Enc(s))).toBe(s);
    const a = '{"t":"hb"}';
    expect(utf8Enc(a)).toBe(a);
    expect(utf8Dec(a)).toBe(a);
  });

  it('encodes a lone surrogate as U+FFFD, as Node does', () => {
    expect(utf8Enc('a\ud800b')).toBe(Buffer.from('a\ud800b', 'utf8').toString('latin1'));
  });

  it('decodes malformed bytes to U+FFFD without throwing and keeps the valid text around them', () => {
    for (const bad of ['\xff', '\xc3', '\xe4\xb8', '\xc0\xaf', '\xed\xa0\x80', '\xf8\x88\x80\x80\x80']) {
      const d = utf8Dec('ok ' + bad + ' \xc3\xa9');
      expect(d, JSON.stringify(bad)).toMatch(/^ok \ufffd+ é$/);
    }
    // Where Node's decoder and this one agree byte for byte (one U+FFFD per invalid byte):
    for (const bad of ['\xff', '\xc3', '\xc0\xaf', '\xed\xa0\x80', 'a\x80b']) {
      expect(utf8Dec(bad), JSON.stringify(bad)).toBe(Buffer.from(bad, 'latin1').toString('utf8'));
    }
  });

  it('survives a text frame round trip with non-ASCII JSON', () => {
    const msg = JSON.stringify({ t: 'err', code: 'INTERNAL', msg: 'relé 中 😀'.repeat(30) });
    const f = frame();
    const enc = wsEncode(OP_TEXT, utf8Enc(msg), 'mask');
    expect(wsDecode(enc, f)).toBe(enc.length);
    expect(utf8Dec(f.d)).toBe(msg);
  });
});

describe('firmware ws handshake', () => {
  it('parses ws:// URLs with and without port and path, and rejects others', () => {
    expect(wsUrl('ws://10.0.0.5:8787/device')).toEqual({ h: '10.0.0.5', p: 8787, path: '/device' });
    expect(wsUrl('ws://host.local/x/y')).toEqual({ h: 'host.local', p: 80, path: '/x/y' });
    expect(wsUrl('ws://h:1')).toEqual({ h: 'h', p: 1, path: '/' });
    for (const bad of ['wss://h/device', 'http://h/', 'ws://:80/', 'ws://h:0/', 'ws://h:99999/', 'ws://h:8a/', 42, undefined]) {
      expect(wsUrl(bad), String(bad)).toBeNull();
    }
  });

  it('writes an HTTP/1.1 upgrade request with the key and version 13', () => {
    const r = wsRequest({ h: 'pc', p: 8787, path: '/device' }, 'a2V5a2V5a2V5a2V5a2V5aw==');
    expect(r).toBe(
      'GET /device HTTP/1.1\r\nHost: pc:8787\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: a2V5a2V5a2V5a2V5a2V5aw==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
  });

  it('accepts a 101 response once its header is complete, leaving any following frame bytes', () => {
    const head = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: abc=\r\n\r\n';
    expect(wsResponse(head.slice(0, 40))).toBe(0);
    const buf = head + serverText('{"t":"chal"}');
    expect(wsResponse(buf)).toBe(head.length);
    expect(wsResponse('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n')).toBe(-1);
  });
});
