// The device's validator for host frames (the firmware bundles it): a frame that breaks one rule
// and nothing else is refused with that rule's message, and the rid as ref where a cmd has one;
// every well-formed frame passes exactly as it came.
import { describe, expect, it } from 'vitest';
import { clip, MAX_MSG_LENGTH, parseToDevice } from '@proofrig/protocol';

const HEX = '0123456789abcdef'.repeat(4);
const ok = {
  chal: { t: 'chal', v: 4, sn: 's'.repeat(16) },
  ok: { t: 'ok', hb: 2000, mac: HEX },
  cmd: { t: 'cmd', rid: 'r1', a: 'relay_set', p: { channel: 1, on: true } },
  rack: { t: 'rack', rid: 'r1' },
  q: { t: 'q', q: 'q1', rid: 'r1' },
  hb: { t: 'hb', ack: 'r1' },
  err: { t: 'err', code: 'AUTH_FAILED', msg: 'bad mac', ref: 'hello' },
} as const;
type Kind = keyof typeof ok;
const ID = 'must be 1-64 chars of A-Z a-z 0-9 _ . : -';

describe('parseToDevice accepts every well-formed frame as it is', () => {
  for (const [t, f] of Object.entries(ok))
    it(t, () => {
      expect(parseToDevice(JSON.stringify(f))).toStrictEqual({ ok: true, f });
    });

  it('at the edges of each range, and with optional fields left out', () => {
    for (const f of [
      { t: 'chal', v: 4, sn: 's'.repeat(128) },
      { t: 'ok', hb: 50, mac: HEX },
      { t: 'ok', hb: 600000, mac: HEX },
      { t: 'cmd', rid: 'r'.repeat(64), a: 'a'.repeat(32), p: {} },
      { t: 'cmd', rid: 'r2', a: 'relay.set', p: {}, k: 'k'.repeat(64) },
      { t: 'q', q: 'q1' },
      { t: 'hb' },
      { t: 'err', code: 'C'.repeat(32), msg: 'm'.repeat(1000) },
      { t: 'err', code: 'X', msg: '', ref: 'r'.repeat(80) },
    ])
      expect(parseToDevice(JSON.stringify(f)), JSON.stringify(f)).toStrictEqual({ ok: true, f });
  });
});

describe('clip: a message cut to its limit, the cut marked', () => {
  it('keeps a text of exactly the limit and cuts a longer one to the limit, ending in ...', () => {
    expect(clip('abcde', 5)).toBe('abcde');
    expect(clip('abcdef', 5)).toBe('ab...');
  });
  it('uses the wire limit for messages (MAX_MSG_LENGTH) when no limit is given', () => {
    expect(clip('m'.repeat(MAX_MSG_LENGTH))).toBe('m'.repeat(MAX_MSG_LENGTH));
    expect(clip('m'.repeat(MAX_MSG_LENGTH + 1))).toBe('m'.repeat(MAX_MSG_LENGTH - 3) + '...');
  });
});

