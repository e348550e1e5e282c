// The device gateway over an MQTT broker: the host subscribes to every device's up and status
// topics and turns each device session into a Link for the host core, as the WebSocket gateway does
// with each connection. A device's `hello` on its up topic opens a Link (closing the one before);
// its will (`offline <tag>` on its status topic, published by the broker when the device's connection
// ends) closes the Link of that connection; the host closing a Link publishes an empty message on the
// device's down topic, which the firmware takes for a closed link. Frames ride as payloads byte for
// byte, MAC and counter included: the broker carries them and can drop them, but cannot forge one.
import net from 'node:net';
import { MqttClient, type IClientOptions } from 'mqtt';
import type { Logger } from 'pino';
import type { Link } from '@proofrig/protocol';
import { MQ_OFFLINE, MQ_ONLINE, topicDown, topicOf } from '@proofrig/protocol/mqttcodec';

/** How a hello frame starts: the firmware serialises `t` first (JSON.stringify keeps insertion order). */
const HELLO_HEAD = '{"t":"hello"';
/** The first connection to the broker must succeed within this, or serve fails with the broker's reason. */
const CONNECT_MS = 10000;

/** One device session through the broker. */
export class MqttLink implements Link {
  onmessage?: (text: string) => void;
  onclose?: (reason: string) => void;
  closed = false;
  readonly remote: string;

  constructor(
    private readonly client: MqttClient,
    readonly dev: string,
    /** The tag of the device connection this session runs on (its `online <tag>`), if seen. */
    readonly tag: string | undefined,
    private readonly forget: (l: MqttLink) => void,
  ) {
    this.remote = `mqtt ${dev}`;
  }

  send(text: string): void {
    if (this.closed) return;
    this.client.publish(topicDown(this.dev), text, { qos: 1 });
  }

  /**
   * Several frames in one PUBLISH, separated by '\n' (a byte no serialised frame contains: JSON escapes
   * control characters); the firmware splits them. One packet and one read on the device instead of one per frame.
   */
  sendBatch(texts: string[]): void {
    if (this.closed) return;
    this.client.publish(topicDown(this.dev), texts.join('\n'), { qos: 1 });
  }

  /** Host side: tell the device (an empty message on its down topic), then end the Link. */
  close(reason = 'closed'): void {
    if (this.closed) return;
    this.client.publish(topicDown(this.dev), '', { qos: 1 });
    this.gone(reason);
  }

  gone(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.forget(this);
    setImmediate(() => this.onclose?.(reason));
  }
}

export interface MqttGatewayOptions {
  /** mqtt://[user:pass@]HOST[:PORT] */
  url: string;
  username?: string;
  password?: string;
  log?: Logger;
}

export class MqttGateway {
  private readonly links = new Map<string, MqttLink>();
  /** The tag of each device's latest `online` status. */
  private readonly online = new Map<string, string>();

  private constructor(
    private readonly client: MqttClient,
    private readonly accept: (link: Link) => void,
    private readonly log?: Logger,
  ) {
    client.on('message', (topic, payload) => this.message(topic, payload));
    // Frames in flight are lost with the host's connection: every session ends, and devices say hello again.
    client.on('close', () => this.closeAll('the host lost its connection to the broker'));
    client.on('error', (err) => log?.warn({ evt: 'broker_error', err: err.message }, 'MQTT broker connection error'));
  }

