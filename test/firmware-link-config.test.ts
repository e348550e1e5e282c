// Each firmware build dials only its own kind of host: the WebSocket build (dist/proofrig.js) a ws://
// URL, the MQTT build (dist/proofrig-mqtt.js) an mqtt:// one. Given the other kind, it says so at boot,
// opens no socket and retries reading its config, as with any unusable config.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { SimRig } from '@proofrig/sim';
import type { BoardDef, RigConfig } from '@proofrig/protocol';
import { FIRMWARE_FILE, FIRMWARE_MQTT_FILE } from '../host/src/paths.js';
import { RELAY_BOARD, until } from './helpers/e2e.js';

const board: BoardDef = JSON.parse(readFileSync(RELAY_BOARD, 'utf8'));
const config = (host: string): RigConfig => ({ dev: 'bench-1', secret: '7f'.repeat(32), host, board });

let rig: SimRig | undefined;
afterEach(() => {
  rig?.shutdown();
  rig = undefined;
});

function bootWith(firmwarePath: string, host: string): string[] {
  const lines: string[] = [];
  rig = new SimRig({ firmwarePath, config: config(host), seed: 1, console: (l) => lines.push(l) });
  rig.boot();
  return lines;
}

describe('the firmware build and the kind of host in the config', () => {
  it('the MQTT build refuses a ws:// host, naming what it needs', async () => {
    const lines = bootWith(FIRMWARE_MQTT_FILE, 'ws://127.0.0.1:8787/device');
    await until(() => lines.some((l) => l.includes('no usable rig config')), 5000, 'the config refused');
    expect(lines.join('\n')).toMatch(/host must be mqtt:\/\/HOST:PORT \(this is the MQTT build of the firmware\)/);
  });

  it('the WebSocket build refuses an mqtt:// host, naming what it needs', async () => {
    const lines = bootWith(FIRMWARE_FILE, 'mqtt://127.0.0.1:1883');
    await until(() => lines.some((l) => l.includes('no usable rig config')), 5000, 'the config refused');
    expect(lines.join('\n')).toMatch(/host must be ws:\/\/HOST:PORT\/PATH/);
  });

  it('the MQTT build takes an mqtt:// host and starts its link', async () => {
    const lines = bootWith(FIRMWARE_MQTT_FILE, 'mqtt://127.0.0.1:1');
    // Nothing listens on port 1: the link goes down and is retried, which shows it was started.
    await until(() => lines.some((l) => l.includes('proofrig link: reconnecting in')), 5000, 'the link started');
    expect(lines.join('\n')).not.toMatch(/no usable rig config/);
  });
});
