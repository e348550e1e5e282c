// The uploader's parts: argument checks with their error codes, CRC32 as E.CRC32 computes it, the byte
// literal and ASCII JSON it sends, the redaction of secrets, and the console client against the sim.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { SimRig } from '@proofrig/sim';
import { crc32 as simCrc32 } from '../sim/src/bytes.js';
import {
  asciiJson,
  byteLiteral,
  ConsoleClient,
  crc32,
  makeRedactor,
  normalizeHostUrl,
  parseTcpTarget,
  runUploadCommand,
  upload,
  UploadError,
  type UploadOptions,
} from '../host/src/upload/index.js';
import { crc32Table } from '../host/src/upload/crc.js';
import { openTcp } from '../host/src/upload/transport.js';
import { RELAY_BOARD } from './helpers/e2e.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'proofrig-upload-unit-'));

async function codeOf(o: Partial<UploadOptions>): Promise<{ code: string; message: string }> {
  const full: UploadOptions = { tcp: '127.0.0.1:1', boardFile: RELAY_BOARD, deviceId: 'dev-1', hostUrl: 'ws://127.0.0.1:8787', db: join(tmp(), 'j.db'), log: () => {}, ...o };
  try {
    await upload(full);
  } catch (e) {
    if (e instanceof UploadError) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('upload did not fail');
}

describe('arguments', () => {
  it('the host URL must be ws://HOST:PORT (/device is added) or mqtt://HOST[:PORT] (1883 by default)', () => {
    expect(normalizeHostUrl('ws://192.168.1.20:8787')).toBe('ws://192.168.1.20:8787/device');
    expect(normalizeHostUrl('ws://pc.local:8787/')).toBe('ws://pc.local:8787/device');
    expect(normalizeHostUrl('ws://pc:1/device')).toBe('ws://pc:1/device');
    const bad = (u: string) => {
      try {
        normalizeHostUrl(u);
      } catch (e) {
        expect((e as UploadError).code).toBe('BAD_OPTION');
        expect((e as UploadError).message).toMatch(/it must be ws:\/\/HOST:PORT/);
        return (e as Error).message;
      }
      throw new Error(`${u} accepted`);
    };
    expect(bad('ws://pc')).toMatch(/port is required/);
    expect(bad('wss://pc:443')).toMatch(/plain ws:\/\/ only/);
    expect(bad('http://pc:8787')).toMatch(/not a ws:\/\/ URL/);
    expect(bad('ws://0.0.0.0:8787')).toMatch(/listen address/);
    expect(bad('ws://pc:8787/mcp')).toMatch(/gateway is at \/device/);
    expect(bad('ws://pc:70000')).toMatch(/not 1\.\.65535/);
    // A device that reaches the host through an MQTT broker.
    expect(normalizeHostUrl('mqtt://broker.lan:1883')).toBe('mqtt://broker.lan:1883');
    expect(normalizeHostUrl('mqtt://broker.lan')).toBe('mqtt://broker.lan:1883');
    expect(bad('mqtts://broker.lan:8883')).toMatch(/plain mqtt:\/\/ only/);
    expect(bad('mqtt://user:pw@broker.lan:1883')).toMatch(/no user/);
    expect(bad('mqtt://broker.lan:1883/x')).toMatch(/no path/);
    expect(bad('mqtt://0.0.0.0:1883')).toMatch(/listen address/);
    expect(bad('ws://[::1]:8787')).toBeTruthy();
  });

  it('each wrong option is BAD_OPTION (or BAD_BOARD) before anything is contacted', async () => {
    expect((await codeOf({ port: '/dev/ttyUSB0' })).message).toMatch(/exactly one of --port PATH/);
    expect((await codeOf({ tcp: undefined })).message).toMatch(/exactly one of/);
    expect(await codeOf({ tcp: 'host:abc' })).toMatchObject({ code: 'BAD_OPTION', message: expect.stringMatching(/--tcp must be HOST\[:PORT\]/) });
    expect(await codeOf({ deviceId: 'my rig' })).toMatchObject({ code: 'BAD_OPTION', message: expect.stringMatching(/--device-id "my rig"/) });
    expect(await codeOf({ deviceId: 'x'.repeat(65) })).toMatchObject({ code: 'BAD_OPTION' });
    expect((await codeOf({ wifi: { ssid: 'lab', password: undefined as unknown as string } })).message).toMatch(/--wifi-ssid needs its password/);
    expect((await codeOf({ wifi: { ssid: 'lab', password: 'short' } })).message).toMatch(/8-63 characters/);
    expect((await codeOf({ wifi: { ssid: '', password: 'longenough' } })).message).toMatch(/--wifi-ssid must be 1-32 bytes/);
    expect(await codeOf({ db: ':memory:' })).toMatchObject({ code: 'BAD_OPTION' });
    expect(await codeOf({ boardFile: '/nonexistent/board.json' })).toMatchObject({ code: 'BAD_BOARD' });
    const badBoard = join(tmp(), 'b.json');
    writeFileSync(badBoard, JSON.stringify({ id: 'x', name: 'x', mcu: 'esp32', module: 'm', device_processing_max_ms: 5, relays: [{ ch: 1 }] }));
    expect(await codeOf({ boardFile: badBoard })).toMatchObject({ code: 'BAD_BOARD', message: expect.stringMatching(/relays\[0\]\.pin/) });
    expect(await codeOf({ firmwareFile: '/nonexistent/fw.js' })).toMatchObject({ code: 'BAD_OPTION', message: expect.stringMatching(/firmware file .* does not exist/) });
    expect(parseTcpTarget('10.0.0.7')).toEqual({ kind: 'tcp', host: '10.0.0.7', port: 23 });
    expect(parseTcpTarget('tcp://localhost:2323')).toEqual({ kind: 'tcp', host: 'localhost', port: 2323 });
  });

  it('the command exits 2 for a wrong call and says which option is missing', async () => {
    let err = '';
    const io = { stdout: { write: () => true }, stderr: { write: (t: string) => (err += t) } };
    expect(await runUploadCommand({ tcp: '127.0.0.1:1', db: 'x.db' }, io)).toBe(2);
    expect(err).toMatch(/^proofrig upload: BAD_OPTION: --board, --device-id, --host are required/);
    err = '';
    expect(await runUploadCommand({ tcp: '127.0.0.1:1', board: RELAY_BOARD, deviceId: 'd', host: 'ws://h:1', wifiPasswordFile: 'pw.txt', db: 'x.db' }, io)).toBe(2);
    expect(err).toMatch(/--wifi-password-file needs --wifi-ssid/);
    err = '';
    expect(await runUploadCommand({ tcp: '127.0.0.1:1', board: RELAY_BOARD, deviceId: 'd', host: 'http://h:1', db: 'x.db' }, io)).toBe(2);
    expect(err).toMatch(/BAD_OPTION: --host "http:\/\/h:1"/);
  });
});

describe('the Wi-Fi password never comes from the command line', () => {
  const base = { tcp: '127.0.0.1:1', board: RELAY_BOARD, deviceId: 'd', host: 'ws://h:1', wifiSsid: 'lab', db: join(tmp(), 'j.db') };
  /** Run the command to the point where the password is checked (a too-short one stops it there). */
  async function withPassword(o: object, deps: object = {}) {
    let err = '';
    const code = await runUploadCommand({ ...base, ...o }, { stdout: { write: () => true }, stderr: { write: (t: string) => (err += t) }, env: {}, ...deps });
    return { code, err };
  }

  it('--wifi-password is refused with the reason and the three ways that work, and the value is not echoed', async () => {
    const r = await withPassword({ wifiPassword: 'p4ssword!' });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--wifi-password is not accepted: a command-line argument shows in ps and in shell history.*PROOFRIG_WIFI_PASSWORD.*--wifi-password-file/);
    expect(r.err).not.toContain('p4ssword!');
  });

  it('the password is read from --wifi-password-file, else PROOFRIG_WIFI_PASSWORD, else a prompt', async () => {
    const f = join(tmp(), 'pw');
    writeFileSync(f, 'short\n');
    // "short" reaches the WPA2 length check, which proves where it was read from
    expect((await withPassword({ wifiPasswordFile: f })).err).toMatch(/8-63 characters/);
    expect((await withPassword({}, { env: { PROOFRIG_WIFI_PASSWORD: 'tiny' } })).err).toMatch(/8-63 characters/);
    let asked = '';
    const r = await withPassword({}, { prompt: async (q: string) => ((asked = q), 'abc') });
    expect(asked).toMatch(/Wi-Fi password for "lab"/);
    expect(r.err).toMatch(/8-63 characters/);
    expect((await withPassword({}, { prompt: undefined })).err).toMatch(/PROOFRIG_WIFI_PASSWORD|8-63/);
    expect((await withPassword({ wifiPasswordFile: '/nonexistent/pw' })).err).toMatch(/does not exist/);
  });

  it('the proofrig command line has no --wifi-password in its help', async () => {
    const { buildCli, loadVerbs } = await import('../host/src/cli/main.js');
    const up = buildCli(await loadVerbs()).commands.find((c) => c.name() === 'upload')!;
    expect(up.helpInformation()).not.toMatch(/--wifi-password </);
    expect(up.helpInformation()).toMatch(/--wifi-password-file/);
  });
});