describe('parseToDevice refuses each broken rule with its own message', () => {
  const cases: [Kind, Record<string, unknown>, string, string | undefined][] = [
    ['chal', { v: 1 }, 'chal: protocol version 1 is not 4', undefined],
    ['chal', { v: 2 }, 'chal: protocol version 2 is not 4', undefined],
    ['chal', { v: 3 }, 'chal: protocol version 3 is not 4', undefined],
    ['chal', { v: '4' }, 'chal: protocol version "4" is not 4', undefined],
    ['chal', { v: undefined }, 'chal: protocol version (undefined) is not 4', undefined],
    ['chal', { v: null }, 'chal: protocol version (null) is not 4', undefined],
    ['chal', { v: [3] }, 'chal: protocol version (array) is not 4', undefined],
    ['chal', { v: { n: 3 } }, 'chal: protocol version (object) is not 4', undefined],
    ['chal', { v: true }, 'chal: protocol version (boolean) is not 4', undefined],
    ['chal', { sn: 's'.repeat(15) }, 'chal: sn must be a nonce of 16-128 chars', undefined],
    ['chal', { sn: 's'.repeat(129) }, 'chal: sn must be a nonce of 16-128 chars', undefined],
    ['chal', { sn: 1234567890123456 }, 'chal: sn must be a nonce of 16-128 chars', undefined],
    ['ok', { hb: 49 }, 'ok: hb must be a heartbeat period of 50..600000 ms', undefined],
    ['ok', { hb: 600001 }, 'ok: hb must be a heartbeat period of 50..600000 ms', undefined],
    ['ok', { hb: '2000' }, 'ok: hb must be a heartbeat period of 50..600000 ms', undefined],
    ['ok', { mac: HEX.slice(1) }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: HEX + 'a' }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: 'X' + HEX.slice(1) }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: HEX.slice(1) + 'X' }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: HEX.toUpperCase() }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: 64 }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: null }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['ok', { mac: Array.from({ length: 64 }, () => 'a') }, 'ok: mac must be 64 lowercase hex chars', undefined],
    ['cmd', { rid: '' }, 'cmd: rid ' + ID, undefined],
    ['cmd', { rid: 'r'.repeat(65) }, 'cmd: rid ' + ID, undefined],
    ['cmd', { rid: ['r1'] }, 'cmd: rid ' + ID, undefined],
    ['cmd', { a: '' }, 'cmd: a must name an action (up to 32 chars)', 'r1'],
    ['cmd', { a: 'a'.repeat(33) }, 'cmd: a must name an action (up to 32 chars)', 'r1'],
    ['cmd', { a: 7 }, 'cmd: a must name an action (up to 32 chars)', 'r1'],
    ['cmd', { p: undefined }, 'cmd: p must be an object of arguments', 'r1'],
    ['cmd', { p: [1] }, 'cmd: p must be an object of arguments', 'r1'],
    ['cmd', { p: null }, 'cmd: p must be an object of arguments', 'r1'],
    ['cmd', { p: 5 }, 'cmd: p must be an object of arguments', 'r1'],
    ['cmd', { k: '' }, 'cmd: k (a rack riding along) must be 1-64 chars of A-Z a-z 0-9 _ . : -', 'r1'],
    ['cmd', { k: 7 }, 'cmd: k (a rack riding along) must be 1-64 chars of A-Z a-z 0-9 _ . : -', 'r1'],
    ['rack', { rid: 'r 1' }, 'rack: rid ' + ID, undefined],
    ['q', { q: undefined }, 'q: q ' + ID, undefined],
    ['q', { rid: '' }, 'q: rid ' + ID, undefined],
    ['hb', { ack: 'a/b' }, 'hb: ack ' + ID, undefined],
    ['err', { code: 'C'.repeat(33) }, 'err: needs string code (up to 32 chars) and msg (up to 1000), optional ref', undefined],
    ['err', { msg: 'm'.repeat(1001) }, 'err: needs string code (up to 32 chars) and msg (up to 1000), optional ref', undefined],
    ['err', { ref: 'r'.repeat(81) }, 'err: needs string code (up to 32 chars) and msg (up to 1000), optional ref', undefined],
  ];
  for (const [t, change, msg, ref] of cases)
    it(`${t} ${JSON.stringify(change).slice(0, 80)} → ${msg}`, () => {
      const f: Record<string, unknown> = { ...ok[t], ...change };
      for (const k of Object.keys(change)) if (change[k] === undefined) delete f[k];
      expect(parseToDevice(JSON.stringify(f))).toStrictEqual({ ok: false, code: 'MALFORMED_FRAME', msg, ref });
    });

  it('an unknown type is UNKNOWN_FRAME, its name quoted and cut to 40 chars', () => {
    expect(parseToDevice(JSON.stringify({ t: 'res' }))).toStrictEqual({ ok: false, code: 'UNKNOWN_FRAME', msg: 'unknown frame type "res"' });
    expect(parseToDevice(JSON.stringify({ t: 'y'.repeat(40) }))).toStrictEqual({ ok: false, code: 'UNKNOWN_FRAME', msg: `unknown frame type "${'y'.repeat(40)}"` });
    expect(parseToDevice(JSON.stringify({ t: 'y'.repeat(41) }))).toStrictEqual({ ok: false, code: 'UNKNOWN_FRAME', msg: `unknown frame type "${'y'.repeat(37)}..."` });
  });

  it('a frame that is not a JSON object with a string t is refused before its type is read', () => {
    expect(parseToDevice(undefined)).toStrictEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON text message' });
    expect(parseToDevice('{"t":')).toStrictEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame is not valid JSON' });
    expect(parseToDevice('"cmd"')).toStrictEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' });
    expect(parseToDevice('5')).toStrictEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' });
    expect(parseToDevice('{"rid":"r1"}')).toStrictEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame has no string field "t" (its type)' });
  });
});
