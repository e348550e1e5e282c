// `upload()`: put the proofrig firmware and a rig config onto an ESP32 running Espruino, prove by read-back
// that flash holds exactly what was sent, register the device with the host, and reboot it into the firmware.
//
// Steps, in this order:
//  1. validate everything the user gave (board, device id, host URL, Wi-Fi) and build the firmware if missing;
//  2. connect to the console, ask the board what it is (process.env), reset() it and wait until it answers;
//  3. EspruinoTools: the firmware to Storage `.bootcde` (Save on Send, no load);
//  4. own console client: the config (with a fresh device secret) to Storage `proofrig.json`;
//  5. read back E.CRC32 and the length of both files and compare them with what was sent;
//  6. register the device and its secret in the host's journal (only now: everything is verified);
//  7. load(): the board restarts its JavaScript and runs the new `.bootcde`, which dials the host.
// Registration comes before the reboot so the device's first hello is already accepted; the verified files
// run at every later boot anyway, so a failed reboot leaves nothing inconsistent.
//
// The device secret and the Wi-Fi password never reach a log line: they are only in the config bytes, which
// are sent with echo off, and every line this module emits goes through `redact`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BOOT_CODE_FILE, CONFIG_FILE, DEVICE_PATH, isId, MAX_ID_LENGTH, type BoardDef, type RigConfig } from '@proofrig/protocol';
import { newSecret } from '../core/ids.js';
import { Journal } from '../core/journal/journal.js';
import { isPostgresUrl, redactUrl } from '../core/journal/db-url.js';
import { FIRMWARE_FILE, FIRMWARE_MQTT_FILE, IN_REPO, REPO_ROOT } from '../paths.js';
import { mqttUrl } from '@proofrig/protocol/mqttcodec';
import { loadBoard } from '../cli/board.js';
import { ConsoleClient, type FileInfo } from './console-client.js';
import { crc32, hex32 } from './crc.js';
import { UploadError } from './errors.js';
import { saveBootCode } from './espruino-tools.js';
import { CONSOLE_BAUD, describeTarget, open, parseTcpTarget, type ConsoleTarget } from './transport.js';

/** How long a board may take to answer after reset(): an ESP32 takes well under a second; the chip-speed simulator seconds. */
const RESET_WAIT_MS = 30000;

export interface UploadOptions {
  /** Serial port of the board (e.g. /dev/ttyUSB0, COM3). Exactly one of port / tcp. */
  port?: string;
  /** The board's telnet console (or a simulated rig's): HOST[:PORT], port 23 by default. */
  tcp?: string;
  boardFile: string;
  deviceId: string;
  /** The host the device dials: ws://HOST:PORT (the path /device is added when missing), or mqtt://HOST[:PORT] (the MQTT firmware). */
  hostUrl: string;
  wifi?: { ssid: string; password: string };
  /** The host's journal (device store); created if missing. */
  db: string;
  /** Default: firmware/dist/proofrig.js (proofrig-mqtt.js for an mqtt:// host), built when missing. */
  firmwareFile?: string;
  /** Baud rate for --port (default 115200, Espruino's console rate on the ESP32). */
  baud?: number;
  /**
   * Run EspruinoTools over proofrig's own transport even for --tcp (it always does for --port); the
   * default for --tcp is EspruinoTools' own socket device.
   */
  toolsViaTransport?: boolean;
  /** One line per step. Never receives a secret. */
  log: (line: string) => void;
  /** Console traffic and EspruinoTools' chatter, redacted (for --verbose). */
  debug?: (line: string) => void;
}

export interface UploadedFile {
  name: string;
  bytes: number;
  crc: number;
}

export interface UploadResult {
  deviceId: string;
  target: string;
  board: { id: string; name: string };
  host: string;
  files: UploadedFile[];
  /** What the board said it is (process.env). */
  env: { BOARD?: string; VERSION?: string; CONSOLE?: string };
  db: string;
}

interface Checked {
  target: ConsoleTarget;
  board: BoardDef;
  host: string;
  wifi?: { ssid: string; pass: string };
  firmware: string;
}

/**
 * ws://HOST:PORT[/device] → ws://HOST:PORT/device; mqtt://HOST[:PORT] (a device that reaches the host
 * through an MQTT broker, docs/mqtt.md) → mqtt://HOST:PORT; else BAD_OPTION saying what a valid one looks like.
 */
