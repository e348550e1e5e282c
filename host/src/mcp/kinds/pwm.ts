// The PWM kinds' MCP tools: fan_set (fan.set, proven by the fan's tachometer) and servo_set
// (servo.set, never better than unverified). Each waits for the outcome (the fan's spin-up and
// measurement take a few seconds) and its first text line says what was measured, or why not.
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ID_CHARS, ID_RULE, MAX_ID_LENGTH, MAX_LABEL_LENGTH, PWM, pwmByName, type BoardDef, type FanDef, type PwmDef, type ServoDef } from '@proofrig/protocol';
import { FAN_SET, SERVO_SET } from '@proofrig/protocol/kinds';
import type { CommandStatus } from '../../core/command-view.js';
import { CommandStatusSchema } from '../schemas.js';
import { summarizeCommand } from '../summary.js';
import { toolError, type ToolContext } from './context.js';

/** How long a call waits for the outcome by default (inside the SDK clients' 60 s), ms. */
const WAIT_MS = 15000;

const target = {
  name: z.string().min(1).max(MAX_LABEL_LENGTH).optional(),
  device_id: z.string().min(1).max(64).optional(),
  request_id: z.string().min(1).max(MAX_ID_LENGTH).regex(ID_CHARS, 'request_id ' + ID_RULE).optional().describe('optional idempotency key: the same request_id replays the first outcome, never a second write'),
  wait_ms: z.number().int().min(0).max(50000).optional().describe(`how long to wait for the outcome (default ${WAIT_MS})`),
};

export const FanSetInput = z.strictObject({
  ...target,
  fan: z.string().min(1).max(MAX_LABEL_LENGTH).optional().describe('the fan of device_id: its id ("fan") or label ("exhaust fan")'),
  duty: z.number({ error: 'duty must be a number 0..100 (percent; 0 stops the fan)' }).min(0, 'duty must be 0..100 (percent)').max(100, 'duty must be 0..100 (percent)'),
});

export const ServoSetInput = z.strictObject({
  ...target,
  servo: z.string().min(1).max(MAX_LABEL_LENGTH).optional().describe('the servo of device_id: its id ("vent") or label ("vent flap")'),
  angle: z.number({ error: 'angle must be a number of degrees' }).describe('degrees, inside the servo\'s angle range'),
});

type Kind = 'fan' | 'servo';

function resolve(ctx: ToolContext, kind: Kind, a: { name?: string; device_id?: string; key?: string }): { dev: string; p: PwmDef } | { error: string } {
  const visible = (id: string): BoardDef | undefined => {
    const b = ctx.scope.board(id);
    return b && ctx.scope.exposure.device(id, b) ? b : undefined;
  };
  if (a.device_id !== undefined) {
    const b = visible(a.device_id);
    if (!b) return { error: `no device "${a.device_id}" is provisioned and exposed here` };
    const key = a.key ?? a.name;
    if (key === undefined) return { error: `say which ${kind}: ${kind} (its id or label) with device_id, or name alone` };
    const p = pwmByName(b, kind, key);
    const all = (b.pwm ?? []).filter((x) => x.kind === kind);
    if (!p) return { error: `device ${a.device_id} has no ${kind} "${key}"; ${kind}s: ${all.map((x) => x.id + (x.label ? ` ("${x.label}")` : '')).join(', ') || 'none'}` };
    return { dev: a.device_id, p };
  }
  if (a.name === undefined) return { error: `say which ${kind}: name alone ("${kind === 'fan' ? 'exhaust fan' : 'vent flap'}"), or device_id with ${kind}` };
  const hits: { dev: string; p: PwmDef }[] = [];
  for (const id of ctx.scope.ids()) {
    const b = visible(id);
    const p = b && pwmByName(b, kind, a.name);
    if (p) hits.push({ dev: id, p });
  }
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0) return { error: `no ${kind} is called "${a.name}" on this host` };
  return { error: `"${a.name}" names a ${kind} on several devices (${hits.map((h) => h.dev).join(', ')}); add device_id` };
}

function result(line: string, c: CommandStatus): CallToolResult {
  return { content: [{ type: 'text', text: line + '\n\n' + JSON.stringify(c, null, 2) }], structuredContent: c as unknown as Record<string, unknown> };
}

const n = (x: number): string => Math.round(x).toLocaleString('en-US');

