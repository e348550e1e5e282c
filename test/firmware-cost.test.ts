// The firmware's CPU per relay command on the real interpreter, counted in instructions by valgrind
// (test/helpers/firmware-cost.ts; instruction counts do not depend on the machine's load), held to
// the committed budget in test/firmware-cost-budget.json: more than 10 % over it fails with the figure.
// Skipped with a notice where valgrind or the interpreter is missing; in CI both must be there.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { firmwareCost, valgrindMissing } from './helpers/firmware-cost.js';
import { ESPRUINO_AVAILABLE } from './helpers/engines.js';

const budget = JSON.parse(readFileSync(new URL('./firmware-cost-budget.json', import.meta.url), 'utf8')) as {
  perCommand: number;
  handshake: number;
};
const missing = !ESPRUINO_AVAILABLE ? 'PROOFRIG_ESPRUINO is not set to the interpreter' : valgrindMissing();
if (missing && process.env.CI) throw new Error(`CI requires the firmware cost check: ${missing}`);
if (missing) console.log(`firmware cost check skipped: ${missing}`);

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
