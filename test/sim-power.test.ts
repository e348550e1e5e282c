// Power: boot, power loss, reboot and shutdown. Nothing of a dead boot may ever run again; flash survives.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { firmware } from './helpers/sim-script.js';
import type { BoardDef } from '../shared-protocol/src/board.js';
import { CONFIG_FILE } from '../shared-protocol/src/constants.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { SimRig } from '@proofrig/sim';

const board = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8')) as BoardDef;
const config = { dev: 'rig1', secret: '00', host: 'ws://127.0.0.1:1/device', board };

function make(src: string, seed = 5) {
  const clock = new VirtualClock(0);
  const lines: string[] = [];
  const path = firmware(src);
  const rig = new SimRig({ firmwarePath: path, clock, seed, console: (l) => lines.push(l), config });
  return { rig, clock, lines, path };
}

describe('boot', () => {
  it("evaluates the firmware file in a fresh context and emits 'boot' with the boot count", () => {
    const { rig, lines } = make(`var n = (typeof n === 'undefined') ? 1 : n + 1; print('n', n);`);
    const boots: number[] = [];
    rig.on('boot', (c: number) => boots.push(c));
    rig.boot();
    rig.boot(); // a second power-on is a hard reset: nothing of the first context is left
    expect(lines).toEqual(['n 1', 'n 1']);
    expect(boots).toEqual([1, 2]);
    expect(rig.bootCount).toBe(2);
  });

  it('reads the firmware file from disk at every boot', () => {
    const { rig, lines, path } = make(`print('v1');`);
    rig.boot();
    writeFileSync(path, `print('v2');`);
    rig.boot();
    expect(lines).toEqual(['v1', 'v2']);
  });

  it('throws a clear error when the firmware file is missing', () => {
    const clock = new VirtualClock(0);
    const rig = new SimRig({ firmwarePath: '/nonexistent/firmware/dist/proofrig.js', clock });
    expect(() => rig.boot()).toThrow(/cannot read the firmware file \/nonexistent\/firmware\/dist\/proofrig\.js/);
  });

  it('writes the config to Storage before the first boot and takes the board from it', () => {
    const { rig, lines } = make(`print(require('Storage').readJSON('${CONFIG_FILE}').dev);`);
    expect(rig.board?.id).toBe('relay-rig-4ch');
    expect(rig.storage.readJSON(CONFIG_FILE)).toEqual(config);
    rig.boot();
    expect(lines).toEqual(['rig1']);
  });
});

describe('power loss', () => {
  const COUNTER = `
    var s = require('Storage');
    var boots = (s.readJSON('boots.json', true) || 0) + 1;
    s.writeJSON('boots.json', boots);
    print('boot', boots);`;

  it('Storage persists across power loss and the firmware runs again after offMs', () => {
    const { rig, clock, lines } = make(COUNTER);
    const events: string[] = [];
    rig.on('powerloss', () => events.push(`powerloss@${clock.now()}`));
    rig.on('boot', (n: number) => events.push(`boot${n}@${clock.now()}`));
    rig.boot();
    clock.advance(1000);
    rig.powerLoss();
    clock.advance(299);
    expect(rig.running).toBe(false);
    clock.advance(1);
    expect(lines).toEqual(['boot 1', 'boot 2']);
    expect(events).toEqual(['boot1@0', 'powerloss@1000', 'boot2@1300']);
    expect(rig.storage.read('boots.json')).toBe('2');
  });

  it('no timer, interval, watch, promise or Wifi callback of the old boot ever fires afterwards', () => {
    const { rig, clock, lines } = make(`
      var s = require('Storage');
      var g = (s.readJSON('b', true) || 0) + 1; s.writeJSON('b', g);
      setTimeout(function () { print('timeout', g); }, 500);
      setInterval(function () { print('interval', g); }, 400);
      pinMode(23, 'output'); digitalWrite(23, 1);
      setWatch(function () { print('watch', g); }, 34, { repeat: true });
      new Promise(function (res) { setTimeout(res, 450); }).then(function () { print('promise', g); });
      require('Wifi').connect('lab', { password: 'x' }, function () { print('wifi', g); });`);
    rig.boot();
    clock.advance(100);
    rig.powerLoss(10_000);
    rig.setFault('relay1', 'welded'); // an edge on the watched pin while the chip is off
    clock.advance(9_999);
    expect(lines).toEqual([]);
    clock.advance(1 + 1000); // boot 2 runs for a second
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((l) => !l.endsWith(' 2'))).toEqual([]);
    expect(lines).toEqual(expect.arrayContaining(['wifi 2', 'interval 2', 'promise 2', 'timeout 2']));
  });

  it('pins float and relays de-energise while the power is off', () => {
    const { rig, clock } = make(`pinMode(23, 'output'); digitalWrite(23, 0);`);
    rig.boot();
    clock.advance(20);
    expect(rig.relay(1)).toEqual({ energised: true, contactClosed: true });
    rig.powerLoss(500);
    expect(rig.pinLevel(23)).toBe(0);
    expect(rig.relay(1).energised).toBe(false);
    clock.advance(20);
    expect(rig.relay(1).contactClosed).toBe(false);
    expect(rig.pins.getMode(23)).toBe(undefined);
  });

  it('a second powerLoss while off restarts the off period', () => {
    const { rig, clock } = make(`print('up');`);
    rig.boot();
    rig.powerLoss(100);
    clock.advance(80);
    rig.powerLoss(100);
    clock.advance(80);
    expect(rig.bootCount).toBe(1);
    clock.advance(20);
    expect(rig.bootCount).toBe(2);
  });
});

describe('reboot from the firmware', () => {
  it('E.reboot() resets the chip: the firmware runs again shortly, nothing after the call reaches the pins', () => {
    const { rig, clock, lines } = make(`
      print('up');
      if (require('Storage').read('once') === undefined) {
        require('Storage').write('once', '1');
        setTimeout(function () { E.reboot(); pinMode(4, 'output'); digitalWrite(4, 1); }, 10);
      }`);
    rig.boot();
    clock.advance(200);
    expect(lines.filter((l) => l === 'up')).toHaveLength(2);
    expect(rig.bootCount).toBe(2);
    expect(rig.writes(4)).toBe(0);
  });

  it('a manual watchdog that is not kicked resets the chip', () => {
    const { rig, clock } = make(`
      if (require('Storage').read('wd') === undefined) { require('Storage').write('wd', '1'); E.enableWatchdog(1, false); }`);
    rig.boot();
    clock.advance(999);
    expect(rig.bootCount).toBe(1);
    clock.advance(200);
    expect(rig.bootCount).toBe(2);
  });

  it('a kicked watchdog does not', () => {
    const { rig, clock } = make(`E.enableWatchdog(1, false); setInterval(function () { E.kickWatchdog(); }, 500);`);
    rig.boot();
    clock.advance(5000);
    expect(rig.bootCount).toBe(1);
  });
});

describe('shutdown', () => {
  it('is final and idempotent: timers stop, no reboot, boot() refuses', () => {
    const { rig, clock, lines } = make(`setInterval(function () { print('tick'); }, 100);`);
    rig.boot();
    clock.advance(150);
    rig.powerLoss(100);
    rig.shutdown();
    rig.shutdown();
    clock.advance(1000);
    expect(lines).toEqual(['tick']);
    expect(rig.bootCount).toBe(1);
    expect(() => rig.boot()).toThrow(/shut down/);
    expect(clock.timers).toBe(0);
  });
});
