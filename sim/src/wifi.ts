// Espruino's require('Wifi') for the ESP32, simulated: connect() always succeeds after WIFI_CONNECT_MS.
//
// There is no radio: the SSID and password are not checked, and net sockets work whether or not
// Wifi.connect was called (the rig's network is the host machine's). Events and callback shapes follow
// libs/network/esp32/jswrap_esp32_network.c: 'associated' {ssid, mac, channel}, then the connect
// callback (null), then 'connected' {ip, netmask, gw}; getIP(cb) calls cb(null, info).
import type { Realm } from './realm.js';

/** Simulated time from Wifi.connect() to having an IP address. */
export const WIFI_CONNECT_MS = 250;

export const SIM_IP = { ip: '192.168.4.20', netmask: '255.255.255.0', gw: '192.168.4.1' };
export const SIM_MAC = '24:0a:c4:00:00:01';
const AP_MAC = '24:0a:c4:00:00:fe';

type Station = 'off' | 'connecting' | 'connected';

export function createWifiModule(realm: Realm): Record<string, unknown> {
  const boot = realm.boot;
  let station: Station = 'off';
  let ssid = '';
  let hostname = 'espruino';
  let attempt = 0;
  const wifi: Record<string, unknown> = realm.obj();

  const later = (fn: () => void, ms = 0): void => boot.defer(fn, ms);
  const callback = (cb: unknown, ...args: unknown[]): void => {
    if (typeof cb === 'function') later(() => boot.call(cb, undefined, args));
  };

  const disconnectNow = (reason: string, msg: string): void => {
    if (station === 'off') return;
    const old = ssid;
    station = 'off';
    attempt++;
    later(() => realm.emit(wifi, 'disconnected', realm.obj({ ssid: old, mac: AP_MAC, reason, msg })));
  };

  Object.assign(wifi, {
    connect: realm.fn((name: unknown, options?: unknown, cb?: unknown) => {
      if (typeof options === 'function' && cb === undefined) {
        cb = options;
        options = undefined;
      }
      disconnectNow('8', 'assoc_leave');
      ssid = String(name);
      station = 'connecting';
      const mine = ++attempt;
      later(() => {
        if (mine !== attempt) return;
        station = 'connected';
        realm.emit(wifi, 'associated', realm.obj({ ssid, mac: AP_MAC, channel: '6' }));
        if (typeof cb === 'function') boot.call(cb, undefined, [null]);
        realm.emit(wifi, 'connected', realm.obj({ ...SIM_IP }));
      }, WIFI_CONNECT_MS);
    }),
    disconnect: realm.fn((cb?: unknown) => {
      disconnectNow('8', 'assoc_leave');
      callback(cb);
    }),
    getIP: realm.fn((cb?: unknown) => {
      const info = station === 'connected' ? realm.obj({ ...SIM_IP, mac: SIM_MAC }) : realm.obj({ mac: SIM_MAC });
      callback(cb, null, info);
      return info;
    }),
    getAPIP: realm.fn((cb?: unknown) => {
      const info = realm.obj({ ip: '0.0.0.0', netmask: '0.0.0.0', gw: '0.0.0.0', mac: AP_MAC });
      callback(cb, null, info);
      return info;
    }),
    getStatus: realm.fn((cb?: unknown) => {
      const st = realm.obj({
        mode: station === 'off' ? 'Off' : 'Station',
        station,
        ap: 'disabled',
        phy: '11n',
        powersave: 'none',
        savedMode: 'Station',
      });
      callback(cb, st);
      return st;
    }),
    getDetails: realm.fn((cb?: unknown) => {
      const d = realm.obj({ status: station, rssi: station === 'connected' ? -52 : 0, ssid, channel: 6 });
      callback(cb, d);
      return d;
    }),
    scan: realm.fn((cb?: unknown) => {
      callback(cb, realm.arr(ssid ? [realm.obj({ ssid, mac: AP_MAC, authMode: 'wpa2', channel: 6, rssi: -52 })] : []));
    }),
    setHostname: realm.fn((name: unknown, cb?: unknown) => {
      hostname = String(name);
      callback(cb);
    }),
    getHostname: realm.fn((cb?: unknown) => {
      callback(cb, hostname);
      return hostname;
    }),
    startAP: realm.fn((_ssid: unknown, _options?: unknown, cb?: unknown) => {
      callback(typeof _options === 'function' ? _options : cb, null);
    }),
    stopAP: realm.fn((cb?: unknown) => callback(cb)),
    save: realm.fn(() => undefined),
    restore: realm.fn(() => undefined),
    setConfig: realm.fn(() => undefined),
  });
  return wifi;
}
