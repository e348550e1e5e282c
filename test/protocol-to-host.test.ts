// The host's validator for device frames: "completed" is refused unless the evidence proves it.
import { describe, expect, it } from 'vitest';
import { parseToHost } from '@proofrig/protocol';

const state = { up: 1, relays: [{ ch: 1, cmd: true, pin: true, aux: true }] };
const res = (o: Record<string, unknown>) => JSON.stringify({ t: 'res', rid: 'r1', st: 'completed', ev: 'aux_contact', ver: true, s: state, ms: 3, ...o });

describe('a result frame claiming completed', () => {
  it('with verified evidence is accepted as it is', () => {
    expect(parseToHost(res({}))).toEqual({ ok: true, f: JSON.parse(res({})) });
  });

  it('with ver:false is refused MALFORMED_FRAME naming the rule', () => {
    expect(parseToHost(res({ ver: false }))).toMatchObject({ ok: false, code: 'MALFORMED_FRAME', msg: expect.stringContaining('completed requires verified evidence'), ref: 'r1' });
  });

  it('with ev:none (and ver:true) is refused MALFORMED_FRAME naming the rule', () => {
    expect(parseToHost(res({ ev: 'none' }))).toMatchObject({ ok: false, code: 'MALFORMED_FRAME', msg: expect.stringContaining('ver cannot be true without evidence'), ref: 'r1' });
  });

  it('with ev:none and ver:false is refused too', () => {
    expect(parseToHost(res({ ev: 'none', ver: false }))).toMatchObject({ ok: false, code: 'MALFORMED_FRAME', msg: expect.stringContaining('completed requires verified evidence') });
  });

  it('unverified with no evidence is a valid answer (not a claim of success)', () => {
    expect(parseToHost(res({ st: 'unverified', ev: 'none', ver: false }))).toMatchObject({ ok: true });
  });
});

// Every rule of the validator, each with its exact answer: a frame that breaks one rule and
// nothing else is refused with that rule's message and the frame's rid as ref when it has one.
const ok = {
  hello: { t: 'hello', v: 1, dev: 'rig-1', boot: 'b00t', fw: '0.1.0', board: 'relay-rig-4ch', cn: 'c'.repeat(16) },
  auth: { t: 'auth', mac: 'a'.repeat(64) },
  ack: { t: 'ack', rid: 'r1', st: 'accepted' },
  prog: { t: 'prog', rid: 'r1', pct: 50, pos: 12.5, msg: 'half way' },
  res: { t: 'res', rid: 'r1', st: 'failed', ev: 'aux_contact', ver: false, code: 'NO_FEEDBACK', msg: 'stayed open', s: state, ms: 3 },
  state: { t: 'state', q: 'q1', s: { up: 1, relays: [], axes: [{ axis: 'x', pos: 1, cmd: 1, moving: false, homed: true, fault: false, home: false, limit: false }] }, rid: 'r1', rst: 'done' },
  hb: { t: 'hb', up: 10, free: 1000 },
  err: { t: 'err', code: 'INTERNAL', msg: 'x', ref: 'r1' },
  evt: { t: 'evt', id: 'e1', k: 'max_on', ch: 2, msg: 'relay 2 on longer than max_on_ms: switched off', s: { up: 9, relays: [{ ch: 2, cmd: false, pin: false, aux: false }], estop: false } },
} as const;
type Kind = keyof typeof ok;
const ID = 'must be 1-64 chars of A-Z a-z 0-9 _ . : -';

