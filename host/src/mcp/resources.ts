// MCP resources: each device's state, each sensor's last reading (sensor-resources.ts), the board
// definitions and the command journal, with subscriptions (notifications/resources/updated when the
// device reports, a sensor has a new reading or goes stale, or a command changes).
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { BoardDef } from '@proofrig/protocol';
import type { DeviceEvent, HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/command-view.js';
import { namesOf, outputNames } from './names.js';
import { Exposure } from './exposure.js';
import { summary } from './commands-list.js';
import { SensorResources } from './sensor-resources.js';
import { cachedReading } from './sensor-reading.js';

export const RECENT_COMMANDS_URI = 'proofrig://commands/recent';
export const deviceUri = (id: string) => `proofrig://devices/${id}`;
export const boardUri = (id: string) => `proofrig://boards/${id}`;
export const commandUri = (id: string) => `proofrig://commands/${id}`;

const RECENT_LIMIT = 50;

/** list_devices rows: the registry view plus booting and the board's named outputs. */
export function deviceViews(core: HostCore, only?: string, exposure: Exposure = Exposure.all()) {
  const ids = only === undefined ? core.devices.ids() : [only];
  return ids.flatMap((id) => {
    const v = core.devices.view(id);
    const board = core.devices.board(id);
    if (!v || !board || !exposure.device(id, board)) return [];
    const outputs = outputNames(board, { id, exposure });
    // What a person calls things comes first: the outputs' names and the device's area.
    // Each sensor with its last reading as read_sensor source "cache" gives it (stale: no value).
    const sensors = (board.sensors ?? []).map((s) => {
      const r = cachedReading(core, id, s);
      return { id: s.id, label: s.label ?? null, unit: s.unit, kind: s.kind, max_age_ms: s.max_age_ms, value: r.value, status: r.status, measured_at: r.measured_at, age_ms: r.age_ms };
    });
    const pwm = (board.pwm ?? []).map((p) => ({ id: p.id, label: p.label ?? null, kind: p.kind, feedback: p.kind === 'fan' && p.tach ? ('tachometer' as const) : ('none' as const) }));
    return [{ names: namesOf(outputs), area: board.area ?? null, ...v, booting: core.booting(id), outputs, sensors, pwm }];
  });
}

/** The device ids MCP clients may see. */
export function visibleIds(core: HostCore, exposure: Exposure): string[] {
  return core.devices.ids().filter((id) => exposure.device(id, core.devices.board(id)));
}

function boards(core: HostCore): Map<string, BoardDef> {
  const m = new Map<string, BoardDef>();
  for (const d of core.journal.devices()) if (!m.has(d.board.id)) m.set(d.board.id, d.board);
  return m;
}

const json = (uri: string, data: unknown) => ({ contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data, null, 2) }] });

function notFound(what: string): never {
  throw new McpError(ErrorCode.InvalidParams, what);
}

