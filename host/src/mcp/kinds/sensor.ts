// The sensor kind's MCP tool: read_sensor. A reading from the device is a sensor.read command (the
// same journal, dedupe and lifecycle as every action); its value comes from the state snapshot the
// result carries, with the device time of the measurement turned into host time. `fresh_after`
// holds the reading back until a given command ended (plus delay_ms), so "switch the supply on,
// wait for power-up, then read" cannot answer with a reading from before.
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ID_CHARS, ID_RULE, MAX_ID_LENGTH, MAX_LABEL_LENGTH, sensorByName, type BoardDef, type SensorDef } from '@proofrig/protocol';
import { SENSOR_READ } from '@proofrig/protocol/kinds';
import type { CommandStatus } from '../../core/command-view.js';
import { toolError, type ToolContext } from './context.js';
import { cachedReading, hostTime, SensorReadingSchema, type Reading } from '../sensor-reading.js';

// Waits, all inside the SDK clients' 60 s request timeout: for the fresh_after command, the delay
// after it, and the reading itself.
const AFTER_WAIT_MS = 30000;
const MAX_DELAY_MS = 10000;
const READ_WAIT_MS = 15000;

export const ReadSensorInput = z.strictObject({
  name: z.string().min(1).max(MAX_LABEL_LENGTH).optional().describe('the sensor\'s label or id alone ("air temperature"), when it is unique on this host'),
  device_id: z.string().min(1).max(64).optional(),
  sensor: z.string().min(1).max(MAX_LABEL_LENGTH).optional().describe('the sensor of device_id: its id ("air_temp") or label'),
  source: z.enum(['device', 'cache']).optional().describe('device (default) = take a reading now; cache = the last reading the device reported, SENSOR_STALE when older than the sensor\'s max_age_ms'),
  fresh_after: z.string().min(1).max(64).optional().describe('a command_id: the reading is taken only after that command ended completed or unverified (plus delay_ms), e.g. the relay that powers the sensor'),
  delay_ms: z.number().int().min(0).max(MAX_DELAY_MS).optional().describe('with fresh_after: wait this long after that command ended (a power-up time) before reading'),
  request_id: z.string().min(1).max(MAX_ID_LENGTH).regex(ID_CHARS, 'request_id ' + ID_RULE).optional().describe('optional idempotency key: the same request_id returns the same reading, never a second one'),
});

function result(sentence: string, r: Reading): CallToolResult {
  return { content: [{ type: 'text', text: sentence + '\n\n' + JSON.stringify(r, null, 2) }], structuredContent: r };
}

function describe(dev: string, s: SensorDef): string {
  return `${s.label ?? s.id} (${s.id} on ${dev})`;
}

function sentence(dev: string, s: SensorDef, r: Reading): string {
  const what = describe(dev, s);
  const when = r.age_ms !== null ? ` measured ${(r.age_ms / 1000).toFixed(1)} s ago` : '';
  if (r.status === 'ok') return `${what} reads ${r.value} ${s.unit}${when} (${r.source === 'device' ? 'read from the device now' : 'cached reading'}).`;
  if (r.status === 'BUS_NAK') return `${what} was NOT read: the sensor did not answer on its bus (unplugged, unpowered or still powering up); there is no value.`;
  if (r.status === 'SENSOR_CRC') return `${what} was NOT read: its data failed the checksum, so the reading was discarded; there is no value.`;
  if (r.status === 'OUT_OF_RANGE') return `${what} was NOT read: the sensor gave a value outside its plausible range (a broken sensor or wire); there is no value.`;
  if (r.status === 'SENSOR_STALE') return `${what}: the last reading is too old to count (${when.trim()}, more than ${s.max_age_ms / 1000} s); read it from the device.`;
  if (r.status === 'none') return `${what} has not been read since the device booted; read it from the device.`;
  return `${what} was NOT read (${r.status})${r.detail ? ': ' + r.detail : ''}.`;
}

function resolve(ctx: ToolContext, a: { name?: string; device_id?: string; sensor?: string }): { dev: string; s: SensorDef } | { error: string } {
  const visible = (id: string): BoardDef | undefined => {
    const b = ctx.scope.board(id);
    return b && ctx.scope.exposure.device(id, b) ? b : undefined;
  };
  if (a.device_id !== undefined) {
    const b = visible(a.device_id);
    if (!b) return { error: `no device "${a.device_id}" is provisioned and exposed here` };
    const key = a.sensor ?? a.name;
    if (key === undefined) return { error: 'say which sensor: sensor (its id or label) with device_id, or name alone' };
    const s = sensorByName(b, key);
    if (!s) return { error: `device ${a.device_id} has no sensor "${key}"; sensors: ${(b.sensors ?? []).map((x) => x.id + (x.label ? ` ("${x.label}")` : '')).join(', ') || 'none'}` };
    return { dev: a.device_id, s };
  }
  if (a.name === undefined) return { error: 'say which sensor: name alone ("air temperature"), or device_id with sensor' };
  const hits: { dev: string; s: SensorDef }[] = [];
  for (const id of ctx.scope.ids()) {
    const b = visible(id);
    const s = b && sensorByName(b, a.name);
    if (s) hits.push({ dev: id, s });
  }
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0) return { error: `no sensor is called "${a.name}" on this host` };
  return { error: `"${a.name}" names a sensor on several devices (${hits.map((h) => h.dev).join(', ')}); add device_id` };
}