describe('what is sent and compared', () => {
  it('crc32 is the standard CRC-32 as E.CRC32 returns it (unsigned), native or by table', () => {
    const check = Buffer.from('123456789');
    expect(crc32(check)).toBe(0xcbf43926);
    expect(crc32Table(check)).toBe(0xcbf43926);
    const data = new Uint8Array(5000).map((_, i) => (i * 7919 + (i >> 3)) & 255);
    expect(crc32(data)).toBe(crc32Table(data));
    expect(crc32(data)).toBe(simCrc32([...data]));
    expect(crc32(new Uint8Array([0xff, 0xff, 0xff, 0xff]))).toBeGreaterThan(0x7fffffff); // no sign flip
  });

  it('byteLiteral reads back as the same bytes, all 256 of them, in sloppy and strict code (no octal escapes)', () => {
    const all = new Uint8Array(256).map((_, i) => i);
    const lit = byteLiteral(all);
    expect(lit).not.toMatch(/\\[0-7]/);
    for (const prefix of ['', '"use strict";']) {
      const back = vm.runInNewContext(prefix + lit) as string;
      expect(Buffer.from(back, 'latin1')).toEqual(Buffer.from(all));
    }
    expect(byteLiteral(Buffer.from('a"b\\c\nd'))).toBe('"a\\"b\\\\c\\nd"');
  });

  it('the config JSON is pure ASCII and parses back to the same value', () => {
    const v = { name: 'Prüfstand “A”', n: 1 };
    const s = asciiJson(v);
    expect(s).toMatch(/^[\x20-\x7e]*$/);
    expect(JSON.parse(s)).toEqual(v);
  });

  it('the redactor hides a secret in every form it can take on the console', () => {
    const r = makeRedactor(['pa"ss\\word', 'abc123']);
    expect(r('raw pa"ss\\word, json pa\\"ss\\\\word, escaped again pa\\\\\\"ss\\\\\\\\word; abc123!')).toBe('raw ***, json ***, escaped again ***; ***!');
    expect(makeRedactor([''])('keep')).toBe('keep');
  });
});