describe('parseToHost accepts every well-formed frame as it is', () => {
  for (const [t, f] of Object.entries(ok))
    it(`${t}`, () => {
      expect(parseToHost(JSON.stringify(f))).toStrictEqual({ ok: true, f });
    });
  it('optional fields may be left out (and do not come back as keys)', () => {
    for (const f of [
      { t: 'prog', rid: 'r1', pct: 0 },
      { t: 'prog', rid: 'r1', pct: 100 },
      { t: 'state', q: 'q1', s: { up: 1, relays: [] } },
      { t: 'state', q: 'q1', s: { up: 1, relays: [] }, rst: 'running' },
      { t: 'state', q: 'q1', s: { up: 1, relays: [] }, rst: 'unknown' },
      { t: 'hb', up: 1 },
      { t: 'err', code: 'X', msg: 'y' },
      { t: 'ack', rid: 'r1', st: 'running' },
      { t: 'res', rid: 'r1', st: 'unverified', ev: 'none', ver: false, s: { up: 1, relays: [{ ch: 4, cmd: true, pin: null, aux: null }] }, ms: 0 },
      { t: 'res', rid: 'r1', st: 'rejected', ev: 'none', ver: false, code: 'BUSY', s: { up: 1, relays: [] }, ms: 0 },
      { t: 'hello', v: 1, dev: 'd', boot: 'b', fw: '', board: '', cn: 'c'.repeat(128) },
      { t: 'hello', v: 1, dev: 'd'.repeat(64), boot: 'b', fw: 'f'.repeat(64), board: 'b'.repeat(64), cn: 'c'.repeat(16) },
      { t: 'evt', id: 'e2', k: 'estop', msg: '', s: { up: 1, relays: [], estop: true } },
      { t: 'res', rid: 'r1', st: 'failed', ev: 'none', ver: false, code: 'NO_FEEDBACK', s: { up: 1, relays: [] }, ms: 1 },
      { t: 'state', q: 'q1', s: { up: 1, relays: Array.from({ length: 64 }, (_, i) => ({ ch: i + 1, cmd: null, pin: null, aux: null })) } },
      {
        t: 'state',
        q: 'q1',
        s: { up: 1, relays: [], axes: Array.from({ length: 16 }, (_, i) => ({ axis: 'a' + i, pos: i, cmd: i, moving: false, homed: true, fault: false, home: false, limit: false })) },
      },
    ])
      expect(parseToHost(JSON.stringify(f)), JSON.stringify(f)).toStrictEqual({ ok: true, f });
  });

  it('a state snapshot is rebuilt from its known fields only', () => {
    const s = { up: 1, relays: [{ ch: 1, cmd: true, pin: true, aux: null, x: 1 }], axes: [{ axis: 'x', pos: 1, cmd: 2, moving: true, homed: true, fault: false, home: false, limit: false, deep: { a: 1 } }], junk: 'y' };
    expect(parseToHost(JSON.stringify({ t: 'state', q: 'q1', s }))).toStrictEqual({
      ok: true,
      f: { t: 'state', q: 'q1', s: { up: 1, relays: [{ ch: 1, cmd: true, pin: true, aux: null }], axes: [{ axis: 'x', pos: 1, cmd: 2, moving: true, homed: true, fault: false, home: false, limit: false }] } },
    });
  });
});