export function normalizeHostUrl(raw: string): string {
  const bad = (why: string) =>
    new UploadError(
      'BAD_OPTION',
      `--host ${JSON.stringify(raw)}: ${why}; it must be ws://HOST:PORT, e.g. ws://192.168.1.20:8787 (the PC running \`proofrig serve --listen 0.0.0.0\`), or mqtt://HOST[:PORT] for a device that reaches the host through an MQTT broker`,
    );
  if (typeof raw !== 'string' || raw.length === 0) throw bad('missing');
  if (/^mqtts:\/\//i.test(raw)) throw bad('the firmware speaks plain mqtt:// only (Espruino on the ESP32 has no TLS here)');
  if (/^mqtt:\/\//i.test(raw)) {
    const q = mqttUrl(raw.trim());
    if (!q) throw bad('not an mqtt://HOST[:PORT] URL (no path, no user: a device logs in with its id and a password derived from its secret)');
    if (!/^[A-Za-z0-9.-]+$/.test(q.h)) throw bad(`"${q.h}" is not a host name or IPv4 address`);
    if (q.h === '0.0.0.0') throw bad('0.0.0.0 is a listen address, not one a device can dial; give the broker\'s LAN address');
    return `mqtt://${q.h}:${q.p}`;
  }
  if (/^wss:\/\//i.test(raw)) throw bad('the firmware speaks plain ws:// only (Espruino on the ESP32 has no TLS here)');
  const m = /^ws:\/\/([^/:?#\s]+):([0-9]+)(\/[^?#\s]*)?$/i.exec(raw.trim());
  if (!m) throw bad(/^ws:\/\/[^/:]+(\/|$)/i.test(raw) ? 'the port is required' : 'not a ws:// URL');
  const [, host, portStr, path] = m;
  const port = Number(portStr);
  if (!(port >= 1 && port <= 65535) || String(port) !== portStr) throw bad(`port ${portStr} is not 1..65535`);
  if (!/^[A-Za-z0-9.-]+$/.test(host)) throw bad(`"${host}" is not a host name or IPv4 address`);
  if (host === '0.0.0.0') throw bad('0.0.0.0 is a listen address, not one a device can dial; give this PC\'s LAN address');
  if (path !== undefined && path !== '/' && path !== DEVICE_PATH) throw bad(`the device gateway is at ${DEVICE_PATH}, not ${path}`);
  return `ws://${host}:${port}${DEVICE_PATH}`;
}

function checkOptions(o: UploadOptions): Checked {
  if (!!o.port === !!o.tcp) throw new UploadError('BAD_OPTION', 'give exactly one of --port PATH (USB serial) or --tcp HOST[:PORT] (the board\'s telnet console)');
  const target: ConsoleTarget = o.tcp ? parseTcpTarget(o.tcp) : { kind: 'serial', path: o.port!, baud: o.baud ?? CONSOLE_BAUD };
  if (!isId(o.deviceId))
    throw new UploadError('BAD_OPTION', `--device-id ${JSON.stringify(o.deviceId ?? '')}: must be 1-${MAX_ID_LENGTH} characters of A-Z a-z 0-9 _ . : -`);
  const host = normalizeHostUrl(o.hostUrl);
  let wifi: Checked['wifi'];
  if (o.wifi) {
    const { ssid, password } = o.wifi;
    if (typeof ssid !== 'string' || ssid.length === 0 || Buffer.byteLength(ssid) > 32)
      throw new UploadError('BAD_OPTION', '--wifi-ssid must be 1-32 bytes');
    if (typeof password !== 'string')
      throw new UploadError('BAD_OPTION', '--wifi-ssid needs its password (PROOFRIG_WIFI_PASSWORD, --wifi-password-file, or the prompt; empty for an open network)');
    if (password.length > 0 && (password.length < 8 || password.length > 63))
      throw new UploadError('BAD_OPTION', 'the Wi-Fi password must be 8-63 characters (WPA2), or empty for an open network');
    wifi = { ssid, pass: password };
  }
  if (typeof o.db !== 'string' || o.db.length === 0 || o.db === ':memory:')
    throw new UploadError('BAD_OPTION', '--db must be the journal file of the host the device will dial (default .proofrig/journal.db)');
  let board: BoardDef;
  try {
    board = loadBoard(o.boardFile);
  } catch (e) {
    throw new UploadError('BAD_BOARD', (e as Error).message);
  }
  return { target, board, host, wifi, firmware: o.firmwareFile ?? (host.startsWith('mqtt://') ? FIRMWARE_MQTT_FILE : FIRMWARE_FILE) };
}

/** Build firmware/dist/proofrig.js from the repo when it is missing. */
function ensureFirmware(file: string, log: (l: string) => void): void {
  if (existsSync(file)) return;
  if (file !== FIRMWARE_FILE && file !== FIRMWARE_MQTT_FILE) throw new UploadError('BAD_OPTION', `firmware file ${file} does not exist`);
  if (!IN_REPO)
    throw new UploadError('BUILD_FAILED', `${file} is missing and there is no firmware source at ${REPO_ROOT} to build it from`);
  log(`building the firmware (npm run build -w firmware) ...`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['run', 'build', '-w', 'firmware'], { cwd: REPO_ROOT, encoding: 'utf8', shell: process.platform === 'win32' });
  if (r.status !== 0 || !existsSync(file)) {
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new UploadError('BUILD_FAILED', `building the firmware failed (exit ${r.status ?? r.error?.message}):\n${out}`);
  }
}

/** JSON with every non-ASCII character as \uXXXX: the stored file is ASCII, read the same by Espruino and V8. */
export function asciiJson(v: unknown): string {
  return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** Replace every form a secret can take in console text (raw, JSON-escaped, as a byte literal) with ***. */
export function makeRedactor(secrets: string[]): (text: string) => string {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (!s) continue;
    forms.add(s);
    const j = JSON.stringify(s).slice(1, -1);
    forms.add(j);
    forms.add(JSON.stringify(j).slice(1, -1));
  }
  const list = [...forms].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
  return (text: string) => {
    let out = text;
    for (const f of list) out = out.split(f).join('***');
    return out;
  };
}

export async function upload(o: UploadOptions): Promise<UploadResult> {
  const c = checkOptions(o);
  const secret = newSecret();
  const redact = makeRedactor([secret, c.wifi?.pass ?? '']);
  try {
    return await run(o, c, secret, redact);
  } catch (e) {
    // A board's error report can quote the line it choked on; no message leaves here with a secret in it.
    if (e instanceof UploadError) throw new UploadError(e.code, redact(e.message));
    throw new UploadError('UPLOAD_FAILED', redact(e instanceof Error ? e.message : String(e)));
  }
}

async function run(o: UploadOptions, c: Checked, secret: string, redact: (s: string) => string): Promise<UploadResult> {
  const log = (l: string) => o.log(redact(l));
  const debug = (l: string) => o.debug?.(redact(l));
  const where = describeTarget(c.target);

  if (c.target.kind === 'serial' && /^(127\.|localhost$)/.test(new URL(c.host.replace(/^ws:/, 'http:')).hostname))
    log(`warning: the device will dial ${c.host}, which on the board means the board itself; give this PC's LAN address`);
  if (c.target.kind === 'serial' && !c.wifi)
    log('note: no --wifi-ssid given: the board reaches the host only if its Wi-Fi is already set up (Wifi.save())');

  ensureFirmware(c.firmware, log);
  const fw = readFileSync(c.firmware);
  if (fw.length === 0) throw new UploadError('BUILD_FAILED', `firmware file ${c.firmware} is empty`);
  const config: RigConfig = { dev: o.deviceId, secret, host: c.host, board: c.board };
  if (c.wifi) config.wifi = c.wifi;
  const cfgBytes = Buffer.from(asciiJson(config), 'latin1');

  // 2. Who is there? Then reset() (the old program stops before anything is written), and wait until
  // the board answers again: a slow board takes seconds to reset, and writes sent while it resets are
  // lost (EspruinoTools' own reset waits a fixed 250 ms; docs/chip-speed.md).
  const env = await withConsole(c.target, debug, async (cc) => {
    const e = await cc.evaluate<Record<string, unknown>>('process.env', 5000);
    await cc.run('reset()');
    await cc.afterReset(RESET_WAIT_MS);
    return (e && typeof e === 'object' ? e : {}) as UploadResult['env'];
  });
  log(`connected to ${where}: ${env.BOARD ?? 'unknown board'}, Espruino ${env.VERSION ?? '?'}${env.CONSOLE ? `, console ${env.CONSOLE}` : ''}`);
  if (env.BOARD && !/^ESP32/.test(String(env.BOARD)))
    log(`warning: the board says it is ${env.BOARD}, not an ESP32; the pin map of ${c.board.id} is for an ESP32`);

  // 3. The firmware, with EspruinoTools (no reset() of its own: step 2 did it and waited for the board).
  const warnings = await saveBootCode({
    target: c.target,
    viaTransport: o.toolsViaTransport,
    code: fw.toString('latin1'),
    debug: (l) => debug(`espruino: ${l}`),
  });
  for (const w of warnings) debug(`espruino warning: ${w}`);
  log(`wrote ${BOOT_CODE_FILE}: ${fw.length} bytes (EspruinoTools, Save on Send to Storage)`);

  // 4 + 5. The config, then read back both files.
  const sent: UploadedFile[] = [
    { name: BOOT_CODE_FILE, bytes: fw.length, crc: crc32(fw) },
    { name: CONFIG_FILE, bytes: cfgBytes.length, crc: crc32(cfgBytes) },
  ];
  const stored = await withConsole(c.target, debug, async (cc) => {
    await cc.writeFile(CONFIG_FILE, cfgBytes);
    log(`wrote ${CONFIG_FILE}: ${cfgBytes.length} bytes (device ${o.deviceId}, host ${c.host}${c.wifi ? `, Wi-Fi "${c.wifi.ssid}"` : ''}, new device secret)`);
    const out: Record<string, FileInfo | null> = {};
    for (const f of sent) out[f.name] = await cc.fileInfo(f.name);
    return out;
  });
  for (const f of sent) {
    const got = stored[f.name];
    if (!got) throw new UploadError('CRC_MISMATCH', `${f.name} is not in the board's Storage after writing it (${f.bytes} bytes sent); nothing was registered`);
    if (got.crc !== f.crc || got.length !== f.bytes)
      throw new UploadError(
        'CRC_MISMATCH',
        `${f.name} differs on the board: sent ${f.bytes} bytes with CRC32 ${hex32(f.crc)}, the board holds ${got.length} bytes with CRC32 ${hex32(got.crc)}. ` +
          'Nothing was registered; run the upload again (over serial, try a lower-noise cable or port).',
      );
    log(`CRC ok: ${f.name} ${hex32(f.crc)} (${f.bytes} bytes)`);
  }

  // 6. Register, now that flash is known to hold exactly what was sent.
  const dbPath = isPostgresUrl(o.db) ? o.db : resolve(o.db);
  try {
    const j = new Journal(dbPath);
    try {
      j.provision(o.deviceId, secret, c.board);
    } finally {
      j.close();
    }
  } catch (e) {
    throw new UploadError('REGISTER_FAILED', `the board is written and verified, but registering ${o.deviceId} in ${redactUrl(o.db)} failed: ${(e as Error).message}. Run the upload again.`);
  }
  log(`registered device ${o.deviceId} (board ${c.board.id}) in ${redactUrl(o.db)}`);

  // 7. Reboot into the new firmware.
  try {
    await withConsole(c.target, debug, async (cc) => {
      await cc.run('load()');
      await new Promise((r) => setTimeout(r, 300));
    });
  } catch (e) {
    throw new UploadError(
      'REBOOT_FAILED',
      `the board is written, verified and registered, but sending load() failed (${(e as Error).message}); press its reset button or power-cycle it`,
    );
  }
  log(`rebooted: load() runs ${BOOT_CODE_FILE}; ${o.deviceId} will dial ${c.host}`);

  return {
    deviceId: o.deviceId,
    target: where,
    board: { id: c.board.id, name: c.board.name },
    host: c.host,
    files: sent,
    env: { BOARD: env.BOARD, VERSION: env.VERSION, CONSOLE: env.CONSOLE },
    db: redactUrl(o.db),
  };
}

/** Open the console, get its attention, run f, close. */
async function withConsole<T>(target: ConsoleTarget, debug: (l: string) => void, f: (c: ConsoleClient) => Promise<T>): Promise<T> {
  const t = await open(target);
  const cc = new ConsoleClient(t, (text) => debug(`console< ${JSON.stringify(text)}`));
  try {
    await cc.sync();
    return await f(cc);
  } finally {
    await cc.close().catch(() => {});
  }
}
