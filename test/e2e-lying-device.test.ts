// A firmware double that lies: the real built firmware with one verdict changed so that a relay
// with no feedback (channel 4) reports "completed" with no evidence. No layer of the host may
// pass that on to an agent as completed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { FIRMWARE_FILE } from '../host/src/paths.js';
import { firmware } from './helpers/sim-script.js';
import { startE2E, type E2E } from './helpers/e2e.js';

const TRUTH = '"unverified","none",!1,void 0,n.name+" (GPIO"';
const LIE = '"completed","none",!1,void 0,n.name+" (GPIO"';

let e: E2E;
beforeAll(async () => {
  const src = readFileSync(FIRMWARE_FILE, 'utf8');
  // If the bundle's shape changes, this must fail loudly rather than test the honest firmware.
  expect(src.split(TRUTH)).toHaveLength(2);
  e = await startE2E({ firmwareFile: firmware(src.replace(TRUTH, LIE)) });
});
afterAll(() => e?.close());

describe('a device that claims "completed" without evidence', () => {
  it('never reaches the agent as completed: its result frame is refused and the command ends timeout, outcome unknown', async () => {
    const { first, final } = await e.act('relay_set', { device_id: 'relay-rig-4ch', channel: 4, on: true });
    // A relay sends no ack (its result says everything): with the result refused the command never
    // leaves 'sent' until the host's deadline ends it.
    expect(['sent', 'timeout']).toContain(first.state);
    expect(first.verified).toBe(false);
    expect(final).toMatchObject({ state: 'timeout', error_code: 'TIMEOUT', verified: false, executed: false });
    expect(final.detail).toMatch(/says the command is done but its result never arrived/);
    const refused = e.logs.filter((l) => JSON.stringify(l).includes('completed requires verified evidence'));
    expect(refused.length).toBeGreaterThan(0);
  });

  it('an honest channel on the same lying firmware still completes with its evidence', async () => {
    const { final } = await e.act('relay_set', { device_id: 'relay-rig-4ch', channel: 1, on: true });
    expect(final).toMatchObject({ state: 'completed', evidence: 'aux_contact', verified: true });
  });
});
