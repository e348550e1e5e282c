// The chip-speed tier's machinery (sim/src/chip-speed.ts): the quota arithmetic, the reasons it gives
// where no quota can be set, and, where one can, an interpreter really held to the chip's speed.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChipCgroup, CHIP_NS_PER_INSTRUCTION, CPU_CGROUP_ROOT, WORKLOAD, WORKLOAD_INSTRUCTIONS, WORKLOAD_N, calibrate, chipSpeedUnavailable, quotaFor } from '../sim/src/chip-speed.js';
import pino from 'pino';
import { runSimCommand } from '../host/src/cli/sim.js';
import { serve } from '../host/src/serve.js';
import { CHIP_SPEED, ESPRUINO_AVAILABLE } from './helpers/engines.js';
import { RELAY_BOARD, until } from './helpers/e2e.js';

describe('the quota for a chip speed', () => {
  it('is the share machine ns / chip ns of one CPU, at the kernel minimum quota of 1 ms and the shortest period that gives it', () => {
    const q = quotaFor(0.125, 16);
    expect(q.share).toBeCloseTo(0.0078125, 7);
    expect(q).toMatchObject({ quotaUs: 1000, periodUs: 128000, chipNs: 16, machineNs: 0.125 });
    expect(q.quotaUs / q.periodUs).toBeCloseTo(q.share, 4);
  });

  it('keeps the period at 10 ms at least, and the share at most one CPU', () => {
    expect(quotaFor(4, 16)).toMatchObject({ periodUs: 10000, quotaUs: 2500 });
    expect(quotaFor(32, 16)).toMatchObject({ periodUs: 10000, quotaUs: 10000 });
  });

  it('refuses a share that needs a period over the kernel maximum of 1 s', () => {
    expect(() => quotaFor(0.01, 16)).toThrow(/1 s maximum/);
  });

  it('aims at the slow end of the ESP32 estimate, 16 ns per x86-64 instruction', () => {
    expect(CHIP_NS_PER_INSTRUCTION).toBe(16);
    expect(WORKLOAD_INSTRUCTIONS).toBeGreaterThan(1e8);
  });
});

describe('where no quota can be set', () => {
  it('names the missing cgroup v1 cpu controller', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-nocg-'));
    expect(chipSpeedUnavailable(dir)).toMatch(/cgroup v1 cpu controller.*not mounted/);
  });

  it('names the cgroup it could not create (e.g. not root)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-nocg-'));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), '-1');
    // The probe cgroup cannot be made: a file already has its name (as root, permissions would not stop it).
    writeFileSync(join(dir, `proofrig-probe-${process.pid}`), '');
    expect(chipSpeedUnavailable(dir)).toMatch(/cannot create a cgroup under .*EEXIST/);
  });
});

describe.skipIf(!CHIP_SPEED)('an interpreter at chip speed (cgroup v1 quota)', () => {
  it('runs a counted workload no faster than the chip would, in its own cgroup, which is gone afterwards', async () => {
    const bin = process.env.PROOFRIG_ESPRUINO!;
    const speed = calibrate(bin);
    expect(speed.machineNs).toBeGreaterThan(0.01);
    expect(speed.machineNs).toBeLessThan(5);
    const cg = new ChipCgroup(speed);
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-chip-'));
    // A tenth of the counted workload: about WORKLOAD_INSTRUCTIONS / 10 instructions.
    const n = WORKLOAD_N / 10;
    writeFileSync(join(dir, 'w.js'), `${WORKLOAD}\nprint('done '+work(${n}));\n`);
    const [cmd, args] = cg.wrap(bin, [join(dir, 'w.js')]);
    const t0 = Date.now();
    const out = await new Promise<string>((res) => {
      const c = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] });
      let text = '';
      c.stdout.on('data', (d) => (text += d));
      c.on('exit', () => res(text));
    });
    const wallMs = Date.now() - t0;
    expect(out).toMatch(/done \d+/);
    const chipMs = ((WORKLOAD_INSTRUCTIONS / 10) * speed.chipNs) / 1e6;
    console.log(`work(${n}) at chip speed: ${wallMs} ms wall, the chip's ${chipMs.toFixed(0)} ms expected (quota ${speed.quotaUs}/${speed.periodUs} µs)`);
    // The quota is a floor on the time whatever the load (an upper bound would depend on the load).
    expect(wallMs).toBeGreaterThan(chipMs * 0.7);
    expect(cg.stat().nr_throttled).toBeGreaterThan(0);
    expect(cg.remove()).toBe(true);
    expect(existsSync(cg.path)).toBe(false);
    expect(cg.path.startsWith(CPU_CGROUP_ROOT)).toBe(true);
  }, 60000);
});

describe('--chip-speed on proofrig sim and serve', () => {
  it('needs the Espruino engine: sim exits 2 with BAD_OPTION, serve refuses before anything starts', async () => {
    let err = '';
    const code = await runSimCommand({ board: RELAY_BOARD, consolePort: 0, host: 'ws://127.0.0.1:9/device', chipSpeed: true, engine: 'vm' }, { stderr: { write: (t: string) => (err += t) } });
    expect(code).toBe(2);
    expect(err).toMatch(/BAD_OPTION: --chip-speed needs --engine espruino/);
    const db = join(mkdtempSync(join(tmpdir(), 'proofrig-chip-')), 'j.db');
    await expect(serve({ db, port: 0, sims: [{ boardFile: RELAY_BOARD }], logger: pino({ level: 'silent' }), chipSpeed: true })).rejects.toThrow(/--chip-speed needs --engine espruino/);
  });

  it.skipIf(!CHIP_SPEED)('sim --engine espruino --chip-speed prints the calibration and runs the interpreter in its cgroup', async () => {
    let out = '';
    let cgroup: string | undefined;
    const code = await runSimCommand(
      { board: RELAY_BOARD, consolePort: 0, blank: true, host: 'ws://127.0.0.1:9/device', engine: 'espruino', chipSpeed: true, quiet: true },
      {
        stdout: { write: (t: string) => (out += t) },
        until: async (r) => {
          // The interpreter is up (its pin shim answers), inside its cgroup.
          await until(() => r.espruino!.evaluate('1', 2000).then((v) => v === 1), 30000, 'the interpreter up');
          cgroup = r.espruino?.chipCgroup?.path;
        },
      },
    );
    expect(code).toBe(0);
    expect(out).toMatch(/at chip speed: this machine [\d.]+ ns per interpreter instruction, chip 16 ns: a quota of \d+ µs per \d+ µs/);
    expect(cgroup).toMatch(/^\/sys\/fs\/cgroup\/cpu\/proofrig-chip-/);
  }, 60000);

  it.skipIf(!ESPRUINO_AVAILABLE || CHIP_SPEED || !chipSpeedUnavailable())('where no quota can be set, sim --chip-speed says why and exits 2', async () => {
    let err = '';
    const code = await runSimCommand({ board: RELAY_BOARD, consolePort: 0, blank: true, host: 'x', engine: 'espruino', chipSpeed: true }, { stderr: { write: (t: string) => (err += t) } });
    expect(code).toBe(2);
    expect(err).toMatch(/NO_CHIP_SPEED: chip speed/);
  });
});