  /** Connect to the broker and subscribe; rejects with the broker's reason when the first connection fails. */
  static async start(o: MqttGatewayOptions, accept: (link: Link) => void): Promise<MqttGateway> {
    const u = new URL(o.url);
    if (u.protocol !== 'mqtt:') throw new Error(`--broker must be mqtt://[USER:PASS@]HOST[:PORT], got "${o.url}"`);
    const host = u.hostname;
    const port = u.port ? Number(u.port) : 1883;
    const opts: IClientOptions = {
      protocolVersion: 4,
      clean: true,
      keepalive: 20,
      reconnectPeriod: 1000,
      connectTimeout: CONNECT_MS,
      clientId: `proofrig-host-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
      username: o.username ?? (u.username ? decodeURIComponent(u.username) : undefined),
      password: o.password ?? (u.password ? decodeURIComponent(u.password) : undefined),
    };
    // mqtt.js opens its TCP socket with net.createConnection and never sets TCP_NODELAY (checked in
    // mqtt 5.16, lib/connect/tcp.js; no option for it): a stream builder of our own sets it, so a
    // frame is not held by Nagle's algorithm behind an unacknowledged one (47 ms per round trip).
    const client = new MqttClient(() => {
      const s = net.createConnection({ host, port });
      s.setNoDelay(true);
      return s;
    }, opts);
    const g = new MqttGateway(client, accept, o.log);
    try {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no answer from the MQTT broker at ${host}:${port} within ${CONNECT_MS} ms`)), CONNECT_MS);
        client.once('connect', () => {
          clearTimeout(t);
          resolve();
        });
        client.once('error', (e) => {
          clearTimeout(t);
          reject(new Error(`MQTT broker at ${host}:${port} refused the host: ${e.message}`));
        });
      });
      await client.subscribeAsync({ 'proofrig/+/up': { qos: 1 }, 'proofrig/+/status': { qos: 1 } }).then((granted) => {
        const no = granted.filter((x) => x.qos === 128);
        if (no.length) throw new Error(`MQTT broker refused the host's subscription to ${no.map((x) => x.topic).join(', ')} (check its ACL)`);
      });
    } catch (e) {
      await client.endAsync(true).catch(() => {});
      throw e;
    }
    return g;
  }

  private message(topic: string, payload: Buffer): void {
    const t = topicOf(topic);
    if (!t) return;
    const text = payload.toString('utf8');
    if (t.kind === 'status') {
      const sp = text.indexOf(' ');
      const word = sp < 0 ? text : text.slice(0, sp);
      const tag = sp < 0 ? '' : text.slice(sp + 1);
      if (word === MQ_ONLINE) this.online.set(t.dev, tag);
      else if (word === MQ_OFFLINE) {
        const l = this.links.get(t.dev);
        // A will of an older connection (the broker may publish it late) leaves the current session alone.
        if (l && (l.tag === undefined || l.tag === tag)) l.gone(`device offline: its last will on ${topic}`);
      }
      return;
    }
    if (t.kind !== 'up') return;
    let l = this.links.get(t.dev);
    if (text.startsWith(HELLO_HEAD)) {
      l?.gone('the device said hello again (a new session)');
      l = new MqttLink(this.client, t.dev, this.online.get(t.dev), (x) => {
        if (this.links.get(x.dev) === x) this.links.delete(x.dev);
      });
      this.links.set(t.dev, l);
      try {
        this.accept(l);
      } catch (e) {
        this.log?.error({ evt: 'link_failed', remote: l.remote, err: (e as Error)?.stack ?? String(e) }, 'accepting a device session failed');
        l.close('INTERNAL');
        return;
      }
    }
    if (!l || l.closed) {
      this.log?.debug({ evt: 'mqtt_frame_dropped', device_id: t.dev }, 'frame from a device with no open session (before its hello): dropped');
      return;
    }
    try {
      l.onmessage?.(text);
    } catch (e) {
      // Whatever a session provokes stays with that session: log it, drop the link, keep serving.
      this.log?.error({ evt: 'link_failed', remote: l.remote, err: (e as Error)?.stack ?? String(e) }, 'device session handler failed');
      l.close('INTERNAL');
    }
  }

  private closeAll(reason: string): void {
    for (const l of [...this.links.values()]) l.gone(reason);
  }

  async close(): Promise<void> {
    this.closeAll('host shutting down');
    await this.client.endAsync(true).catch(() => {});
  }
}
