// The chaos checker (chaos/src/invariants.ts) judges when things happened, not when it heard of them.
// A result is judged by the hardware at the moment the device made it (its state snapshot's uptime),
// not when the frame finally left the chip (Nagle holds a small write until the host's ACK, up to
// 40 ms; an outbox holds it while the link is down; a timer's writes leave at the end of its instant):
// seeds 213 and 600 were false failures of this kind. And a motion command is judged by when the host
// put it on the wire, not by when its submitter heard that it was sent (seed 1383).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { BoardDef } from '@proofrig/protocol';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { SimRig } from '@proofrig/sim';
import { Checker } from '../chaos/src/invariants.js';
import type { CommandStatus } from '../host/src/core/command-view.js';

const BOARD: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
/** K3: active low on GPIO21, observed only by reading its output pin back. */
const K3_PIN = 21;
const BOOT_AT = 1_000_000;

/** A rig whose pin and contact levels the test sets, reporting changes to the checker as run.ts wires a SimRig. */
function setup() {
  const clock = new VirtualClock(BOOT_AT);
  const pins = new Map<number, 0 | 1>([[K3_PIN, 1]]);
  const contacts = new Map<number, boolean>();
  const rig = {
    board: BOARD,
    pinLevel: (p: number) => pins.get(p) ?? 1,
    relay: (ch: number) => ({ energised: false, contactClosed: contacts.get(ch) ?? false }),
  } as unknown as SimRig;
  const checker = new Checker(clock, () => rig, () => undefined);
  checker.booted('rig1', 1);
  return {
    clock,
    checker,
    /** The K3 output pin changes level now (a command's write, a stuck fault). */
    pin(level: 0 | 1) {
      pins.set(K3_PIN, level);
      checker.pin('rig1', K3_PIN, level);
    },
    /** A relay's contact moves now. */
    contact(ch: number, closed: boolean) {
      contacts.set(ch, closed);
      checker.contact('rig1', ch, closed);
    },
    submit(rid: string, args: Record<string, unknown>) {
      checker.submitted(status(rid, args, 'sent'));
    },
    /** The device's result frame leaves the chip now; the device made it at `madeAt` (its snapshot's uptime). */
    result(rid: string, ev: string, madeAt: number) {
      const res = { t: 'res', rid, st: 'completed', ev, ver: true, s: { up: madeAt - BOOT_AT, relays: [] }, ms: 2 };
      checker.frame('send', 'rig1', 'to_host', JSON.stringify(res));
    },
    completed(rid: string, args: Record<string, unknown>) {
      checker.hostChange(status(rid, args, 'completed'));
    },
  };
}

function status(rid: string, args: Record<string, unknown>, state: 'sent' | 'completed' | 'failed', action = 'relay.set', submittedAt = BOOT_AT, terminalAt?: number): CommandStatus {
  return {
    terminal_at: state === 'sent' ? null : new Date(terminalAt ?? submittedAt).toISOString(),
    command_id: 'cmd-' + rid,
    request_id: rid,
    device_id: 'rig1',
    action,
    args,
    state,
    terminal: state !== 'sent',
    submitted_at: new Date(submittedAt).toISOString(),
    deadline_ms: 4000,
    estimated_seconds: 1,
    detail: null,
    error_code: state === 'failed' ? 'LIMIT_HIT' : null,
  } as unknown as CommandStatus;
}

