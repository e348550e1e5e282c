// The firmware's CPU cost per command as a machine-independent figure: instructions counted by
// valgrind's callgrind inside the real Espruino interpreter (PROOFRIG_ESPRUINO), only while a
// JavaScript event callback runs (--toggle-collect on jsiExecuteEventCallbackInner: socket data,
// timers, pin edges; the boot's own evaluation of the code is not counted). The relay rig's
// firmware boots from Storage as on the chip, a real host core drives relay commands at it, and
// the counters are dumped (callgrind_control -d: counts since the previous dump) at three points:
// after the handshake, after N relay commands, and after an idle stretch as long as the commands
// took. Per command = (commands − idle) / N. Used by bench/src/firmware-cost.ts and
// test/firmware-cost.test.ts. The floor script beside it (floorCost) does only what any sealed
// JSON protocol must per frame: JSON.parse, one native SHA-256, JSON.stringify, one socket write.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { DEVICE_PATH, type BoardDef } from '@proofrig/protocol';
import { SimRig } from '@proofrig/sim';
import { serve } from '@proofrig/host/tools';
import { newSecret } from '@proofrig/host/core';

const ROOT = new URL('../../', import.meta.url).pathname;
export const FIRMWARE_FILE = join(ROOT, 'firmware', 'dist', 'proofrig.js');
export const FIRMWARE_MQTT_FILE = join(ROOT, 'firmware', 'dist', 'proofrig-mqtt.js');
export const RELAY_BOARD_FILE = join(ROOT, 'boards', 'relay-rig-4ch.json');
/** The function every JavaScript event callback of the interpreter runs in (jsinteractive.c). */
const CALLBACK_FN = 'jsiExecuteEventCallbackInner';

/** valgrind and callgrind_control on PATH, or why not. */
export function valgrindMissing(): string | undefined {
  for (const t of ['valgrind', 'callgrind_control']) {
    try {
      execFileSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' });
    } catch {
      return `${t} is not installed (apt-get install valgrind)`;
    }
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(f: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`firmware cost: ${what} not within ${ms} ms`);
    await sleep(20);
  }
}

/**
 * An interpreter "binary" for the engine: a shell script that runs the real one under callgrind when
 * started with no arguments (a boot from Storage) and as is otherwise (the install run).
 */
class Callgrind {
  readonly dir = mkdtempSync(join(tmpdir(), 'proofrig-cg-'));
  readonly bin = join(this.dir, 'espruino-callgrind.sh');
  private dumps = 0;

  constructor(real: string) {
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    writeFileSync(
      this.bin,
      '#!/bin/sh\n' +
        `if [ "$#" -eq 0 ]; then echo $$ > ${q(join(this.dir, 'pid'))}; exec valgrind -q --tool=callgrind --callgrind-out-file=${q(join(this.dir, 'cg.out'))} ` +
        `--collect-atstart=no --toggle-collect=${CALLBACK_FN} --dump-line=no ${q(real)}; fi\n` +
        `exec ${q(real)} "$@"\n`,
    );
    chmodSync(this.bin, 0o755);
  }

  private pid(): number {
    const f = join(this.dir, 'pid');
    return existsSync(f) ? Number(readFileSync(f, 'utf8').trim()) : 0;
  }

  /** Dump the counters (and zero them): instructions counted since the previous dump. */
  async dump(): Promise<number> {
    const pid = this.pid();
    if (!pid) throw new Error('firmware cost: the interpreter under callgrind has not started');
    execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore', timeout: 30000 });
    const n = ++this.dumps;
    const want = `cg.out.${n}`;
    let text = '';
    await until(
      () => {
        if (!readdirSync(this.dir).includes(want)) return false;
        text = readFileSync(join(this.dir, want), 'utf8');
        return /^totals: \d+/m.test(text);
      },
      30000,
      `callgrind dump ${n}`,
    );
    return Number(/^totals: (\d+)/m.exec(text)![1]);
  }
}

export interface FirmwareCost {
  /** Instructions per relay command (ch 3: the cmd frame with the previous rack inside, write, settle, pin read-back, the res frame). */
  perCommand: number;
  /** Instructions in callbacks from boot to the device online with its state read (connect, hello/chal/auth/ok, first state). */
  handshake: number;
  /** Instructions of the idle stretch subtracted (as long as the commands took). */
  idle: number;
  commands: number;
  /** The firmware file's size, bytes. */
  bytes: number;
}

/**
 * The relay rig (boards/relay-rig-4ch.json, ch 3) on the interpreter under callgrind, driven by a
 * real host core over loopback. The board's device_processing_max_ms is raised for this run only:
 * under valgrind the interpreter runs ~50x slower and the host's deadlines would otherwise expire.
 */
/** What firmwareCost measures per command: relay.set on channel 3 of the relay rig unless a board file and command are given. */
export interface CostCommand {
  boardFile: string;
  /** Commands before the handshake dump (not counted per command), e.g. switching a sensor's supply on. */
  prepare?: { action: string; args: Record<string, unknown> }[];
  command: (i: number) => { action: string; args: Record<string, unknown> };
  /** The state every measured command must end in (default completed; a servo.set ends unverified). */
  ends?: 'completed' | 'unverified';
}

/**
 * Measure through an MQTT broker instead of the direct WebSocket: `url` is what the host logs in with
 * (mqtt://USER:PASS@HOST:PORT), `authorize` brings the broker's password file up to date once the
 * rig is provisioned. The firmware then defaults to the MQTT build.
 */
export interface CostBroker {
  url: string;
  authorize: (devices: { device_id: string; secret: string }[]) => Promise<void>;
}

