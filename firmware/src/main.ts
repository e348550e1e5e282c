// proofrig firmware entry: runs at load (saved as .bootcde on the chip, evaluated as is by the
// simulator). Reads the rig config from Storage, sets the pins safe, joins Wi-Fi if configured
// and keeps a session with the host.
import type { RigConfig } from '@proofrig/protocol';
import { CONFIG_FILE, isId } from '@proofrig/protocol';
import { clockInit } from './clock';
import { bootId, countBoot } from './ident';
import { wsUrl } from '@proofrig/protocol/wscodec';
import { mqttUrl } from '@proofrig/protocol/mqttcodec';
import { execFrame, execInit, execResend } from './exec';
import { sessionStart } from './session';

const CONFIG_RETRY_MS = 5000;
const WIFI_RETRY_MIN = 1000;
const WIFI_RETRY_MAX = 30000;

function log(s: string): void {
  console.log('proofrig: ' + s);
}

/** A sensor of that id is in the list (a load_current feedback names one). */
function hasSensor(ss: unknown, id: unknown): boolean {
  if (!Array.isArray(ss)) return false;
  for (let i = 0; i < ss.length; i++) if (ss[i] && ss[i].id === id) return true;
  return false;
}

/** Why the stored config cannot run this rig, or null. The uploader validated the board fully. */
function configError(c: unknown): string | null {
  if (typeof c !== 'object' || c === null) return 'missing or not JSON';
  const g = c as Record<string, any>;
  if (!isId(g.dev)) return 'dev must be the device id';
  if (typeof g.secret !== 'string' || !g.secret) return 'secret must be a non-empty hex string';
  // The bundle's transport decides which URL it can dial (__LINK_MQTT__: tsup.config.ts).
  if (__LINK_MQTT__) {
    if (!mqttUrl(g.host)) return 'host must be mqtt://HOST:PORT (this is the MQTT build of the firmware)';
  } else if (!wsUrl(g.host)) return 'host must be ws://HOST:PORT/PATH';
  if (g.wifi !== undefined && (typeof g.wifi !== 'object' || !g.wifi || typeof g.wifi.ssid !== 'string' || typeof g.wifi.pass !== 'string'))
    return 'wifi must be {ssid, pass}';
  const b = g.board;
  if (typeof b !== 'object' || !b || typeof b.id !== 'string' || !Array.isArray(b.relays)) return 'board must be a board definition';
  for (let i = 0; i < b.relays.length; i++) {
    const r = b.relays[i];
    if (typeof r !== 'object' || !r || typeof r.ch !== 'number' || typeof r.pin !== 'number' || typeof r.active_low !== 'boolean' ||
      typeof r.settle_ms !== 'number' || typeof r.name !== 'string' || typeof r.feedback !== 'object' || !r.feedback)
      return 'board.relays[' + i + '] is incomplete';
    const fb = r.feedback;
    // Plain ifs: the interpreter mis-parsed a nested ?: here (it reported "Got EOF expected '}'" at boot).
    let bad = fb.kind !== 'pin_readback' && fb.kind !== 'none';
    if (fb.kind === 'aux_contact') bad = typeof fb.pin !== 'number' || typeof fb.active_low !== 'boolean';
    if (fb.kind === 'load_current') bad = !hasSensor(b.sensors, fb.sensor) || typeof fb.on_above !== 'number' || typeof fb.off_below !== 'number';
    if (bad) return 'board.relays[' + i + '].feedback is invalid';
  }
  return null;
}

/** New on every boot of every device (ident.ts), so the host can tell a restart from a reconnect. */
let BOOT = '';
let cfg: RigConfig;
let wifiWait = WIFI_RETRY_MIN;
let sessionStarted = false;

function startLink(): void {
  if (sessionStarted) return;
  sessionStarted = true;
  sessionStart(cfg, BOOT, execFrame, execResend);
}

function wifiJoin(): void {
  const w = cfg.wifi as { ssid: string; pass: string };
  try {
    (require('Wifi') as EspWifi).connect(w.ssid, { password: w.pass }, wifiDone);
  } catch (e) {
    wifiDone(e);
  }
}

function wifiDone(err: unknown): void {
  if (err) {
    log('Wi-Fi "' + (cfg.wifi && cfg.wifi.ssid) + '" failed (' + err + '); retrying in ' + wifiWait + ' ms');
    setTimeout(wifiJoin, wifiWait);
    wifiWait = Math.min(wifiWait * 2, WIFI_RETRY_MAX);
    return;
  }
  log('Wi-Fi connected');
  startLink();
}

function boot(): void {
  let c: unknown;
  try {
    c = (require('Storage') as EspStorage).readJSON(CONFIG_FILE, true);
  } catch (e) {
    c = undefined;
  }
  const why = configError(c);
  if (why) {
    log('no usable rig config in Storage file "' + CONFIG_FILE + '" (' + why + '); upload one with `npm run upload`. Retrying in ' + CONFIG_RETRY_MS / 1000 + ' s');
    setTimeout(boot, CONFIG_RETRY_MS);
    return;
  }
  cfg = c as RigConfig;
  BOOT = bootId(cfg.dev, cfg.secret);
  execInit(cfg.board);
  log('fw ' + __FW_VERSION__ + ', boot ' + BOOT + ', device ' + cfg.dev + ', board ' + cfg.board.id);
  if (cfg.wifi) wifiJoin();
  else startLink();
}

countBoot();
clockInit();
boot();