describe('chaos checker: a completed result is judged by the hardware when the device made it', () => {
  it('a pin read-back result held back by Nagle while a later command switched the pin is no violation (seed 213)', () => {
    const t = setup();
    t.submit('off-1', { ch: 3, on: false });
    t.pin(1); // off (active low): the device writes 1, reads 1 back 2 ms later and makes `completed`
    t.clock.advance(2);
    const made = t.clock.now();
    t.clock.advance(13);
    t.submit('on-2', { ch: 3, on: true });
    t.pin(0); // the next command switches K3 on in the same instant Nagle lets the first result out
    t.result('off-1', 'pin_readback', made);
    t.completed('off-1', { ch: 3, on: false });
    expect(t.checker.violations).toEqual([]);
  });

  it('a pin read-back result made while the pin was at the other level is a violation, however late it is sent', () => {
    const t = setup();
    t.submit('off-1', { ch: 3, on: false });
    t.pin(0); // stuck at the on level when the device reads it back
    t.clock.advance(2);
    const made = t.clock.now();
    t.clock.advance(13);
    t.pin(1);
    t.result('off-1', 'pin_readback', made);
    t.completed('off-1', { ch: 3, on: false });
    expect(t.checker.violations).toHaveLength(1);
    expect(t.checker.violations[0].event).toContain(`pin GPIO21 at 0 when the device decided it (t=${made}, sent 13 ms later)`);
  });

  it('a pin read-back result sent the moment it is made is judged by the pin then', () => {
    const t = setup();
    t.submit('on-1', { ch: 3, on: true });
    t.pin(1); // the output did not follow (stuck high)
    t.clock.advance(2);
    t.result('on-1', 'pin_readback', t.clock.now());
    t.completed('on-1', { ch: 3, on: true });
    expect(t.checker.violations.map((v) => v.event)).toEqual([
      `t=${t.clock.now()} device said completed while relay 3 pin GPIO21 at 1 when the device decided it (t=${t.clock.now()}, sent 0 ms later), commanded on=true (drive level 0)`,
    ]);
  });

  it('a result that leaves at the end of the instant it was made in, after the next command switched the pin in that instant, is no violation (seed 600)', () => {
    const t = setup();
    t.submit('on-1', { ch: 3, on: true });
    t.pin(0);
    t.clock.advance(2);
    const made = t.clock.now(); // the settle timer makes `completed`; its write leaves after the instant's other timers
    t.submit('off-2', { ch: 3, on: false });
    t.pin(1); // the next command, delivered in the same instant, switches K3 off
    t.result('on-1', 'pin_readback', made);
    t.completed('on-1', { ch: 3, on: true });
    expect(t.checker.violations).toEqual([]);
  });

  it('an aux-contact result held back by Nagle is judged by the contact when it was made', () => {
    const t = setup();
    t.submit('on-1', { ch: 1, on: true });
    t.contact(1, true);
    t.clock.advance(25);
    const made = t.clock.now();
    t.clock.advance(30);
    t.contact(1, false); // a later off command opened it before the result left the chip
    t.result('on-1', 'aux_contact', made);
    t.completed('on-1', { ch: 1, on: true });
    expect(t.checker.violations).toEqual([]);

    t.submit('on-3', { ch: 1, on: true });
    t.clock.advance(25);
    const made3 = t.clock.now(); // the contact stayed open (coil open): completed would be a lie
    t.clock.advance(30);
    t.contact(1, true);
    t.result('on-3', 'aux_contact', made3);
    t.completed('on-3', { ch: 1, on: true });
    expect(t.checker.violations.map((v) => v.invariant)).toEqual(['completed only when the hardware was at the target']);
  });
});

describe('chaos checker: an axis that ended in a fault is not driven again before a state read', () => {
  // Judged at the end of the run in the host's order of decisions: a fault by its terminal_at, a motion
  // by its submitted_at, a read by when its answer arrived. A status is heard only after its batch is
  // on disk, seconds after the decision on a slow disk, so the order statuses are heard in is not it.
  const X = { axis: 'x' };
  const invariants = (t: ReturnType<typeof setup>) => {
    t.checker.finish();
    return t.checker.violations.map((v) => v.invariant);
  };
  /** m1 is submitted at BOOT_AT and ends failed at BOOT_AT + 33. */
  const failedMove = (t: ReturnType<typeof setup>) => {
    t.checker.submitted(status('m1', { ...X, mm: 121.6 }, 'sent', 'stepper.move'));
    t.clock.advance(33);
    t.checker.hostChange(status('m1', { ...X, mm: 121.6 }, 'failed', 'stepper.move', BOOT_AT, t.clock.now()));
    return t.clock.now();
  };

  it('a motion the host admitted in the same millisecond its fault result arrived is no violation (seed 1383)', () => {
    const t = setup();
    const fault = failedMove(t);
    t.checker.submitted(status('h2', X, 'sent', 'stepper.home', fault));
    expect(invariants(t)).toEqual([]);
  });

  it('a motion admitted after the fault was decided, with no state read between, is a violation', () => {
    const t = setup();
    const fault = failedMove(t);
    t.clock.advance(5);
    t.checker.submitted(status('h2', X, 'sent', 'stepper.home', fault + 5));
    expect(invariants(t)).toEqual(['an axis that ended in a fault is not driven again before a state read']);
  });

  it('it is a violation even when the fault is heard only after the motion (its batch reached the disk later)', () => {
    const t = setup();
    t.checker.submitted(status('m1', { ...X, mm: 121.6 }, 'sent', 'stepper.move'));
    t.checker.submitted(status('h2', X, 'sent', 'stepper.home', BOOT_AT + 40));
    t.clock.advance(2000);
    t.checker.hostChange(status('m1', { ...X, mm: 121.6 }, 'failed', 'stepper.move', BOOT_AT, BOOT_AT + 33));
    expect(invariants(t)).toEqual(['an axis that ended in a fault is not driven again before a state read']);
  });

  it('after a state read answered between the fault and the motion, the axis may be driven again', () => {
    const t = setup();
    const fault = failedMove(t);
    t.clock.advance(2);
    t.checker.stateRead('rig1');
    t.clock.advance(3);
    t.checker.submitted(status('h2', X, 'sent', 'stepper.home', fault + 5));
    expect(invariants(t)).toEqual([]);
  });

  it('a read answered before the fault does not count', () => {
    const t = setup();
    t.checker.stateRead('rig1');
    const fault = failedMove(t);
    t.clock.advance(5);
    t.checker.submitted(status('h2', X, 'sent', 'stepper.home', fault + 5));
    expect(invariants(t)).toEqual(['an axis that ended in a fault is not driven again before a state read']);
  });
});

