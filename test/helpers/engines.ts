// Which engines the end-to-end suites run on: always the vm; the real Espruino interpreter when
// PROOFRIG_ESPRUINO names one. In CI the Espruino tier is required: a missing interpreter fails the
// run instead of skipping it quietly. The chip-speed tier (the interpreter under a CPU quota that
// makes it as slow as an ESP32, sim/src/chip-speed.ts) runs with PROOFRIG_CHIP_SPEED=1 and in CI
// (PROOFRIG_CHIP_SPEED=0 turns it off); where no quota can be set it is skipped with a notice, and
// in CI that fails the run.
import { existsSync } from 'node:fs';
import { it } from 'vitest';
import { chipSpeedUnavailable, type Engine } from '@proofrig/sim';
import { CHIP_WANTED } from './chip-phase-files.js';

const bin = process.env.PROOFRIG_ESPRUINO;
export const ESPRUINO_AVAILABLE = !!bin && existsSync(bin);

if (!ESPRUINO_AVAILABLE && process.env.CI)
  throw new Error(
    `CI requires the Espruino tier: PROOFRIG_ESPRUINO=${bin ?? '(unset)'} is not an interpreter; .ci/run builds one with scripts/build-espruino.sh`,
  );

/** A tier of the end-to-end suites: an engine, or 'chip-speed' (the Espruino engine under a chip-speed CPU quota). */
export type Tier = Engine | 'chip-speed';

const chipWhyNot = !CHIP_WANTED ? undefined : !ESPRUINO_AVAILABLE ? 'it needs the Espruino interpreter (PROOFRIG_ESPRUINO)' : chipSpeedUnavailable();
/** The chip-speed tier runs in this process. */
export const CHIP_SPEED = CHIP_WANTED && !chipWhyNot;

if (CHIP_WANTED && chipWhyNot && process.env.CI) throw new Error(`CI requires the chip-speed tier, and here ${chipWhyNot}`);

/**
 * Where the chip-speed tier is on, `npm test` runs in two phases (vitest.config.ts): `suite`, every
 * file with the chip-speed tier left out, then `chip`: only the chip-speed specs of the files in
 * test/helpers/chip-phase-files.ts, with nothing else running. The quota holds the interpreter to the
 * chip's share of a CPU; beside the whole suite on two cores it is not sure to get that share, and the
 * tier's outcomes then depend on the machine's load (a CI run ended two chip-speed specs `timeout`
 * that pass alone). Unset (a plain `npx vitest run`): one phase, every tier.
 */
export const PHASE = process.env.PROOFRIG_TIER_PHASE as 'suite' | 'chip' | undefined;
/** Specs outside the tiers run in the `suite` phase only. */
export const SUITE_PHASE = PHASE !== 'chip';

let chipNoticed = false;
/** The chip-speed tier as a list for describe.each: ['chip-speed'], or [] (with a one-line notice once) when it does not run. */
export function chipSpeedTier(): Tier[] {
  if (CHIP_SPEED) return PHASE === 'suite' ? [] : ['chip-speed'];
  if (!chipNoticed) {
    chipNoticed = true;
    console.log(
      CHIP_WANTED
        ? `Chip-speed tier skipped: ${chipWhyNot}`
        : 'Chip-speed tier off: set PROOFRIG_CHIP_SPEED=1 (as root, with the cgroup v1 cpu controller) to also run the end-to-end scenarios on an interpreter slowed to an ESP32',
    );
  }
  return [];
}

/** The engine a tier runs on. */
export function engineOf(tier: Tier): Engine {
  return tier === 'chip-speed' ? 'espruino' : tier;
}

/**
 * The end-to-end tiers for a suite that runs a chosen few of its specs at chip speed as well:
 * `picked(tier, yes)` is `it` on the other tiers, and at chip speed `it` when picked, else `it.skip`.
 */
export function tiersUnderTest(): Tier[] {
  return PHASE === 'chip' ? chipSpeedTier() : [...enginesUnderTest(), ...chipSpeedTier()];
}
/** The Espruino engine and the chip-speed tier (for suites that need the real interpreter), by phase. */
export function interpreterTiers(): Tier[] {
  return PHASE === 'chip' ? chipSpeedTier() : ['espruino', ...chipSpeedTier()];
}
export function picked(tier: Tier, atChipSpeed: boolean): typeof it | typeof it.skip {
  if (tier !== 'chip-speed') return it;
  return atChipSpeed ? chipPaced(it) : it.skip;
}

/**
 * At chip speed a boot alone takes 8-9 s of the throttled interpreter and a power-cycle spec boots
 * twice: such a spec gets CHIP_TEST_MS unless it names its own timeout (the suite's 30 s was
 * measured too short once on a fresh clone).
 */
const CHIP_TEST_MS = 120_000;
/**
 * The chip-speed project retries a failed spec once (vitest.config.ts): a spec that fails twice
 * fails the run. The first failure is printed here in full (with the command's story where the
 * spec gives one), so a retry that passed still leaves its evidence in the run's output.
 */
function chipPaced<T extends typeof it | typeof it.fails>(base: T): T {
  return ((name: string, fn: () => unknown, timeout?: number) =>
    base(
      name,
      async () => {
        try {
          await fn();
        } catch (err) {
          console.log(`chip-speed spec failed (retried once): ${name}\n${err instanceof Error ? err.message : String(err)}`);
          throw err;
        }
      },
      timeout ?? CHIP_TEST_MS,
    )) as unknown as T;
}

let noticed = false;
/** The engines to run a suite on (prints the one-line notice once when the Espruino tier is skipped). */
export function enginesUnderTest(): Engine[] {
  if (ESPRUINO_AVAILABLE) return ['vm', 'espruino'];
  if (!noticed) {
    noticed = true;
    console.log('Espruino tier skipped: set PROOFRIG_ESPRUINO=$(scripts/build-espruino.sh | tail -n 1) to also run the end-to-end suites on the real interpreter');
  }
  return ['vm'];
}

/**
 * Today's firmware takes its boot id from E.hwRand, which restarts the same sequence after every
 * real boot, so a power cycle of the interpreter looks like a network blip to the host (issue 8,
 * item 3). Tests that power-cycle the Espruino engine are marked `it.fails` while this is true; set
 * it to false when the boot-id fix is merged and they must pass.
 */
export const BOOT_ID_REPEATS_ON_ESPRUINO = false;

/**
 * `it` for a test that power-cycles the rig; `it.fails` on the Espruino engine while the boot id
 * repeats; `it.skip` at chip speed unless picked (see `picked`).
 */
export function rebootTest(engine: Tier, atChipSpeed = true): typeof it | typeof it.fails | typeof it.skip {
  if (engine === 'chip-speed' && !atChipSpeed) return it.skip;
  const base = engineOf(engine) === 'espruino' && BOOT_ID_REPEATS_ON_ESPRUINO ? it.fails : it;
  return engine === 'chip-speed' ? chipPaced(base) : base;
}
