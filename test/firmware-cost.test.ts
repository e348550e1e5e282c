// The firmware's CPU per relay command on the real interpreter, counted in instructions by valgrind
// (bench/src/cost-harness.ts; instruction counts do not depend on the machine's load), held to
// the committed budget in test/firmware-cost-budget.json: more than 10 % over it fails with the figure.
// Skipped with a notice where valgrind or the interpreter is missing; in CI both must be there.
// The boards' device_processing_max_ms must cover the ESP32 estimate of that budget.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkBoard } from '@proofrig/protocol';
import { esp32Ms, firmwareCost, valgrindMissing } from '@proofrig/bench/cost-harness';
import { ESPRUINO_AVAILABLE } from './helpers/engines.js';

const budget = JSON.parse(readFileSync(new URL('./firmware-cost-budget.json', import.meta.url), 'utf8')) as {
  perCommand: number;
  handshake: number;
};
const missing = !ESPRUINO_AVAILABLE ? 'PROOFRIG_ESPRUINO is not set to the interpreter' : valgrindMissing();
if (missing && process.env.CI) throw new Error(`CI requires the firmware cost check: ${missing}`);
if (missing) console.log(`firmware cost check skipped: ${missing} (apt-get install valgrind)`);

describe.skipIf(!!missing)('firmware CPU per relay command (callgrind on the real interpreter)', () => {
  it('stays within 10 % of the committed budget, per command and for the handshake', { timeout: 180_000 }, async () => {
    const c = await firmwareCost({ binary: process.env.PROOFRIG_ESPRUINO!, commands: 20 });
    const per = `${(c.perCommand / 1e6).toFixed(2)} M instructions per relay command (budget ${(budget.perCommand / 1e6).toFixed(2)} M, test/firmware-cost-budget.json)`;
    const hs = `${(c.handshake / 1e6).toFixed(2)} M instructions for the handshake (budget ${(budget.handshake / 1e6).toFixed(2)} M)`;
    console.log(`firmware cost: ${per}; ${hs}`);
    expect(c.perCommand, per).toBeLessThanOrEqual(budget.perCommand * 1.1);
    expect(c.handshake, hs).toBeLessThanOrEqual(budget.handshake * 1.1);
    // A measurement that counted nothing would pass any budget.
    expect(c.perCommand, per).toBeGreaterThan(100_000);
  });
});

describe('budgets from the measurement', () => {
  const dir = new URL('../boards/', import.meta.url).pathname;
  const boards = readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'board.schema.json');

  it.each(boards)('%s: device_processing_max_ms covers the ESP32 estimate of the committed per-command budget', (f) => {
    const b = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { device_processing_max_ms: number };
    const worst = esp32Ms(budget.perCommand * 1.1)[1];
    expect(b.device_processing_max_ms, `${f}: ${b.device_processing_max_ms} ms against ${worst.toFixed(0)} ms (ESP32 worst case of 1.1x the budget)`).toBeGreaterThanOrEqual(worst);
  });

  it('board check refuses a relay or axis name the firmware would send through its slow text path, and keeps any label', () => {
    const b = JSON.parse(readFileSync(join(dir, 'relay-rig-4ch.json'), 'utf8')) as Record<string, any>;
    const named = (name: string, label?: string) => checkBoard({ ...b, relays: [{ ...b.relays[0], name, label: label ?? b.relays[0].label }] });
    const r = named('Lüfter');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.errors.join('\n')).toMatch(/relays\[0\]\.name: "Lüfter" must be printable ASCII/);
    expect(named('Luefter', 'Lüfter (Prüfstand)').ok).toBe(true);
    const s = JSON.parse(readFileSync(join(dir, 'stepper-rig.json'), 'utf8')) as Record<string, any>;
    const axis = checkBoard({ ...s, steppers: [{ ...s.steppers[0], name: 'Schlitten → X' }] });
    expect(!axis.ok && axis.errors.join('\n')).toMatch(/steppers\[0\]\.name: .* must be printable ASCII/);
  });
});
