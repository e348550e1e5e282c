// One MCP resource per sensor, proofrig://devices/{device_id}/sensors/{sensor_id}: its last reading
// from the host's state cache (sensor-reading.ts, the same as read_sensor source "cache"). A
// subscriber hears notifications/resources/updated when a new reading of that sensor arrives in any
// state snapshot the device sends (a read_sensor, a relay result, a status refresh), and once more
// when that reading turns SENSOR_STALE (a timer per subscribed sensor, at its max_age_ms).
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { findSensor, type SensorDef } from '@proofrig/protocol';
import type { TimerHandle } from '@proofrig/protocol/clock';
import type { HostCore } from '../core/host.js';
import { cachedReading, staleAt, stateOf } from './sensor-reading.js';

export const sensorUri = (dev: string, id: string) => `proofrig://devices/${dev}/sensors/${id}`;
const SENSOR_URI = /^proofrig:\/\/devices\/([^/]+)\/sensors\/([^/]+)$/;

const json = (uri: string, data: unknown) => ({ contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data, null, 2) }] });

/** What this session watches of one sensor: the reading last told about, and the timer that tells when it goes stale. */
interface Watch {
  dev: string;
  sensor: SensorDef;
  /** The device's boot and the reading's uptime and status: a new reading changes it. */
  key: string;
  timer: TimerHandle | undefined;
}

export class SensorResources {
  private readonly watches = new Map<string, Watch>();

  constructor(
    private readonly core: HostCore,
    /** The device ids this session may see. */
    private readonly visible: () => string[],
    private readonly updated: (uri: string) => void,
  ) {}

  /** Is this a sensor resource's URI (known or not)? */
  static matches(uri: string): boolean {
    return SENSOR_URI.test(uri);
  }

  /** The device and sensor a URI names, or an McpError naming what exists. */
  resolve(uri: string): { dev: string; sensor: SensorDef } {
    const m = SENSOR_URI.exec(uri);
    const dev = m ? decodeURIComponent(m[1]!) : '';
    const id = m ? decodeURIComponent(m[2]!) : '';
    const board = this.visible().includes(dev) ? this.core.devices.board(dev) : undefined;
    if (!board) throw new McpError(ErrorCode.InvalidParams, `no device "${dev}" is provisioned; known devices: ${this.visible().join(', ') || 'none'}`);
    const sensor = findSensor(board, id);
    if (!sensor) throw new McpError(ErrorCode.InvalidParams, `device ${dev} has no sensor "${id}"; sensors: ${(board.sensors ?? []).map((s) => s.id).join(', ') || 'none'}`);
    return { dev, sensor };
  }

  register(server: McpServer): void {
    const all = () => this.visible().flatMap((dev) => (this.core.devices.board(dev)?.sensors ?? []).map((s) => ({ dev, s })));
    server.registerResource(
      'sensor',
      new ResourceTemplate('proofrig://devices/{device_id}/sensors/{sensor_id}', {
        list: () => ({
          resources: all().map(({ dev, s }) => ({ uri: sensorUri(dev, s.id), name: `${s.label ?? s.id} on ${dev}`, description: `${s.kind} sensor in ${s.unit}, stale after ${s.max_age_ms} ms`, mimeType: 'application/json' })),
        }),
        complete: {
          device_id: (v) => this.visible().filter((id) => id.startsWith(v) && (this.core.devices.board(id)?.sensors ?? []).length > 0),
          sensor_id: (v, ctx) => {
            const dev = ctx?.arguments?.device_id;
            return all().filter((x) => (dev === undefined || x.dev === dev) && x.s.id.startsWith(v)).map((x) => x.s.id);
          },
        },
      }),
      {
        title: 'Sensor reading',
        description:
          'The last reading of one sensor the device reported: value (only with status ok), unit, status, measured_at, age_ms, source "cache"; SENSOR_STALE with no value once older than its max_age_ms. Subscribe to hear of each new reading and of it going stale.',
        mimeType: 'application/json',
      },
      (uri) => {
        const { dev, sensor } = this.resolve(uri.href);
        return json(uri.href, cachedReading(this.core, dev, sensor));
      },
    );
  }

  /** Subscribe this session to a sensor URI; throws (and changes nothing) for an unknown one. */
  subscribe(uri: string): void {
    const { dev, sensor } = this.resolve(uri);
    if (this.watches.has(uri)) return;
    const w: Watch = { dev, sensor, key: this.keyOf(dev, sensor), timer: undefined };
    this.watches.set(uri, w);
    this.arm(uri, w);
  }

  unsubscribe(uri: string): void {
    const w = this.watches.get(uri);
    if (!w) return;
    this.core.clock.clearTimeout(w.timer);
    this.watches.delete(uri);
  }

  get size(): number {
    return this.watches.size;
  }

  /** The device reported a state snapshot: tell the subscribers of each sensor whose reading is new. */
  onState(dev: string): void {
    for (const [uri, w] of this.watches) {
      if (w.dev !== dev) continue;
      const key = this.keyOf(dev, w.sensor);
      if (key === w.key) continue;
      w.key = key;
      this.arm(uri, w);
      this.updated(uri);
    }
  }

  close(): void {
    for (const uri of [...this.watches.keys()]) this.unsubscribe(uri);
  }

  private keyOf(dev: string, s: SensorDef): string {
    // Every snapshot the device sends comes here (heartbeats too): the in-memory cache only, no journal read.
    const boot = this.core.devices.session(dev)?.boot ?? '';
    const r = stateOf(this.core.devices.state(dev), s.id);
    return r ? `${boot}/${r.at}/${r.st}/${r.v}` : `${boot}/none`;
  }

  /**
   * A timer at the moment the reading turns stale, from one reading of the clock. A timer can wake
   * before the clock says it is due (Node arms it from the event loop's cached time, which lags the
   * wall clock on a busy host): it then sets itself again for what is left, from the same `now` it
   * found the reading fresh at. Reading the clock a second time to set that timer once let the
   * moment pass in between: the reading was stale by then, no timer was set and the subscriber was
   * never told (test/mcp-sensor-stale-timer.test.ts).
   */
  private arm(uri: string, w: Watch, now = this.core.clock.now()): void {
    this.core.clock.clearTimeout(w.timer);
    w.timer = undefined;
    const at = staleAt(cachedReading(this.core, w.dev, w.sensor, now), w.sensor);
    if (at === null) return;
    w.timer = this.core.clock.setTimeout(() => this.wake(uri, w), at - now);
  }

  private wake(uri: string, w: Watch): void {
    w.timer = undefined;
    if (this.watches.get(uri) !== w) return;
    const now = this.core.clock.now();
    const r = cachedReading(this.core, w.dev, w.sensor, now);
    if (r.status !== 'SENSOR_STALE') return this.arm(uri, w, now);
    this.core.log.debug({ evt: 'sensor_stale', uri, measured_at: r.measured_at, age_ms: r.age_ms }, 'a subscribed sensor reading went stale');
    this.updated(uri);
  }
}