export function registerResources(server: McpServer, core: HostCore, cleanups: (() => void)[], exposure: Exposure = Exposure.all()): void {
  const ids = () => visibleIds(core, exposure);
  const completeDevice = (v: string) => ids().filter((id) => id.startsWith(v));
  const recent = (limit: number) => {
    if (!exposure.limited) return core.journal.recent({ limit });
    const visible = new Set(ids());
    return core.journal.recent({ limit: limit * 4 }).filter((c) => visible.has(c.device_id)).slice(0, limit);
  };

  server.registerResource(
    'device',
    new ResourceTemplate('proofrig://devices/{device_id}', {
      list: () => ({
        resources: ids().map((id) => ({ uri: deviceUri(id), name: `device ${id}`, mimeType: 'application/json' })),
      }),
      complete: { device_id: completeDevice },
    }),
    {
      title: 'Device state',
      description: 'One device: online/booting, boot id, last seen, the cached state with its age, and its named channels and axes. Subscribe to hear when the device reports.',
      mimeType: 'application/json',
    },
    (uri, { device_id }) => {
      const v = deviceViews(core, String(device_id), exposure)[0];
      if (!v) notFound(`no device "${String(device_id)}" is provisioned; known devices: ${ids().join(', ') || 'none'}`);
      return json(uri.href, v);
    },
  );

  server.registerResource(
    'board',
    new ResourceTemplate('proofrig://boards/{board_id}', {
      list: () => ({
        resources: [...boards(core).values()].map((b) => ({ uri: boardUri(b.id), name: `board ${b.id}`, description: b.name, mimeType: 'application/json' })),
      }),
      complete: { board_id: (v) => [...boards(core).keys()].filter((id) => id.startsWith(v)) },
    }),
    { title: 'Board definition', description: 'The board definition a provisioned device runs: pins, relays with feedback, axes, travel, timings, labels.', mimeType: 'application/json' },
    (uri, { board_id }) => {
      const b = boards(core).get(String(board_id));
      if (!b) notFound(`no provisioned device uses a board "${String(board_id)}"; boards: ${[...boards(core).keys()].join(', ') || 'none'}`);
      return json(uri.href, b);
    },
  );

  server.registerResource(
    'recent-commands',
    RECENT_COMMANDS_URI,
    { title: 'Recent commands', description: `The newest ${RECENT_LIMIT} commands of the journal (all devices), newest first. Subscribe to hear of every change.`, mimeType: 'application/json' },
    (uri) => json(uri.href, { commands: recent(RECENT_LIMIT).map((c) => summary(core, c)) }),
  );

  server.registerResource(
    'command',
    new ResourceTemplate('proofrig://commands/{command_id}', {
      list: undefined,
      complete: { command_id: (v) => recent(20).map((c) => c.command_id).filter((id) => id.startsWith(v)) },
    }),
    { title: 'Command with its history', description: 'One command: its full status and every lifecycle event with its time and note, from the journal.', mimeType: 'application/json' },
    (uri, { command_id }) => {
      const id = String(command_id);
      if (id === 'recent') return json(uri.href, { commands: recent(RECENT_LIMIT).map((c) => summary(core, c)) });
      const s = core.status(id);
      if (!s || !ids().includes(s.device_id)) notFound(`no command "${id}" in the journal`);
      const events = core.commands.history(id).map((e) => ({ at: new Date(e.at).toISOString(), state: e.state, note: e.note }));
      return json(uri.href, { command: s, events });
    },
  );

  const sensors = new SensorResources(core, ids, (uri) => updated(uri));
  sensors.register(server);

  // Subscriptions of this session.
  // The core's events are listened to only while this session subscribes to something: every
  // session listening to every command change made each change cost O(sessions).
  const subscribed = new Set<string>();
  let listening = false;
  const listen = (on: boolean) => {
    if (on === listening) return;
    listening = on;
    const m = on ? 'on' : 'off';
    core.events[m]('state', onState);
    core.events[m]('device', onDevice);
    core.commands[m]('change', onCommand);
  };
  server.server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    const uri = req.params.uri;
    if (SensorResources.matches(uri)) sensors.subscribe(uri); // an unknown device or sensor throws here, before anything changes
    else if (!/^proofrig:\/\/(devices|boards|commands)\/[^/]+$/.test(uri)) notFound(`no resource "${uri}" to subscribe to; see resources/list and resources/templates/list`);
    subscribed.add(uri);
    listen(true);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscribed.delete(req.params.uri);
    sensors.unsubscribe(req.params.uri);
    listen(subscribed.size > 0);
    return {};
  });
  const updated = (uri: string) => {
    if (subscribed.has(uri) && server.isConnected())
      void server.server.sendResourceUpdated({ uri }).catch((err: unknown) => core.log.debug({ evt: 'resource_update_unsent', uri, err: String(err) }, 'a resources/updated notification could not be sent'));
  };
  const onState = (dev: string) => {
    updated(deviceUri(dev));
    sensors.onState(dev);
  };
  const onDevice = (e: DeviceEvent) => updated(deviceUri(e.device_id));
  const onCommand = (s: CommandStatus) => {
    updated(RECENT_COMMANDS_URI);
    updated(commandUri(s.command_id));
  };
  cleanups.push(() => {
    listen(false);
    sensors.close();
  });
}
