// A real Mosquitto broker for a spec: Debian's /usr/sbin/mosquitto on a free loopback port with a
// generated config (no anonymous clients, the password and ACL files `proofrig broker acl` writes,
// TCP_NODELAY on, no persistence), started and awaited until it accepts, stopped afterwards. Where
// mosquitto is not installed the specs skip with a one-line notice; with CI set that fails the run
// (.ci/run installs it).
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serviceGate } from './service.js';
import { mosquittoAuth, type MosquittoAuth } from '../../host/src/broker/mosquitto-auth.js';

export const MOSQUITTO = process.env.PROOFRIG_MOSQUITTO ?? '/usr/sbin/mosquitto';
export const MOSQUITTO_AVAILABLE = existsSync(MOSQUITTO);
/** True when the broker specs run; else prints the one-line notice once. */
export const mosquittoOrNotice = serviceGate('MQTT', MOSQUITTO, MOSQUITTO_AVAILABLE, 'mosquitto');

/** The host's broker password in the specs' brokers. */
export const TEST_HOST_PASS = 'host-pass-for-tests';

export interface Broker {
  port: number;
  /** mqtt://127.0.0.1:PORT */
  url: string;
  /** Every line mosquitto logged so far. */
  log: string[];
  /** Write the password and ACL files for these devices (and the host) and make the broker load them. */
  authorize(devices: { device_id: string; secret: string }[]): Promise<void>;
  stop(): Promise<void>;
}

/** Wait until a line matching re appears in the log from index `from` on. */
function logged(log: string[], from: number, re: RegExp, ms: number, p: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const end = Date.now() + ms;
    const look = () => {
      if (log.slice(from).some((l) => re.test(l))) return resolve();
      if (p.exitCode !== null) return reject(new Error(`mosquitto exited (${p.exitCode}): ${log.join('\n')}`));
      if (Date.now() > end) return reject(new Error(`mosquitto did not log ${re} within ${ms} ms: ${log.join('\n')}`));
      setTimeout(look, 10);
    };
    look();
  });
}

/**
 * Start a broker that knows these devices (more can be authorized later), or that uses the password
 * and ACL files `proofrig broker acl` wrote (copied: the broker's user must be able to read them).
 */
export async function startMosquitto(devices: { device_id: string; secret: string }[] | { passwd: string; acl: string } = []): Promise<Broker> {
  const dir = mkdtempSync(join(tmpdir(), 'proofrig-mosquitto-'));
  // Started as root, mosquitto drops to the `mosquitto` user: it must be able to read its files.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const write = (a: MosquittoAuth) => {
    writeFileSync(join(dir, 'passwd'), a.passwd, { mode: 0o644 });
    writeFileSync(join(dir, 'acl'), a.acl, { mode: 0o644 });
  };
  write(Array.isArray(devices) ? mosquittoAuth(devices, TEST_HOST_PASS) : { passwd: readFileSync(devices.passwd, 'utf8'), acl: readFileSync(devices.acl, 'utf8') });
  writeFileSync(
    join(dir, 'mosquitto.conf'),
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous false',
      `password_file ${join(dir, 'passwd')}`,
      `acl_file ${join(dir, 'acl')}`,
      'persistence false',
      'set_tcp_nodelay true',
      // stderr: mosquitto's stdout is block-buffered into a pipe, so its lines would come late.
      'log_dest stderr',
      'log_type all',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const log: string[] = [];
  const p = spawn(MOSQUITTO, ['-c', join(dir, 'mosquitto.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const take = (b: Buffer) => log.push(...b.toString().split('\n').filter(Boolean));
  p.stdout!.on('data', take);
  p.stderr!.on('data', take);
  try {
    // "running" comes after the listen socket is open.
    await logged(log, 0, /mosquitto version .* running/, 10000, p);
  } catch (e) {
    p.kill('SIGKILL');
    throw e;
  }
  let stopped: Promise<void> | undefined;
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    log,
    async authorize(devs) {
      write(mosquittoAuth(devs, TEST_HOST_PASS));
      const from = log.length;
      p.kill('SIGHUP');
      await logged(log, from, /Reloading config/, 10000, p);
    },
    stop() {
      return (stopped ??= new Promise<void>((resolve) => {
        if (p.exitCode !== null) return resolve();
        p.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        p.kill('SIGTERM');
      }));
    },
  };
}
