// The request_id dedupe ring and result outbox in one: DEDUPE_RING_SIZE slots in preallocated
// arrays. A slot holds a rid, whether its command is running or done, the result frame's JSON and
// whether the host has yet to confirm (rack) that result. Done-and-confirmed slots are recycled
// oldest first; running or unconfirmed ones never are, so a full ring refuses new commands
// rather than forgetting an outcome.
import { DEDUPE_RING_SIZE } from '@proofrig/protocol';

export const FREE = 0;
export const RUNNING = 1;
export const DONE = 2;

const N = DEDUPE_RING_SIZE;
const rid: string[] = [];
const st: number[] = [];
const res: string[] = [];
const pend: boolean[] = [];
/** Order the slot was taken (for eviction) and the order its result was decided (for re-sending). */
const born: number[] = [];
const fin: number[] = [];
/** Taken slots, oldest first: eviction looks at the front only (no scan of every slot per command). */
let ord: number[] = [];
let seq = 0;

/** Empty every slot (at boot; tests call it between cases). */
export function ringReset(): void {
  for (let i = 0; i < N; i++) {
    rid[i] = '';
    st[i] = FREE;
    res[i] = '';
    pend[i] = false;
    born[i] = 0;
    fin[i] = 0;
  }
  ord = [];
  seq = 0;
}
ringReset();

/** Slot holding this rid, or -1. Free slots hold '' (never a rid); Array indexOf is native on Espruino. */
export function ringFind(r: string): number {
  return r ? rid.indexOf(r) : -1;
}

/**
 * Take a slot for a new rid, marked running: a free slot, else the oldest done and confirmed
 * one. -1 when every slot is running or awaits rack: the caller must refuse the command.
 */
export function ringAdd(r: string): number {
  let v = st.indexOf(FREE);
  if (v < 0) {
    // ord is in the order slots were taken: the first done and confirmed one is the oldest.
    for (let k = 0; k < ord.length; k++) {
      const i = ord[k];
      if (st[i] === DONE && !pend[i]) {
        v = i;
        ord.splice(k, 1);
        break;
      }
    }
    if (v < 0) return -1;
  }
  ord.push(v);
  rid[v] = r;
  st[v] = RUNNING;
  res[v] = '';
  pend[v] = false;
  born[v] = ++seq;
  return v;
}

/** Record the result JSON of slot i: done, and pending until the host acks it. */
export function ringDone(i: number, json: string): void {
  st[i] = DONE;
  res[i] = json;
  pend[i] = true;
  fin[i] = ++seq;
}

/** Run slot i's command again (an always-executing action such as stop): running, no result yet. */
export function ringRerun(i: number): void {
  st[i] = RUNNING;
  res[i] = '';
  pend[i] = false;
}

/** The host confirmed rid's result: it may now be evicted (it still answers repeats). */
export function ringAck(r: string): boolean {
  const i = ringFind(r);
  if (i < 0 || st[i] !== DONE) return false;
  pend[i] = false;
  return true;
}

export function ringState(i: number): number {
  return st[i];
}
export function ringRid(i: number): string {
  return rid[i];
}
export function ringResult(i: number): string {
  return res[i];
}
export function ringPending(i: number): boolean {
  return pend[i];
}

/** Slots whose results the host has not confirmed, in the order the results were decided. */
export function ringUnacked(): number[] {
  const o: number[] = [];
  for (let i = 0; i < N; i++) {
    if (!pend[i]) continue;
    let j = o.length;
    while (j > 0 && fin[o[j - 1]] > fin[i]) j--;
    o.splice(j, 0, i);
  }
  return o;
}
