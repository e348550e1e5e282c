// The firmware's MQTT 3.1.1 codec (@proofrig/protocol/mqttcodec), checked against mqtt-packet (the
// parser and generator mqtt.js and so the host use): what the device sends must parse as the packet
// it means, and whatever TCP chunking the broker's packets arrive in must decode.
import { describe, expect, it } from 'vitest';
import mqttPacket from 'mqtt-packet';
import {
  MQ_BAD, MQ_MORE, MQ_PUBLISH, mqConnect, mqDecode, mqPuback, mqPublish, mqSubscribe, mqttUrl, topicOf, type MqPacket,
} from '@proofrig/protocol/mqttcodec';

const bytes = (s: string) => Buffer.from(s, 'latin1');
/** Parse byte strings with mqtt-packet: every packet, in order. */
function parse(s: string): mqttPacket.Packet[] {
  const p = mqttPacket.parser({ protocolVersion: 4 });
  const out: mqttPacket.Packet[] = [];
  p.on('packet', (x) => out.push(x));
  p.on('error', (e) => {
    throw e;
  });
  p.parse(bytes(s));
  return out;
}

describe('what the device sends parses as the packet it means', () => {
  it('CONNECT: clean session, keepalive, user and password, a retained QoS 1 will', () => {
    const [c] = parse(mqConnect('proofrig-dev-1', 20, 'dev-1', 'pw', 'proofrig/dev-1/status', 'offline 42')) as mqttPacket.IConnectPacket[];
    expect(c).toMatchObject({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 20, clientId: 'proofrig-dev-1', username: 'dev-1' });
    expect(c.password!.toString()).toBe('pw');
    expect(c.will).toMatchObject({ topic: 'proofrig/dev-1/status', qos: 1, retain: true });
    expect(c.will!.payload.toString()).toBe('offline 42');
  });

  it('SUBSCRIBE at the QoS asked and PUBACK carry their packet ids', () => {
    expect(parse(mqSubscribe(7, 'proofrig/d/down', 0))[0]).toMatchObject({ cmd: 'subscribe', messageId: 7, subscriptions: [{ topic: 'proofrig/d/down', qos: 0 }] });
    expect(parse(mqSubscribe(8, 'proofrig/d/down', 1))[0]).toMatchObject({ subscriptions: [{ topic: 'proofrig/d/down', qos: 1 }] });
    expect(parse(mqPuback(0x1234))[0]).toMatchObject({ cmd: 'puback', messageId: 0x1234 });
  });

  it('PUBLISH of frames of every length class (1-, 2- and 3-byte remaining lengths) keeps the payload byte for byte', () => {
    for (const n of [0, 5, 120, 127, 128, 500, 16383, 16384, 40000]) {
      const d = 'é'.repeat(n >> 1) + 'x'.repeat(n & 1); // UTF-8 bytes as the session hands them over
      const body = Buffer.from(d, 'utf8').toString('latin1');
      const [p] = parse(mqPublish('proofrig/d/up', body, 1, 300 + n, false)) as mqttPacket.IPublishPacket[];
      expect(p).toMatchObject({ cmd: 'publish', topic: 'proofrig/d/up', qos: 1, retain: false, messageId: 300 + n });
      expect(Buffer.from(p.payload as Buffer).toString('utf8')).toBe(d);
    }
    expect(parse(mqPublish('proofrig/d/status', 'online 9', 1, 1, true))[0]).toMatchObject({ retain: true, qos: 1 });
  });
});

describe('what the broker sends decodes in any chunking', () => {
  const gen = (p: object) => mqttPacket.generate(p as mqttPacket.Packet, { protocolVersion: 4 }).toString('latin1');

  it('a stream of PUBLISHes (QoS 0 and 1, up to 3-byte lengths) split at every byte boundary decodes to the same packets', () => {
    const pubs = [3, 200, 20000].map((n, i) => ({ cmd: 'publish', topic: 'proofrig/d/down', payload: Buffer.from('{"t":"hb"}'.padEnd(n, ' ')), qos: i % 2, messageId: i % 2 ? 10 + i : undefined, retain: false, dup: false }));
    const wire = pubs.map(gen).join('') + gen({ cmd: 'pingresp' });
    for (const step of [1, 7, 536, wire.length]) {
      let buf = '';
      const got: MqPacket[] = [];
      for (let i = 0; i < wire.length; i += step) {
        buf += wire.substr(i, step);
        for (;;) {
          const P: MqPacket = { t: 0, f: 0, d: '' };
          const n = mqDecode(buf, P);
          if (n === MQ_MORE) break;
          expect(n).toBeGreaterThan(0);
          buf = buf.substr(n);
          got.push(P);
        }
      }
      expect(buf).toBe('');
      expect(got.map((p) => p.t)).toEqual([MQ_PUBLISH, MQ_PUBLISH, MQ_PUBLISH, 13]);
      expect(got.map((p) => (p.f >> 1) & 3)).toEqual([0, 1, 0, 0]);
      expect(got[2].d.length).toBe(2 + 'proofrig/d/down'.length + 20000);
    }
  });

  it('a remaining length of more than 4 bytes is refused, not waited for', () => {
    expect(mqDecode('\x30\xff\xff\xff\xff\x01', { t: 0, f: 0, d: '' })).toBe(MQ_BAD);
  });
});

describe('URLs and topics', () => {
  it('mqtt://HOST[:PORT] only: 1883 by default; no path, no credentials, no other scheme', () => {
    expect(mqttUrl('mqtt://127.0.0.1:1884')).toEqual({ h: '127.0.0.1', p: 1884 });
    expect(mqttUrl('mqtt://broker.lan')).toEqual({ h: 'broker.lan', p: 1883 });
    expect(mqttUrl('mqtt://broker.lan/')).toEqual({ h: 'broker.lan', p: 1883 });
    for (const u of ['ws://h:1/device', 'mqtts://h:8883', 'mqtt://h:0', 'mqtt://h:70000', 'mqtt://h:1883/x', 'mqtt://u:p@h:1883', 'mqtt://', 'mqtt://:1883', 42, undefined])
      expect(mqttUrl(u), String(u)).toBeNull();
  });

  it('topicOf names the device and the kind of proofrig/<dev>/<kind> and nothing else', () => {
    expect(topicOf('proofrig/relay-rig-4ch/up')).toEqual({ dev: 'relay-rig-4ch', kind: 'up' });
    for (const t of ['proofrig/a/b/c', 'other/a/up', 'proofrig//up', 'proofrig/up']) expect(topicOf(t), t).toBeNull();
  });
});
