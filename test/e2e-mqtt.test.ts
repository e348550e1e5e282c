// The device link through a real MQTT broker (Mosquitto), end to end: the real MCP client → host core →
// MQTT gateway → broker → simulated rig running the MQTT build of the firmware (firmware/dist/proofrig-mqtt.js).
// The broker carries the same sealed frames as the WebSocket: it can drop them, but a frame it alters is refused.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import mqtt from 'mqtt';
import type { BoardDef } from '@proofrig/protocol';
import { topicDown, topicStatus } from '@proofrig/protocol/mqttcodec';
import { enginesUnderTest } from './helpers/engines.js';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import { mosquittoOrNotice, startMosquitto, TEST_HOST_PASS, type Broker } from './helpers/mosquitto.js';
import { HOST_USER } from '../host/src/broker/mosquitto-auth.js';

const RUN = mosquittoOrNotice();
const board: BoardDef = JSON.parse(readFileSync(RELAY_BOARD, 'utf8'));
const pinOf = (ch: number) => board.relays.find((r) => r.ch === ch)!.pin;

let e: E2E | undefined;
let broker: Broker | undefined;
let observer: mqtt.MqttClient | undefined;
afterEach(async () => {
  await observer?.endAsync(true);
  observer = undefined;
  await e?.close();
  e = undefined;
  await broker?.stop();
  broker = undefined;
});

async function start(engine: 'vm' | 'espruino', o: { heartbeatMs?: number } = {}): Promise<E2E> {
  broker = await startMosquitto();
  const b = broker;
  return startE2E({
    engine,
    heartbeatMs: o.heartbeatMs,
    broker: `mqtt://${HOST_USER}:${TEST_HOST_PASS}@127.0.0.1:${b.port}`,
    // The simulated rig's secret is made when serve provisions it: the broker learns its password then.
    brokerAuth: (devices) => b.authorize(devices),
  });
}

/** A client of the broker with the host's rights (every proofrig topic): an observer, or a broker that tampers. */
async function hostClient(): Promise<mqtt.MqttClient> {
  return mqtt.connectAsync(broker!.url, { username: HOST_USER, password: TEST_HOST_PASS, protocolVersion: 4, clean: true });
}