export async function firmwareCost(o: { binary: string; firmware?: string; commands?: number; measure?: CostCommand; broker?: CostBroker }): Promise<FirmwareCost> {
  const N = o.commands ?? 20;
  const firmware = o.firmware ?? (o.broker ? FIRMWARE_MQTT_FILE : FIRMWARE_FILE);
  const cg = new Callgrind(o.binary);
  const board = { ...(JSON.parse(readFileSync(o.measure?.boardFile ?? RELAY_BOARD_FILE, 'utf8')) as BoardDef), device_processing_max_ms: 60000 };
  const running = await serve({
    db: join(cg.dir, 'journal.db'),
    port: 0,
    logger: pino({ level: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() })),
    // No heartbeat inside the measured stretches.
    heartbeatMs: 120000,
    offlineGraceMs: 120000,
    broker: o.broker?.url,
  });
  const dev = 'cost-1';
  const secret = newSecret();
  running.core.provision(dev, secret, board, true);
  await o.broker?.authorize([{ device_id: dev, secret }]);
  const brokerAt = o.broker ? new URL(o.broker.url).host : '';
  const rig = new SimRig({
    engine: 'espruino',
    espruino: cg.bin,
    firmwarePath: firmware,
    seed: 1,
    config: { dev, secret, host: o.broker ? `mqtt://${brokerAt}` : `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}`, board },
  });
  try {
    rig.boot();
    await until(() => running.core.devices.view(dev)?.online === true && running.core.devices.view(dev)?.state != null, 90000, 'the rig online');
    for (const p of o.measure?.prepare ?? []) {
      const c = await running.core.submit({ device_id: dev, ...p });
      await running.core.waitTerminal(c.command_id, 60000);
    }
    await sleep(500);
    const handshake = await cg.dump();
    const t0 = Date.now();
    for (let i = 0; i < N; i++) {
      const cmd = o.measure ? o.measure.command(i) : { action: 'relay.set', args: { ch: 3, on: i % 2 === 0 } };
      const c = await running.core.submit({ device_id: dev, ...cmd });
      const s = await running.core.waitTerminal(c.command_id, 60000);
      if (s?.state !== (o.measure?.ends ?? 'completed')) throw new Error(`firmware cost: ${cmd.action} command ${i} ended ${s?.state ?? 'not terminal'} ${s?.error_code ?? ''} ${s?.detail ?? ''}`);
    }
    // Let the last rack reach the device before the dump.
    await sleep(300);
    const withCommands = await cg.dump();
    await sleep(Date.now() - t0);
    const idle = await cg.dump();
    return { perCommand: Math.round((withCommands - idle) / N), handshake, idle, commands: N, bytes: readFileSync(firmware).length };
  } finally {
    rig.shutdown();
    await running.close();
  }
}

/** The floor: per frame only JSON.parse + one native SHA-256 + JSON.stringify + one socket write. */
const FLOOR_SCRIPT = (port: number) => `
var C=require('crypto');
var s=require('net').connect({host:'127.0.0.1',port:${port}},function(){s.write('up\\n');});
s.on('data',function(d){var o=JSON.parse(d);var h=C.SHA256(d);s.write(JSON.stringify({t:'res',rid:o.rid,ok:true,mac:btoa(E.toString(h))})+'\\n');});
`;

/** Instructions per frame (in and out) of the floor script, booted from Storage like the firmware. */
export async function floorCost(o: { binary: string; frames?: number }): Promise<number> {
  const N = o.frames ?? 20;
  const cg = new Callgrind(o.binary);
  let sock: net.Socket | undefined;
  let got = '';
  const server = net.createServer((s) => {
    sock = s;
    s.setEncoding('latin1');
    s.on('data', (d: string) => (got += d));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const setup = join(cg.dir, 'install.js');
  writeFileSync(setup, `require('Storage').write('.bootcde',${JSON.stringify(FLOOR_SCRIPT(port))});print('installed');`);
  execFileSync(o.binary, [setup], { cwd: cg.dir, input: '', timeout: 20000 });
  const child = spawn(cg.bin, [], { cwd: cg.dir, stdio: ['pipe', 'ignore', 'ignore'] });
  try {
    await until(() => /up\n/.test(got), 90000, 'the floor script connected');
    await sleep(300);
    await cg.dump();
    const lines = () => got.split('\n').length - 2;
    const t0 = Date.now();
    for (let i = 0; i < N; i++) {
      const frame = JSON.stringify({ t: 'cmd', rid: `r-${1000 + i}`, a: 'relay.set', args: { ch: 3, on: i % 2 === 0 }, n: i + 1, mac: 'AAAAAAAAAAAAAAAAAAAAAA==' });
      sock!.write(frame);
      await until(() => lines() >= i + 1, 30000, `floor frame ${i}`);
    }
    const withFrames = await cg.dump();
    await sleep(Date.now() - t0);
    const idle = await cg.dump();
    return Math.round((withFrames - idle) / N);
  } finally {
    child.kill('SIGKILL');
    server.close();
    sock?.destroy();
  }
}

/** The ESP32 estimate's assumptions: 240 MHz, in-order, code from flash through a 32 KB cache. */
export const ESP32 = { mhz: 240, instrRatio: [1.2, 1.5] as const, ipc: [0.4, 0.8] as const };

/** CPU time (ms) on an ESP32 for n x86-64 instructions: [best, worst]. */
export function esp32Ms(n: number): [number, number] {
  const cycles = (ratio: number, ipc: number) => (n * ratio) / ipc;
  return [cycles(ESP32.instrRatio[0], ESP32.ipc[1]) / (ESP32.mhz * 1000), cycles(ESP32.instrRatio[1], ESP32.ipc[0]) / (ESP32.mhz * 1000)];
}
