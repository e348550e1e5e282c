// The request_id ring: a repeat never re-executes, results stay until the host confirms them,
// and a ring with nothing evictable refuses rather than forgets.
import { beforeEach, describe, expect, it } from 'vitest';
import { DEDUPE_RING_SIZE } from '@proofrig/protocol';
import {
  DONE, RUNNING, ringAck, ringAdd, ringDone, ringFind, ringPending, ringReset, ringResult, ringRid, ringState, ringUnacked,
} from '../firmware/src/dedupe';

/** Add rid and finish it with a result; returns the slot. */
function finished(rid: string, acked = true): number {
  const i = ringAdd(rid);
  expect(i).toBeGreaterThanOrEqual(0);
  ringDone(i, '{"rid":"' + rid + '"}');
  if (acked) ringAck(rid);
  return i;
}

describe('firmware dedupe ring', () => {
  beforeEach(() => ringReset());

  it('finds a request id while it runs and after it is done, with its stored result', () => {
    expect(ringFind('a')).toBe(-1);
    const i = ringAdd('a');
    expect(ringFind('a')).toBe(i);
    expect(ringState(i)).toBe(RUNNING);
    ringDone(i, '{"t":"res","rid":"a"}');
    expect(ringFind('a')).toBe(i);
    expect(ringState(i)).toBe(DONE);
    expect(ringRid(i)).toBe('a');
    expect(ringResult(i)).toBe('{"t":"res","rid":"a"}');
  });

  it('keeps a result pending until the host acks it, and still remembers it after the ack', () => {
    const i = finished('a', false);
    expect(ringPending(i)).toBe(true);
    expect(ringUnacked()).toEqual([i]);
    expect(ringAck('a')).toBe(true);
    expect(ringPending(i)).toBe(false);
    expect(ringUnacked()).toEqual([]);
    expect(ringFind('a')).toBe(i);
    expect(ringResult(i)).toBe('{"rid":"a"}');
  });

  it('ignores an ack for an unknown or still running request id', () => {
    expect(ringAck('nope')).toBe(false);
    ringAdd('r');
    expect(ringAck('r')).toBe(false);
  });

  it('evicts the oldest confirmed result first once all slots are used', () => {
    for (let k = 0; k < DEDUPE_RING_SIZE; k++) finished('id' + k);
    const slotOfId0 = ringFind('id0');
    expect(ringAdd('new1')).toBe(slotOfId0);
    expect(ringFind('id0')).toBe(-1);
    expect(ringFind('id1')).toBeGreaterThanOrEqual(0);
    const slotOfId1 = ringFind('id1');
    expect(ringAdd('new2')).toBe(slotOfId1);
    expect(ringFind('id1')).toBe(-1);
  });

  it('never evicts a pending (unconfirmed) result or a running command', () => {
    finished('pending0', false);
    ringAdd('running1');
    for (let k = 2; k < DEDUPE_RING_SIZE; k++) finished('id' + k);
    ringAdd('x');
    expect(ringFind('pending0')).toBeGreaterThanOrEqual(0);
    expect(ringFind('running1')).toBeGreaterThanOrEqual(0);
    expect(ringFind('id2')).toBe(-1);
  });

  it('signals refusal (-1) when every slot is running or awaits rack, and changes nothing', () => {
    for (let k = 0; k < DEDUPE_RING_SIZE; k++) {
      if (k % 2) ringAdd('run' + k);
      else finished('pend' + k, false);
    }
    expect(ringAdd('one-too-many')).toBe(-1);
    expect(ringFind('one-too-many')).toBe(-1);
    for (let k = 0; k < DEDUPE_RING_SIZE; k++) expect(ringFind((k % 2 ? 'run' : 'pend') + k)).toBeGreaterThanOrEqual(0);
    ringAck('pend4');
    const i = ringAdd('after-ack');
    expect(i).toBeGreaterThanOrEqual(0);
    expect(ringFind('pend4')).toBe(-1);
  });

  it('lists unconfirmed results in the order they were decided, not the order they arrived', () => {
    const a = ringAdd('slow');
    const b = ringAdd('fast');
    ringDone(b, 'fast');
    ringDone(a, 'slow');
    finished('c', false);
    expect(ringUnacked().map(ringRid)).toEqual(['fast', 'slow', 'c']);
  });
});