describe.runIf(RUN).each(enginesUnderTest())('over MQTT on the %s engine', (engine) => {
  it('relay.set on channel 1 ends completed with evidence aux_contact, as over the WebSocket', async () => {
    e = await start(engine);
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
    expect(final, e.story(final)).toMatchObject({ state: 'completed', terminal: true, accepted: true, executed: true, verified: true, evidence: 'aux_contact', error_code: null });
    expect(final.device_state!.relays.find((r) => r.ch === 1)).toEqual({ ch: 1, cmd: true, pin: true, aux: true });
    expect(e.running.rigs.get(RIG)!.relay(1).contactClosed).toBe(true);
    // It went through the broker: the device logged in there as itself, and the host holds no WebSocket of it.
    expect(broker!.log.some((l) => l.includes(`as proofrig-${RIG}`) && l.includes(`u'${RIG}'`))).toBe(true);
    expect(e.running.core.devices.session(RIG)!.link.remote).toBe(`mqtt ${RIG}`);
  });

  // The vm engine runs lwIP's Nagle on the chip's socket (sim/src/net.ts); the interpreter's sockets are the OS's.
  it.runIf(engine === 'vm')('no frame of the device waits for the broker\'s delayed ACK: it sends no lone PUBACKs (down is QoS 0) and the broker acknowledges each of its PUBLISHes at once', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(RIG)!;
    const released: string[] = [];
    rig.on('nagle', (by: string) => released.push(by));
    observer = await hostClient();
    const down: string[] = [];
    observer.on('message', (_t, p) => down.push(p.toString()));
    await observer.subscribeAsync(topicDown(RIG), { qos: 1 });
    for (let i = 0; i < 6; i++) {
      const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: i % 2 === 0 });
      expect(final, e.story(final)).toMatchObject({ state: 'completed', evidence: 'pin_readback' });
    }
    expect(released.filter((by) => by === 'delack')).toEqual([]);
    // A rack waiting for the next command rode inside it (k), and the device took both.
    expect(down.some((m) => m.startsWith('{"t":"cmd"') && m.includes('"k":"')), down.join('\n---\n')).toBe(true);
  });

  it('a repeated request_id executes once: through MCP the same command, and a duplicate command frame through the broker replays the result without touching the pin', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(RIG)!;
    const before = rig.writes(pinOf(3));
    const a = await e.act('relay_set', { device_id: RIG, channel: 3, on: true, request_id: 'agent-turn-7' });
    const b = await e.act('relay_set', { device_id: RIG, channel: 3, on: true, request_id: 'agent-turn-7' });
    expect(b.first.command_id).toBe(a.first.command_id);
    expect(a.final, e.story(a.final)).toMatchObject({ state: 'completed', evidence: 'pin_readback' });
    expect(rig.writes(pinOf(3))).toBe(before + 1);
    // The device's own request_id ring, with the frame carried by the broker.
    const frames: string[] = [];
    const session = e.running.core.devices.session(RIG)!;
    const orig = session.link.onmessage!;
    session.link.onmessage = (t) => {
      frames.push(t);
      orig(t);
    };
    session.send({ t: 'cmd', rid: a.final.request_id, a: 'relay.set', p: { ch: 3, on: true } });
    await until(() => frames.some((f) => f.includes('"t":"res"')), 5000, 'replayed result');
    expect(JSON.parse(frames.find((f) => f.includes('"t":"res"'))!)).toMatchObject({ rid: a.final.request_id, st: 'completed', ev: 'pin_readback', ver: true });
    expect(rig.writes(pinOf(3))).toBe(before + 1);
  });

  it('a link drop between the result and its confirmation loses nothing: the result arrives after the device reconnects through the broker, once', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(RIG)!;
    let dropped = false;
    rig.on('write', (gpio: number) => {
      if (gpio === pinOf(1) && !dropped) {
        dropped = true;
        rig.linkDrop({ direction: 'both', ms: 1000 });
      }
    });
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
    expect(dropped).toBe(true);
    expect(final, e.story(final)).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
    expect(e.running.core.commands.history(final.command_id).filter((x) => x.state === 'completed')).toHaveLength(1);
    expect(e.logs.filter((l) => l.command_id === final.command_id && l.phase === 'terminal')).toHaveLength(1);
    expect(e.logs.some((l) => l.evt === 'device_offline'), e.story(final)).toBe(true);
    expect(rig.writes(pinOf(1))).toBeGreaterThan(0);
  });

  it('a late will of an earlier connection does not end the current session', async () => {
    e = await start(engine);
    const session = e.running.core.devices.session(RIG)!;
    observer = await hostClient();
    // What the broker publishes when a connection the device has already replaced finally times out.
    await observer.publishAsync(topicStatus(RIG), 'offline 1', { qos: 1, retain: true });
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: true });
    expect(final, e.story(final)).toMatchObject({ state: 'completed', evidence: 'pin_readback' });
    expect(e.running.core.devices.session(RIG)).toBe(session);
    expect(e.logs.some((l) => l.evt === 'device_offline')).toBe(false);
  });

  it('a rig that dies is marked offline by its last will, well before the host could miss its heartbeats', async () => {
    // A 2 s heartbeat: the host's own liveness check would take several seconds; the will comes at once.
    e = await start(engine, { heartbeatMs: 2000 });
    observer = await hostClient();
    const status: string[] = [];
    observer.on('message', (_t, p) => status.push(p.toString()));
    await observer.subscribeAsync(topicStatus(RIG), { qos: 1 });
    await until(() => status.some((s) => s.startsWith('online ')), 5000, 'retained online status');
    const t0 = Date.now();
    e.running.rigs.get(RIG)!.shutdown();
    await until(() => e!.running.core.devices.view(RIG)!.online === false, 3000, 'device offline');
    expect(Date.now() - t0).toBeLessThan(3000);
    const online = status.filter((s) => s.startsWith('online ')).pop()!;
    // The will of the very connection that said online.
    await until(() => status.includes('offline ' + online.slice(7)), 3000, 'last will on the status topic');
    const off = e.logs.find((l) => l.evt === 'device_offline' && l.device_id === RIG);
    expect(String(off?.reason)).toMatch(/last will on proofrig\/relay-rig-4ch\/status/);
  });

  it('a frame altered in the broker is refused by its MAC: the pin does not move and the link stays up', async () => {
    e = await start(engine);
    const rig = e.running.rigs.get(RIG)!;
    observer = await hostClient();
    const down: string[] = [];
    observer.on('message', (_t, p) => down.push(p.toString()));
    await observer.subscribeAsync(topicDown(RIG), { qos: 1 });
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 3, on: true });
    expect(final.state).toBe('completed');
    const cmd = down.find((f) => f.includes('"t":"cmd"') && f.includes(final.request_id))!;
    expect(cmd, down.join('\n')).toMatch(/"m":"[^"]{24}"\}$/);
    // The same sealed frame, now switching channel 4 under a new request id: its MAC no longer fits.
    const forged = cmd.replace(final.request_id, 'tampered-in-the-broker').replace('"ch":3', '"ch":4');
    expect(forged).not.toBe(cmd);
    const writes4 = rig.writes(pinOf(4));
    await observer.publishAsync(topicDown(RIG), forged, { qos: 1 });
    await until(() => e!.logs.some((l) => l.evt === 'frames_refused_by_device' && l.dev === RIG && l.count === 1), 5000, 'the device reports one refused frame');
    expect(e.logs.some((l) => l.evt === 'sim_console' && /refused 1 frame\(s\) from the host; last: bad MAC/.test(String(l.line)))).toBe(true);
    expect(rig.writes(pinOf(4))).toBe(writes4);
    expect(rig.relay(4).energised).toBe(false);
    // Nothing else was disturbed: the next command completes on the same session.
    const next = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
    expect(next.final, e.story(next.final)).toMatchObject({ state: 'completed', evidence: 'aux_contact' });
  });
});