function fromCommand(dev: string, s: SensorDef, c: CommandStatus): Reading {
  const base = { device_id: dev, sensor: s.id, label: s.label ?? null, unit: s.unit, source: 'device' as const, command_id: c.command_id, detail: c.detail };
  const r = c.device_state?.sensors?.find((x) => x.id === s.id);
  if (!c.terminal) return { ...base, value: null, status: 'not_read', measured_at: null, age_ms: null, detail: `the reading has not finished yet (${c.state}); get_action_status with command_id ${c.command_id} gives its outcome` };
  if (c.state !== 'completed' && c.state !== 'failed') return { ...base, value: null, status: c.error_code ?? c.state, measured_at: null, age_ms: null };
  const at = r && c.device_state ? hostTime(c.device_state, c.device_state_observed_at, r) : null;
  const ok = c.state === 'completed' && !!r && r.st === 'ok';
  return {
    ...base,
    value: ok ? r!.v : null,
    status: ok ? 'ok' : c.error_code ?? 'not_read',
    measured_at: at === null ? null : new Date(at).toISOString(),
    age_ms: at === null ? null : Math.max(0, Date.now() - at),
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((res) => {
    if (ms <= 0) return res();
    const t = setTimeout(res, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), res()), { once: true });
  });
}

export function registerSensorTools(ctx: ToolContext): void {
  const { server, core, act, ready, hidden, hiddenError } = ctx;
  server.registerTool(
    'read_sensor',
    {
      title: 'Read a sensor',
      description:
        'Reads a sensor now: a value only with status ok; BUS_NAK (no answer), SENSOR_CRC, OUT_OF_RANGE carry none. fresh_after=command_id reads only after that command ended.',
      inputSchema: ReadSensorInput,
      outputSchema: SensorReadingSchema,
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async (a, extra) => {
      await ready();
      const t = resolve(ctx, a);
      if ('error' in t) return toolError('INVALID_ARGS', t.error);
      const { dev, s } = t;
      if (hidden(dev)) return hiddenError(dev);
      const notRead = (detail: string): CallToolResult => {
        const r: Reading = { device_id: dev, sensor: s.id, label: s.label ?? null, unit: s.unit, value: null, status: 'not_read', measured_at: null, age_ms: null, source: 'device', command_id: null, detail };
        return result(`${describe(dev, s)} was NOT read: ${detail}.`, r);
      };
      if (a.source === 'cache') {
        if (a.fresh_after !== undefined) return toolError('INVALID_ARGS', 'fresh_after needs a reading from the device; it cannot be combined with source "cache"');
        const r = cachedReading(core, dev, s);
        return result(sentence(dev, s, r), r);
      }
      let notBefore = 0;
      if (a.fresh_after !== undefined) {
        if (!core.status(a.fresh_after) || hidden(core.status(a.fresh_after)!.device_id)) return toolError('UNKNOWN_COMMAND', `no command "${a.fresh_after}" in the journal`);
        const p = (await core.waitTerminal(a.fresh_after, AFTER_WAIT_MS, extra.signal))!;
        if (!p.terminal) return notRead(`command ${p.command_id} (${p.action}) has not ended yet (${p.state}), so a reading now could predate it`);
        if (p.state !== 'completed' && p.state !== 'unverified')
          return notRead(`command ${p.command_id} (${p.action}) ended ${p.state}${p.error_code ? ' ' + p.error_code : ''}, so what it should have changed did not happen`);
        notBefore = Date.parse(p.terminal_at!) + (a.delay_ms ?? 0);
        await sleep(notBefore - Date.now(), extra.signal);
      } else if (a.delay_ms !== undefined) return toolError('INVALID_ARGS', 'delay_ms counts from the end of the fresh_after command; give fresh_after too');
      // A repeated request_id replays its command: that reading may be older than the command it must
      // follow. Judged by whether the request_id was in the journal already, not by comparing its
      // submission time with notBefore (a timer may wake a millisecond before Date.now() says it is due).
      const prior = notBefore && a.request_id !== undefined ? core.journal.byRequest(dev, a.request_id) : undefined;
      const c = await act({ device_id: dev, action: SENSOR_READ.action, args: { id: s.id }, request_id: a.request_id }, READ_WAIT_MS, extra);
      if (prior && Date.parse(c.submitted_at) < notBefore)
        return notRead(`request_id ${c.request_id} replays command ${c.command_id}, submitted before ${new Date(notBefore).toISOString()}: its reading could predate command ${a.fresh_after}; use a new request_id`);
      const r = fromCommand(dev, s, c);
      return result(sentence(dev, s, r), r);
    },
  );
}