describe('parseToHost refuses each broken rule with its own message', () => {
  const cases: [Kind, Record<string, unknown>, string, string | undefined][] = [
    ['hello', { v: '1' }, 'hello: v must be the protocol version number', undefined],
    ['hello', { v: Infinity }, 'hello: v must be the protocol version number', undefined],
    ['hello', { dev: '' }, 'hello: dev ' + ID, undefined],
    ['hello', { dev: 'a'.repeat(65) }, 'hello: dev ' + ID, undefined],
    ['hello', { dev: 'a b' }, 'hello: dev ' + ID, undefined],
    ['hello', { boot: 7 }, 'hello: boot ' + ID, undefined],
    ['hello', { fw: 1 }, 'hello: fw and board must be strings of up to 64 chars', undefined],
    ['hello', { board: null }, 'hello: fw and board must be strings of up to 64 chars', undefined],
    ['hello', { cn: 'c'.repeat(15) }, 'hello: cn must be a nonce of 16-128 chars', undefined],
    ['hello', { cn: 'c'.repeat(129) }, 'hello: cn must be a nonce of 16-128 chars', undefined],
    ['hello', { cn: 16 }, 'hello: cn must be a nonce of 16-128 chars', undefined],
    ['auth', { mac: 'A'.repeat(64) }, 'auth: mac must be 64 lowercase hex chars', undefined],
    ['auth', { mac: 'a'.repeat(63) }, 'auth: mac must be 64 lowercase hex chars', undefined],
    ['auth', { mac: 'a'.repeat(65) }, 'auth: mac must be 64 lowercase hex chars', undefined],
    ['auth', { mac: 5 }, 'auth: mac must be 64 lowercase hex chars', undefined],
    ['ack', { rid: '' }, 'ack: rid ' + ID, undefined],
    ['ack', { st: 'completed' }, 'ack: st must be "accepted" or "running"', 'r1'],
    ['prog', { rid: 'r 1' }, 'prog: rid ' + ID, undefined],
    ['prog', { pct: -0.1 }, 'prog: pct must be 0..100', 'r1'],
    ['prog', { pct: 100.1 }, 'prog: pct must be 0..100', 'r1'],
    ['prog', { pct: '5' }, 'prog: pct must be 0..100', 'r1'],
    ['prog', { msg: 5 }, 'prog: msg must be a string of up to 1000 chars', 'r1'],
    ['prog', { pos: '1' }, 'prog: pos must be a number (mm)', 'r1'],
    ['res', { rid: 5 }, 'res: rid ' + ID, undefined],
    ['res', { st: 'done' }, 'res: st must be one of completed, unverified, failed, rejected, cancelled', 'r1'],
    ['res', { ev: 'eyes' }, 'res: ev must be one of pin_readback, aux_contact, encoder, sensor, load_current, tachometer, none', 'r1'],
    ['res', { ver: 'false' }, 'res: ver must be a boolean', 'r1'],
    ['res', { ev: 'none', ver: true }, 'res: ver cannot be true without evidence', 'r1'],
    ['res', { st: 'completed', ver: false }, 'res: completed requires verified evidence', 'r1'],
    ['res', { code: 'OOPS' }, 'res: code must be a known error code', 'r1'],
    ['res', { code: undefined }, 'res: failed requires an error code', 'r1'],
    ['res', { st: 'rejected', code: undefined }, 'res: rejected requires an error code', 'r1'],
    ['res', { msg: 1 }, 'res: msg must be a string of up to 1000 chars', 'r1'],
    ['res', { ms: '3' }, 'res: ms must be a number', 'r1'],
    ['res', { s: [] }, 'res: s must be a state object', 'r1'],
    ['res', { s: { relays: [] } }, 'res: s.up must be a number', 'r1'],
    ['res', { s: { up: 1 } }, "res: s.relays must be an array, or s.r the relays' bit masks", 'r1'],
    ['res', { s: { up: 1, relays: [{ ch: '1', cmd: null, pin: null, aux: null }] } }, 'res: s.relays[] must be objects with a numeric ch', 'r1'],
    ['res', { s: { up: 1, relays: [null] } }, 'res: s.relays[] must be objects with a numeric ch', 'r1'],
    ['res', { s: { up: 1, relays: [{ ch: 1, cmd: 1, pin: null, aux: null }] } }, 'res: s.relays[].cmd must be boolean or null', 'r1'],
    ['res', { s: { up: 1, relays: [{ ch: 1, cmd: null, pin: 'x', aux: null }] } }, 'res: s.relays[].pin must be boolean or null', 'r1'],
    ['res', { s: { up: 1, relays: [{ ch: 1, cmd: null, pin: null }] } }, 'res: s.relays[].aux must be boolean or null', 'r1'],
    ['res', { s: { up: 1, relays: [], axes: {} } }, 'res: s.axes must be an array', 'r1'],
    ['res', { s: { up: 1, relays: [], axes: [{ axis: 'x', pos: 1 }] } }, 'res: s.axes[] must have axis (up to 32 chars), pos and cmd', 'r1'],
    ['res', { s: { up: 1, relays: [], axes: [{ axis: 1, pos: 1, cmd: 1 }] } }, 'res: s.axes[] must have axis (up to 32 chars), pos and cmd', 'r1'],
    ['res', { s: { up: 1, relays: [], axes: [{ axis: 'x', pos: '1', cmd: 1 }] } }, 'res: s.axes[] must have axis (up to 32 chars), pos and cmd', 'r1'],
    ['res', { s: { up: 1, relays: [], axes: [null] } }, 'res: s.axes[] must have axis (up to 32 chars), pos and cmd', 'r1'],
    ...(['moving', 'homed', 'fault', 'home', 'limit'] as const).map(
      (k) =>
        [
          'res',
          { s: { up: 1, relays: [], axes: [{ axis: 'x', pos: 1, cmd: 1, moving: false, homed: true, fault: false, home: false, limit: false, [k]: 1 }] } },
          `res: s.axes[].${k} must be a boolean`,
          'r1',
        ] as [Kind, Record<string, unknown>, string, string | undefined],
    ),
    ['state', { q: '' }, 'state: q ' + ID, undefined],
    ['state', { s: null }, 'state: s must be a state object', undefined],
    ['state', { rid: '' }, 'state: rid ' + ID, undefined],
    ['state', { rst: 'gone' }, 'state: rst must be running, done or unknown', undefined],
    ['hb', { up: 'x' }, 'hb: up must be a number', undefined],
    ['hb', { free: '1' }, 'hb: free must be a number', undefined],
    ['hb', { bad: '1' }, 'hb: bad must be a number', undefined],
    ['auth', { mac: 'X' + 'a'.repeat(63) }, 'auth: mac must be 64 lowercase hex chars', undefined],
    ['auth', { mac: 'a'.repeat(63) + 'X' }, 'auth: mac must be 64 lowercase hex chars', undefined],
    ['ack', { rid: ['r1'] }, 'ack: rid ' + ID, undefined],
    ['res', { s: { up: 1, relays: Array.from({ length: 65 }, (_, i) => ({ ch: i, cmd: null, pin: null, aux: null })) } }, 'res: s.relays has more than 64 entries', 'r1'],
    ['res', { s: { up: 1, relays: [], axes: Array.from({ length: 17 }, (_, i) => ({ axis: 'a' + i, pos: 0, cmd: 0, moving: false, homed: true, fault: false, home: false, limit: false })) } }, 'res: s.axes has more than 16 entries', 'r1'],
    ['res', { s: { up: 1, relays: [], estop: 'yes' } }, 'res: s.estop must be a boolean', 'r1'],
    ['evt', { id: '' }, 'evt: id ' + ID, undefined],
    ['evt', { k: 'boom' }, 'evt: k must be one of max_on, estop', 'e1'],
    ['evt', { ch: '2' }, 'evt: ch must be a number', 'e1'],
    ['evt', { msg: undefined }, 'evt: msg must be a string of up to 1000 chars', 'e1'],
    ['evt', { msg: 'm'.repeat(1001) }, 'evt: msg must be a string of up to 1000 chars', 'e1'],
    ['evt', { s: { up: 1, relays: {} } }, "evt: s.relays must be an array, or s.r the relays' bit masks", 'e1'],
    ['err', { code: 1 }, 'err: needs string code (up to 32 chars) and msg (up to 1000), optional ref', undefined],
    ['err', { msg: undefined }, 'err: needs string code (up to 32 chars) and msg (up to 1000), optional ref', undefined],
    ['err', { ref: 2 }, 'err: needs string code (up to 32 chars) and msg (up to 1000), optional ref', undefined],
  ];
  for (const [t, change, msg, ref] of cases)
    it(`${t} ${JSON.stringify(change).slice(0, 90)} → ${msg}`, () => {
      const f: Record<string, unknown> = { ...ok[t], ...change };
      for (const k of Object.keys(change)) if (change[k] === undefined) delete f[k];
      const r = parseToHost(JSON.stringify(f));
      expect(r).toEqual(ref === undefined ? { ok: false, code: 'MALFORMED_FRAME', msg, ref: undefined } : { ok: false, code: 'MALFORMED_FRAME', msg, ref });
    });

  it('an unknown type is UNKNOWN_FRAME, its name quoted and cut to 40 chars', () => {
    expect(parseToHost(JSON.stringify({ t: 'x'.repeat(41) }))).toEqual({ ok: false, code: 'UNKNOWN_FRAME', msg: 'unknown frame type "' + 'x'.repeat(37) + '..."' });
  });

  it('a frame that is not a JSON object with a string t is refused before its type is read', () => {
    expect(parseToHost(5)).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON text message' });
    expect(parseToHost('{')).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame is not valid JSON' });
    expect(parseToHost('[1]')).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' });
    expect(parseToHost('null')).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' });
    expect(parseToHost('{"t":1}')).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame has no string field "t" (its type)' });
    expect(parseToHost('7')).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' });
    expect(parseToHost('"res"')).toEqual({ ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' });
  });
});
