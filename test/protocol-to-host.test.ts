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
