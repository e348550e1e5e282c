// The Espruino engine's pin channel keeps the interpreter's time: its lines reach Node through a pipe,
// so a Node process that was busy takes a pin write and the read the firmware made 25 ms later in one
// go. Answered at once, that read would see the rig as it was at the write (a relay's armature not yet
// moved) and the firmware would report NO_FEEDBACK for a relay that worked, only because the host
// machine was busy (seen in CI, an MQTT link-drop spec on a loaded machine).
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '@proofrig/protocol/clock';
import type { RelayDef } from '@proofrig/protocol';
import { EspruinoEngine } from '../sim/src/espruino-engine.js';
import { Gpio, type Level } from '../sim/src/gpio.js';
import { SimNetwork } from '../sim/src/network.js';
import { RelayModel } from '../sim/src/relay-model.js';
import { ESPRUINO_AVAILABLE } from './helpers/engines.js';
import { until } from './helpers/e2e.js';

const K1: RelayDef = {
  ch: 1,
  name: 'K1',
  pin: 4,
  active_low: false,
  operate_ms: 10, // the armature moves 4-9 ms after the coil is energised
  release_ms: 10,
  settle_ms: 25,
  feedback: { kind: 'aux_contact', pin: 34, active_low: false, pull: 'external' },
};

// go(): switch K1 on, read its contact 25 ms later and show what was read on GPIO 5.
const FIRMWARE = `function go(){digitalWrite(4,1);setTimeout(function(){digitalWrite(5,digitalRead(34));},25);return 1;}`;

let engine: EspruinoEngine | undefined;
afterEach(() => {
  engine?.dispose();
  engine = undefined;
});

describe.skipIf(!ESPRUINO_AVAILABLE)('a pin read on the Espruino engine', () => {
  it('made 25 ms after a write sees the rig 25 ms after that write, even when Node took both lines at once', async () => {
    const gpio = new Gpio();
    gpio.setPowered(true);
    const relay = new RelayModel(K1, gpio, realClock, () => 0.5);
    const writes: { pin: number; level: Level; at: number }[] = [];
    let booted = false;
    engine = new EspruinoEngine({
      binary: process.env.PROOFRIG_ESPRUINO!,
      gpio,
      clock: realClock,
      network: new SimNetwork(realClock, () => {}),
      print: () => {},
      onWrite: (pin, level) => writes.push({ pin, level, at: Date.now() }),
      onPulse: () => {},
      onPwm: () => {},
      onBoard: () => (booted = true),
    });
    await engine.start(undefined, FIRMWARE);
    await until(() => booted, 20_000, 'the interpreter booted');
    expect(await engine.evaluate('typeof go', 10_000)).toBe('function');

    // Node busy for 800 ms right after asking: the write and the read 25 ms later wait in the pipe.
    void engine.evaluate('go()');
    const busyUntil = Date.now() + 800;
    while (Date.now() < busyUntil);

    await until(() => writes.some((w) => w.pin === 5), 10_000, 'the firmware showed what it read');
    const on = writes.find((w) => w.pin === 4)!;
    expect(on.at, 'the write reached Node only after it was busy').toBeGreaterThanOrEqual(busyUntil);
    expect(writes.find((w) => w.pin === 5)!.level, 'the contact had closed 25 ms after the write').toBe(1);
    expect(relay.state().contactClosed).toBe(true);
    relay.dispose();
  });
});
