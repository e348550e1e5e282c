// Whether the chip-speed tier is asked for, and the test files that have one: vitest.config.ts runs
// their chip-speed specs in a phase of their own, after the rest of the suite (test/helpers/engines.ts,
// PHASE). test/chip-phase.test.ts checks that the list names exactly the files that use the tier.
export const CHIP_PHASE_FILES = ['test/e2e-relay.test.ts', 'test/e2e-stepper.test.ts', 'test/e2e-power-cycle.test.ts', 'test/e2e-fan-servo.test.ts', 'test/upload-e2e.test.ts'];

/** The chip-speed tier is asked for: PROOFRIG_CHIP_SPEED=1, or CI unless PROOFRIG_CHIP_SPEED=0. */
export const CHIP_WANTED = process.env.PROOFRIG_CHIP_SPEED === '1' || (!!process.env.CI && process.env.PROOFRIG_CHIP_SPEED !== '0');
