// The dashboard's live feed: Server-Sent Events with a snapshot first, then every command
// change and every device change as it happens. Served to the page by fetch() with the same
// bearer token as MCP (the page never puts the token in a URL the server sees).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { findAxis, findRelay, moveProfile } from '@proofrig/protocol';
import { FAN_SET, kindOf, SERVO_SET } from '@proofrig/protocol/kinds';
import type { HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/command-view.js';
import { journalReadings, pointsOf, PLOT_READINGS } from './sensor-history.js';

/** How many recent commands the first snapshot carries. */
export const SNAPSHOT_COMMANDS = 50;
/** How many past faults (failed and timed-out commands) the first snapshot carries, from the journal. */
export const SNAPSHOT_FAULTS = 20;
/** A comment line this often keeps proxies and the browser from timing the stream out. */
const KEEPALIVE_MS = 15_000;

function board(core: HostCore, dev: string) {
  const b = core.devices.board(dev);
  if (!b) return null;
  return {
    area: b.area ?? null,
    estop: !!b.estop,
    relays: b.relays.map((r) => ({ ch: r.ch, name: r.name, label: r.label ?? null, feedback: r.feedback.kind })),
    axes: (b.steppers ?? []).map((s) => ({ axis: s.axis, name: s.name, label: s.label ?? null, travel_mm: [s.travel.min_mm, s.travel.max_mm] })),
    sensors: (b.sensors ?? []).map((s) => ({ id: s.id, label: s.label ?? null, unit: s.unit, range: [s.range.min, s.range.max] })),
    pwm: (b.pwm ?? []).map((p) => ({ id: p.id, label: p.label ?? null, kind: p.kind, tach: p.kind === 'fan' && !!p.tach })),
  };
}

/**
 * A status with the lifecycle path the journal recorded (submitted → sent → accepted → …) and what
 * its kind says about it: the words for a table row, what it acts on, whether it is a motion (the
 * page names no action itself).
 */
function withPath(core: HostCore, s: CommandStatus) {
  const path: string[] = [];
  for (const e of core.journal.events(s.command_id)) if (path[path.length - 1] !== e.state) path.push(e.state);
  const kind = kindOf(s.action);
  const b = core.devices.board(s.device_id);
  const label =
    !kind || !b ? null : kind.target === 'relay' ? (findRelay(b, s.args.ch as number)?.label ?? null) : kind.target === 'axis' ? (findAxis(b, String(s.args.axis))?.label ?? null) : null;
  // The PWM output a fan or servo command drives, for its row on the device card.
  const pwm = kind === FAN_SET || kind === SERVO_SET ? String(s.args.id) : null;
  return { ...s, path, what: kind ? kind.short(s.args, label) : s.action, target: kind?.target ?? null, motion: kind?.motion ?? false, pwm, plan: planOf(core, s) };
}

/** Commanded positions of a move over time (the firmware's own profile), worked out once, when the move is first seen. */
const plans = new Map<string, [number, number][]>();
function planOf(core: HostCore, s: CommandStatus): [number, number][] | null {
  const kind = kindOf(s.action);
  if (!kind?.motion || typeof s.args.mm !== 'number') return null;
  const known = plans.get(s.command_id);
  if (known) return known;
  const board = core.devices.board(s.device_id);
  const ax = board && findAxis(board, String(s.args.axis));
  // Where it starts: the axis as the device last reported it (before the move's own progress).
  const from = core.devices.state(s.device_id)?.axes?.find((a) => a.axis === ax?.axis)?.pos;
  // Only at its start: a page that opens mid-move would otherwise draw the plan from where it is now.
  if (!ax || from === undefined || (s.state !== 'submitted' && s.state !== 'sent')) return null;
  const plan = moveProfile(ax, from, s.args.mm, typeof s.args.speed === 'number' ? s.args.speed : ax.max_speed_mm_s);
  plans.set(s.command_id, plan);
  if (plans.size > 64) plans.delete(plans.keys().next().value!);
  return plan;
}

/** A device for the page: its view, its board's outputs and sensors, and the readings its state carries (sensor-history.ts). */
function device(core: HostCore, dev: string) {
  const v = core.devices.view(dev);
  if (!v) return null;
  const sensors = core.devices.board(dev)?.sensors ?? [];
  return { ...v, board: board(core, dev), readings: pointsOf(sensors, v.state, v.state_observed_at, v.boot_id) };
}

/** Open one SSE stream on `res`; it ends when the client goes away. */
export function serveEvents(core: HostCore, req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  // Like MCP answers, what the page is shown waits until the journal holds it (in order).
  let last: Promise<unknown> = Promise.resolve();
  const send = (event: string, data: unknown) => {
    const text = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const written = core.journal.flushed();
    written.catch(() => {}); // handled below, possibly after it settled
    last = last.then(() => written).then(
      () => res.write(text),
      () => {},
    );
  };
  send('snapshot', {
    at: new Date(core.clock.now()).toISOString(),
    devices: core.devices.ids().map((d) => device(core, d)),
    commands: core.commands.recent(SNAPSHOT_COMMANDS).map((s) => withPath(core, s)),
    // The faults list is history, not "since this page opened": the journal's last ones first.
    faults: core.journal.recent({ states: ['failed', 'timeout'], limit: SNAPSHOT_FAULTS }).map((c) => withPath(core, core.commands.view(c))),
    // Each sensor's recent readings from the journal, then live from each device event.
    readings: Object.fromEntries(core.devices.ids().map((d) => [d, journalReadings(core, d)])),
    plot_readings: PLOT_READINGS,
  });
  const onCommand = (s: CommandStatus) => send('command', withPath(core, s));
  const onDevice = (dev: string) => send('device', device(core, dev));
  core.commands.on('change', onCommand);
  core.devices.on('change', onDevice);
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  const end = () => {
    clearInterval(keepalive);
    core.commands.off('change', onCommand);
    core.devices.off('change', onDevice);
  };
  req.on('close', end);
  res.on('error', end);
}