/** What the tachometer measured, in words, or the general sentence when the fan.set did not run to a measurement. */
export function fanSentence(dev: string, f: FanDef, duty: number, c: CommandStatus): string {
  const who = `fan ${f.label ?? f.id} (${f.id} on ${dev})`;
  const st = c.device_state?.fans?.find((x) => x.id === f.id);
  const t = f.tach;
  if (c.state === 'unverified') return `${who} was set to ${duty} %: executed, but NOT verified: it has no tachometer, so nothing measured its speed. Tell the person it is unconfirmed.`;
  if (!t || !st || st.rpm === null || (c.state !== 'completed' && !(c.state === 'failed' && c.error_code === 'NO_FEEDBACK'))) return summarizeCommand(c);
  const rpm = n(st.rpm);
  if (duty === 0) {
    if (c.state === 'completed') return `${who} stopped (its tachometer measured ${rpm} rpm at 0 %): DONE and verified by its tachometer.`;
    return `${who} did NOT stop: its tachometer still measured ${rpm} rpm after ${t.spin_up_ms} ms at 0 %: FAILED (NO_FEEDBACK). Read the device state before trying again.`;
  }
  const want = `expected ${n(PWM.fanRpm(t, duty))} ±${t.tolerance_pct} %`;
  if (c.state === 'completed') return `${who} runs at ${rpm} rpm (${want}) at ${duty} %: DONE and verified by its tachometer.`;
  const why = st.rpm === 0 ? 'no tach pulses: stalled, unplugged or without power' : 'outside the tolerance of its curve';
  return `${who} was set to ${duty} % but its tachometer measured ${rpm} rpm (${want}): FAILED (NO_FEEDBACK), ${why}. Read the device state before trying again.`;
}

/** A servo move is never verified: the sentence says where it was sent and how long the move needs. */
export function servoSentence(dev: string, s: ServoDef, angle: number, c: CommandStatus): string {
  const who = `servo ${s.label ?? s.id} (${s.id} on ${dev})`;
  const st = c.device_state?.servos?.find((x) => x.id === s.id);
  if (c.state !== 'unverified' || !st) return summarizeCommand(c);
  return `${who} was sent to ${angle}°: executed, but NOT verified: a hobby servo reports nothing, so nobody knows where it is. The move needs about ${n(st.move_ms)} ms at ${s.deg_per_s} °/s. Tell the person it is unconfirmed.`;
}

export function registerPwmTools(ctx: ToolContext): void {
  const { server, act, ready, hidden, hiddenError } = ctx;
  server.registerTool(
    'fan_set',
    {
      title: 'Set a fan',
      description: 'Sets a fan\'s duty 0..100 %. completed = its tachometer measured the expected speed after spin-up (0 %: stopped); failed NO_FEEDBACK = it did not (rpm in the result); unverified = no tachometer.',
      inputSchema: FanSetInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async (a, extra) => {
      await ready();
      const t = resolve(ctx, 'fan', { name: a.name, device_id: a.device_id, key: a.fan });
      if ('error' in t) return toolError('INVALID_ARGS', t.error);
      if (hidden(t.dev)) return hiddenError(t.dev);
      const c = await act({ device_id: t.dev, action: FAN_SET.action, args: { id: t.p.id, duty: a.duty }, request_id: a.request_id }, a.wait_ms ?? WAIT_MS, extra);
      return result(fanSentence(t.dev, t.p as FanDef, a.duty, c), c);
    },
  );
  server.registerTool(
    'servo_set',
    {
      title: 'Turn a servo',
      description: 'Turns a hobby servo to an angle. Never completed: a hobby servo reports nothing, so the outcome is unverified, with the time the move needs.',
      inputSchema: ServoSetInput,
      outputSchema: CommandStatusSchema,
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async (a, extra) => {
      await ready();
      const t = resolve(ctx, 'servo', { name: a.name, device_id: a.device_id, key: a.servo });
      if ('error' in t) return toolError('INVALID_ARGS', t.error);
      if (hidden(t.dev)) return hiddenError(t.dev);
      const c = await act({ device_id: t.dev, action: SERVO_SET.action, args: { id: t.p.id, deg: a.angle }, request_id: a.request_id }, a.wait_ms ?? WAIT_MS, extra);
      return result(servoSentence(t.dev, t.p as ServoDef, a.angle, c), c);
    },
  );
}