describe('chaos checker: no device outcome is replaced by a timeout, judged when the host decided', () => {
  const timeout = (rid: string, decidedAt: number) =>
    ({ ...status(rid, { ch: 3, on: true }, 'sent'), state: 'timeout', terminal: true, error_code: 'TIMEOUT', deadline_ms: 50, terminal_at: new Date(decidedAt).toISOString(), detail: 'deadline passed' }) as unknown as CommandStatus;
  const result = (t: ReturnType<typeof setup>, rid: string) =>
    t.checker.frame('send', 'rig1', 'to_host', JSON.stringify({ t: 'res', rid, st: 'completed', ev: 'pin_readback', ver: true, s: { up: 5, relays: [] } }));

  it('a timeout decided while the device was away, heard after it came back with its result, is no violation', () => {
    const t = setup();
    t.checker.link('rig1', true);
    t.clock.advance(10);
    t.checker.link('rig1', false);
    t.clock.advance(100);
    const decided = t.clock.now();
    t.clock.advance(50);
    t.checker.link('rig1', true);
    result(t, 'r9');
    t.clock.advance(700); // the timeout's batch reaches the disk
    t.checker.hostChange(timeout('r9', decided));
    expect(t.checker.violations).toEqual([]);
  });

  it('a timeout decided while the device was connected and holding the result is a violation', () => {
    const t = setup();
    t.checker.link('rig1', true);
    result(t, 'r8');
    t.clock.advance(100);
    t.checker.hostChange(timeout('r8', t.clock.now()));
    expect(t.checker.violations.map((v) => v.invariant)).toEqual(['no device outcome is replaced by a timeout']);
  });
});

describe('chaos checker: a retry after DEVICE_OFFLINE is judged anew (bug 3)', () => {
  const offline = (commandId: string) =>
    ({ ...status('r1', { ch: 3, on: true }, 'sent'), command_id: commandId, state: 'rejected', terminal: true, error_code: 'DEVICE_OFFLINE', detail: 'device rig1 is offline' }) as unknown as CommandStatus;

  it('a retry answered with the earlier refusal itself is a violation', () => {
    const t = setup();
    t.checker.submitted(offline('cmd-a'));
    t.checker.submitted(offline('cmd-a'));
    expect(t.checker.violations.map((v) => v.invariant)).toEqual(['a retry after DEVICE_OFFLINE is judged anew']);
    expect(t.checker.violations[0]!.event).toContain('earlier refusal cmd-a');
  });

  it('a retry refused again as a new command, or sent, is none', () => {
    const t = setup();
    t.checker.submitted(offline('cmd-a'));
    t.checker.submitted(offline('cmd-b')); // still offline: judged anew, a new refusal
    t.checker.submitted({ ...status('r1', { ch: 3, on: true }, 'sent'), command_id: 'cmd-c' } as CommandStatus);
    expect(t.checker.violations).toEqual([]);
  });
});
