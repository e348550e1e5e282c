// The whole system under seeded faults (chaos/): every invariant holds on a fixed budget of seeds,
// and a seed replays to the identical event trace. `npm run chaos -- --runs 10000` runs the big budget.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/src/run.js';

/**
 * CI budget: SEEDS seeds × 1 simulated minute of faults (each run adds 2 min of settling), split over
 * JOBS worker threads by the chaos tool itself (built into chaos/dist by `npm run build`). A seed
 * costs about 0.6 s of CPU (measured: 6.1 s of user time for 10 seeds under a load average of 20 on
 * this 2-core machine), so 100 seeds are about 60 s of CPU: about 30 s of wall time on 2 free cores,
 * more while the other test files run. PROOFRIG_CHAOS_SEEDS=300 is the bigger local check.
 */
const SEEDS = Number(process.env.PROOFRIG_CHAOS_SEEDS ?? 100);
const JOBS = Number(process.env.PROOFRIG_CHAOS_JOBS ?? 2);
/** Seeds with the climate rig (sensors, a relay proven by its load current) as a third device: about 0.35 s of CPU each. */
const SENSOR_SEEDS = Number(process.env.PROOFRIG_CHAOS_SENSOR_SEEDS ?? 20);
const FIRST = 1;
const CLI = new URL('../chaos/dist/cli.js', import.meta.url).pathname;

describe('chaos: host core, simulated rigs and agent clients under seeded faults', () => {
  it('the same seed replays to an identical event trace', async () => {
    const a = await runChaos({ seed: 4242, devices: 2, minutes: 1, trace: true });
    const b = await runChaos({ seed: 4242, devices: 2, minutes: 1, trace: true });
    expect(a.trace.length).toBeGreaterThan(500);
    expect(b.trace).toEqual(a.trace);
    expect(b.violations).toEqual(a.violations);
    const c = await runChaos({ seed: 4243, devices: 2, minutes: 1, trace: true });
    expect(c.trace).not.toEqual(a.trace);
  }, 120_000);

  it(`${SEEDS} seeds: every invariant holds (exactly-once, no false completed, no lost outcome, no unobserved claim, no drive after a fault)`, () => {
    expect(existsSync(CLI), `${CLI} is missing: npm run build builds it`).toBe(true);
    const r = spawnSync(process.execPath, [CLI, '--seed', String(FIRST), '--runs', String(SEEDS), '--minutes', '1', '--jobs', String(JOBS)], {
      encoding: 'utf8',
      timeout: 900_000,
    });
    const out = r.stdout ?? '';
    // A failing seed prints its violations and a one-line replay command; those lines are the failure message.
    const failures = out.split('\n').filter((l) => l.startsWith('FAIL ') || l.startsWith('  replay: '));
    expect(failures).toEqual([]);
    expect(r.status, `chaos tool exited ${r.status} (${r.signal ?? 'no signal'}):\n${out}\n${r.stderr}`).toBe(0);
    // The summary the tool printed covers every seed and shows real work: commands issued and faults injected.
    expect(out).toContain(`seeds ${FIRST}..${FIRST + SEEDS - 1} (${SEEDS} runs,`);
    const commands = Number(/commands (\d+);/.exec(out)?.[1]);
    const checks = Number(/invariant checks (\d+);/.exec(out)?.[1]);
    const faults = [...(/faults injected: (.*)/.exec(out)?.[1] ?? '').matchAll(/ (\d+)(,|$)/g)].reduce((s, m) => s + Number(m[1]), 0);
    expect(commands).toBeGreaterThan(SEEDS * 20);
    expect(faults).toBeGreaterThan(SEEDS * 20);
    expect(checks).toBeGreaterThan(commands);
  }, 900_000);

  it(`${SENSOR_SEEDS} seeds with the climate rig as a third device: no reading valid when its sensor NAKed, failed its CRC or had no power; no relay completed by its load current when none flowed; its seeds replay`, async () => {
    const a = await runChaos({ seed: 4242, devices: 3, minutes: 1, trace: true });
    const b = await runChaos({ seed: 4242, devices: 3, minutes: 1, trace: true });
    expect(b.trace).toEqual(a.trace);
    expect(a.trace.some((l) => / rig3 boot /.test(l))).toBe(true);
    const r = spawnSync(process.execPath, [CLI, '--seed', String(FIRST), '--runs', String(SENSOR_SEEDS), '--devices', '3', '--minutes', '1', '--jobs', String(JOBS)], {
      encoding: 'utf8',
      timeout: 600_000,
    });
    const out = r.stdout ?? '';
    expect(out.split('\n').filter((l) => l.startsWith('FAIL ') || l.startsWith('  replay: '))).toEqual([]);
    expect(r.status, `chaos tool exited ${r.status}:\n${out}\n${r.stderr}`).toBe(0);
    expect(out).toContain(`seeds ${FIRST}..${FIRST + SENSOR_SEEDS - 1} (${SENSOR_SEEDS} runs, 3 rigs each`);
    // The sensor faults and the blown load were really injected.
    for (const f of ['sensor_unplugged', 'sensor_crc', 'sensor_slow', 'sensor_stuck', 'hw_open_load']) expect(out, f).toMatch(new RegExp(`${f} [1-9]`));
  }, 600_000);
});
