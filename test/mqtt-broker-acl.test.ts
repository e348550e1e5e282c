// `proofrig broker acl` and the broker enforcing it: a real Mosquitto loaded with the files the command
// wrote from a journal gives each device only its own topics (user name = device id, password derived
// from its secret) and the host all of them.
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import mqtt from 'mqtt';
import { BOARDS_DIR } from '../host/src/paths.js';
import { loadBoard } from '../host/src/cli/board.js';
import { Journal } from '../host/src/core/journal/journal.js';
import { writeBrokerAcl } from '../host/src/cli/broker.js';
import { loadOrCreateBrokerPassword } from '../host/src/broker/host-password.js';
import { brokerPassword, HOST_USER } from '../host/src/broker/mosquitto-auth.js';
import { mosquittoOrNotice, startMosquitto, type Broker } from './helpers/mosquitto.js';
import { until } from './helpers/e2e.js';

const RUN = mosquittoOrNotice();
const SECRET_A = 'aa'.repeat(16);
const SECRET_B = 'bb'.repeat(16);

function journalWith(ids: [string, string][]): string {
  const db = join(mkdtempSync(join(tmpdir(), 'proofrig-acl-')), 'journal.db');
  const j = new Journal(db);
  const board = loadBoard(join(BOARDS_DIR, 'relay-rig-4ch.json'));
  for (const [id, secret] of ids) j.provision(id, secret, board);
  j.close();
  return db;
}

let broker: Broker | undefined;
const clients: mqtt.MqttClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.endAsync(true);
  await broker?.stop();
  broker = undefined;
});

async function login(user: string, pass: string): Promise<mqtt.MqttClient> {
  const c = await mqtt.connectAsync(broker!.url, { username: user, password: pass, protocolVersion: 4, clean: true, reconnectPeriod: 0 });
  clients.push(c);
  return c;
}

describe.runIf(RUN)('the broker ACL written by proofrig broker acl', () => {
  it('lets a device use only its own topics: what it publishes on another device\'s topics goes nowhere and it receives nothing of theirs; the host sees everything', async () => {
    const db = journalWith([
      ['dev-a', SECRET_A],
      ['dev-b', SECRET_B],
    ]);
    const files = writeBrokerAcl(db, join(mkdtempSync(join(tmpdir(), 'proofrig-acl-out-')), 'broker'));
    expect(files.devices).toEqual(['dev-a', 'dev-b']);
    broker = await startMosquitto(files);
    const host = await login(HOST_USER, loadOrCreateBrokerPassword(join(db, '..')));
    const seen: string[] = [];
    host.on('message', (t, p) => seen.push(`${t} ${p.toString()}`));
    await host.subscribeAsync('proofrig/#', { qos: 1 });

    const a = await login('dev-a', brokerPassword('dev-a', SECRET_A));
    // Mosquitto 2.0 grants a subscription to a topic the ACL does not let it read, then delivers nothing on it (below).
    await a.subscribeAsync('proofrig/dev-b/down', { qos: 1 });
    expect((await a.subscribeAsync('proofrig/dev-a/down', { qos: 1 }))[0].qos).toBe(1);
    await a.publishAsync('proofrig/dev-b/up', '{"t":"hello","forged":true}', { qos: 1 });
    await a.publishAsync('proofrig/dev-b/status', 'offline 1', { qos: 1, retain: true });
    await a.publishAsync('proofrig/dev-a/up', 'marker', { qos: 1 });
    // The broker delivers one publisher's messages in order: once the marker is in, the refused ones would be too.
    await until(() => seen.includes('proofrig/dev-a/up marker'), 5000, 'dev-a publishing on its own up topic reaches the host');
    expect(seen.filter((s) => s.startsWith('proofrig/dev-b/'))).toEqual([]);

    // The host may write every device's down topic; dev-a receives its own.
    const got: string[] = [];
    a.on('message', (t, p) => got.push(`${t} ${p.toString()}`));
    await host.publishAsync('proofrig/dev-b/down', 'for b', { qos: 1 });
    await host.publishAsync('proofrig/dev-a/down', 'for a', { qos: 1 });
    await until(() => got.length > 0, 5000, 'dev-a receives on its down topic');
    expect(got).toEqual(['proofrig/dev-a/down for a']);
    expect(seen).toContain('proofrig/dev-b/down for b');
  });

  it('refuses a device whose password is not the one derived from its secret', async () => {
    const db = journalWith([['dev-a', SECRET_A]]);
    broker = await startMosquitto(writeBrokerAcl(db, join(mkdtempSync(join(tmpdir(), 'proofrig-acl-out-')), 'broker')));
    await expect(login('dev-a', brokerPassword('dev-a', SECRET_B))).rejects.toThrow(/Not authorized|Bad username or password/i);
    await expect(login('dev-a', brokerPassword('dev-a', SECRET_A))).resolves.toBeDefined();
  });
});

describe('proofrig broker acl', () => {
  it('a second run keeps the mode of the files the first one wrote (a broker\'s group given to them stays)', () => {
    const db = journalWith([['dev-a', SECRET_A]]);
    const dir = join(mkdtempSync(join(tmpdir(), 'proofrig-acl-out-')), 'broker');
    const first = writeBrokerAcl(db, dir);
    expect(statSync(first.passwd).mode & 0o777).toBe(0o640);
    chmodSync(first.passwd, 0o644);
    chmodSync(first.acl, 0o604);
    const again = writeBrokerAcl(db, dir);
    expect(statSync(again.passwd).mode & 0o777).toBe(0o644);
    expect(statSync(again.acl).mode & 0o777).toBe(0o604);
  });

  it('refuses a journal with a device id Mosquitto cannot take as a user name, naming it, and writes nothing', () => {
    const db = journalWith([
      ['dev-a', SECRET_A],
      ['bench:1', SECRET_B],
    ]);
    const dir = join(mkdtempSync(join(tmpdir(), 'proofrig-acl-out-')), 'broker');
    expect(() => writeBrokerAcl(db, dir)).toThrow(/device id "bench:1" contains ':'/);
    expect(existsSync(join(dir, 'passwd'))).toBe(false);
    expect(existsSync(join(dir, 'acl'))).toBe(false);
  });

  it('before any journal exists, lets the host in and no device, and makes the host\'s password beside where the journal will be', () => {
    const db = join(mkdtempSync(join(tmpdir(), 'proofrig-acl-')), 'state', 'journal.db');
    const r = writeBrokerAcl(db, join(mkdtempSync(join(tmpdir(), 'proofrig-acl-out-')), 'broker'));
    expect(r).toMatchObject({ journal: false, devices: [] });
    const passwd = readFileSync(r.passwd, 'utf8');
    expect(passwd.split('\n').filter(Boolean).map((l) => l.split(':')[0])).toEqual([HOST_USER]);
    expect(existsSync(join(db, '..', 'broker-host-password'))).toBe(true);
    expect(existsSync(db)).toBe(false);
  });
});
