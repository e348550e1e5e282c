// Tiny field checkers shared by the frame validators (no dependencies; runs on Espruino).
import { MAX_ECHO_LENGTH, MAX_ID_LENGTH, MAX_MSG_LENGTH } from './constants.js';

export interface FrameError {
  ok: false;
  code: 'MALFORMED_FRAME' | 'UNKNOWN_FRAME';
  msg: string;
  /** The frame type and request id, when they could be read, so the reply can name them. */
  ref?: string;
}

export function bad(t: string, msg: string, ref?: string): FrameError {
  return { ok: false, code: 'MALFORMED_FRAME', msg: t + ': ' + msg, ref: ref };
}

export function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** The characters of an id (request, query, device ids on the wire); its length is 1..MAX_ID_LENGTH. */
export const ID_CHARS = /^[A-Za-z0-9_.:-]+$/;

export function isId(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0 && x.length <= MAX_ID_LENGTH && ID_CHARS.test(x);
}

export function isNum(x: unknown): x is number {
  return typeof x === 'number' && isFinite(x);
}

export function isInt(x: unknown): x is number {
  return typeof x === 'number' && Math.floor(x) === x && isFinite(x);
}

/** A board time in ms: 0 to 10 minutes. */
export function isMs(x: unknown): x is number {
  return isNum(x) && x >= 0 && x <= 600000;
}

/** A string of at most `max` chars. */
export function isStr(x: unknown, max: number): x is string {
  return typeof x === 'string' && x.length <= max;
}

/** Absent, or a human-readable message within MAX_MSG_LENGTH. */
export function optMsg(x: unknown): boolean {
  return x === undefined || isStr(x, MAX_MSG_LENGTH);
}

/** Clip text to at most `max` chars (MAX_MSG_LENGTH by default), marking the cut. */
export function clip(s: string, max?: number): string {
  const m = max === undefined ? MAX_MSG_LENGTH : max;
  return s.length <= m ? s : s.slice(0, m - 3) + '...';
}

/**
 * A received value quoted back in a message: only a string or a number is shown, clipped to
 * MAX_ECHO_LENGTH, so a reply never grows with the input or runs its toString.
 */
export function echo(x: unknown): string {
  if (typeof x === 'number') return '' + x;
  if (typeof x !== 'string') return '(' + (x === null ? 'null' : Array.isArray(x) ? 'array' : typeof x) + ')';
  return JSON.stringify(clip(x, MAX_ECHO_LENGTH));
}

export const ID_RULE = 'must be 1-' + MAX_ID_LENGTH + ' chars of A-Z a-z 0-9 _ . : -';

/** Parse JSON text into an object with a string `t`, or say why not. */
export function parseEnvelope(text: unknown): { ok: true; f: Record<string, unknown> } | FrameError {
  if (typeof text !== 'string') return { ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON text message' };
  let f: unknown;
  try {
    f = JSON.parse(text);
  } catch (e) {
    return { ok: false, code: 'MALFORMED_FRAME', msg: 'frame is not valid JSON' };
  }
  if (!isObj(f)) return { ok: false, code: 'MALFORMED_FRAME', msg: 'frame must be a JSON object' };
  if (typeof f.t !== 'string') return { ok: false, code: 'MALFORMED_FRAME', msg: 'frame has no string field "t" (its type)' };
  return { ok: true, f: f };
}

/** The `err` frame is the same both ways: string code and msg, optional string ref. */
export function checkErr(f: Record<string, unknown>): FrameError | null {
  if (!isStr(f.code, 32) || !isStr(f.msg, MAX_MSG_LENGTH) || (f.ref !== undefined && !isStr(f.ref, MAX_ID_LENGTH + 16)))
    return bad('err', 'needs string code (up to 32 chars) and msg (up to ' + MAX_MSG_LENGTH + '), optional ref');
  return null;
}