describe('the console client against the simulated console', () => {
  let rig: SimRig | undefined;
  afterEach(() => rig?.shutdown());

  it('writes a file with every byte value in confirmed chunks and reads back length and CRC; a missing file is null', async () => {
    rig = new SimRig({ seed: 3 });
    rig.boot();
    const port = await rig.serveConsole(0);
    const cc = new ConsoleClient(await openTcp('127.0.0.1', port, 2000));
    await cc.sync();
    const data = new Uint8Array(2600).map((_, i) => (i * 31) & 255);
    const progress: number[] = [];
    await cc.writeFile('bin', data, (done) => progress.push(done));
    expect(progress).toEqual([1024, 2048, 2600]);
    expect(Buffer.from(rig.storage.readBytes('bin')!)).toEqual(Buffer.from(data));
    expect(await cc.fileInfo('bin')).toEqual({ length: 2600, crc: crc32(data) });
    expect(await cc.fileInfo('nope')).toBeNull();
    expect(await cc.evaluate('process.env.BOARD')).toBe('ESP32');
    await expect(cc.evaluate('nosuch.x')).rejects.toMatchObject({ code: 'UPLOAD_FAILED', message: expect.stringMatching(/nosuch/) });
    await expect(cc.evaluate('1 +* 2')).rejects.toMatchObject({ code: 'UPLOAD_FAILED', message: expect.stringMatching(/could not run a command/) });
    await cc.close();
  });
});
