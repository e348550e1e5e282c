// Chip speed: run the Espruino interpreter no faster than an ESP32 would run the same code, by giving
// its process a CPU quota (cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, as root).
//
// Calibration, from instruction counts: WORKLOAD (a fixed script shaped like the firmware's hot
// paths: JSON, per-byte masking into a Uint8Array, a string comparison loop, a ring scan) costs
// WORKLOAD_INSTRUCTIONS x86-64 instructions on the interpreter build.sh makes (-Og, the ESP32
// board's flag), counted once with valgrind callgrind (`node scripts/chip-count.mjs` recounts it).
// This machine's CPU time for it gives its ns per instruction; an ESP32 (240 MHz, in-order, code
// from flash through a 32 KB cache: 1.2-1.5x the instructions at 0.4-0.8 IPC) needs about 6-16 ns
// per x86-64 instruction. The quota is period x machine ns / chip ns: the slow end (16 ns) by
// default, the chip's worst case, which the host's deadlines have to survive.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where the cgroup v1 cpu controller is mounted on these machines. */
export const CPU_CGROUP_ROOT = '/sys/fs/cgroup/cpu';
/** ESP32 ns per x86-64 interpreter instruction: the slow end of the 6-16 ns estimate. */
export const CHIP_NS_PER_INSTRUCTION = 16;
/** The calibration script's function; `work(WORKLOAD_N)` is what is counted and timed. */
export const WORKLOAD =
  'function mask(b,m){var o=new Uint8Array(b.length);for(var i=0;i<b.length;i++)o[i]=b.charCodeAt(i)^m[i&3];return o;}' +
  'function eq(a,b){var d=0;for(var i=0;i<a.length;i++)d|=a.charCodeAt(i)^b.charCodeAt(i);return d===0;}' +
  "function work(n){var ring=[],x=0,s,o,m,u,h;for(var i=0;i<n;i++){s=JSON.stringify({type:'cmd',id:'c'+i,ch:i&3,on:!!(i&1)});" +
  'o=JSON.parse(s);m=[E.hwRand()&255,i&255,x&255,7];u=mask(s,m);h="";for(var k=0;k<u.length;k+=4)h+=String.fromCharCode(97+(u[k]&15));' +
  'if(eq(h,h))x=(x+h.length+o.ch)&0xffff;for(var j=0;j<ring.length;j++)if(ring[j]===o.id)x++;ring.push(o.id);if(ring.length>16)ring.shift();}return x;}';
export const WORKLOAD_N = 200;
/**
 * Instructions of `work(200)`: callgrind's total for a run of WORKLOAD + `print(work(200))` minus the
 * same with work(0). Espruino 2v29 (c5ff787b) built by scripts/build-espruino.sh (-Og, x86-64,
 * gcc 12.2), 2026-12-04. The chip's work is defined by this number, whatever this machine's build is.
 */
export const WORKLOAD_INSTRUCTIONS = 824_227_169;

export interface ChipSpeed {
  /** This machine's CPU ns per counted instruction (the workload's CPU time / WORKLOAD_INSTRUCTIONS). */
  machineNs: number;
  /** The chip's ns per instruction the quota aims at. */
  chipNs: number;
  /** The interpreter's share of one CPU: machineNs / chipNs. */
  share: number;
  periodUs: number;
  quotaUs: number;
}

/** The quota for a share of one CPU: at least the kernel's 1 ms quota, the shortest period that allows it (10 ms at least). */
export function quotaFor(machineNs: number, chipNs = CHIP_NS_PER_INSTRUCTION): ChipSpeed {
  const share = machineNs / chipNs;
  const periodUs = Math.max(10_000, Math.ceil(1000 / share));
  if (periodUs > 1_000_000) throw new Error(`chip speed: a share of ${share} of a CPU needs a period over the kernel's 1 s maximum`);
  return { machineNs, chipNs, share, periodUs, quotaUs: Math.max(1000, Math.round(periodUs * Math.min(share, 1))) };
}

/** Why a quota cannot be set here (undefined when it can): checked by creating and removing a probe cgroup. */
export function chipSpeedUnavailable(root = CPU_CGROUP_ROOT): string | undefined {
  if (process.platform !== 'linux') return `chip speed needs Linux cgroups (this is ${process.platform})`;
  if (!existsSync(join(root, 'cpu.cfs_quota_us')))
    return `chip speed needs the cgroup v1 cpu controller with CFS quotas at ${root} (not mounted here; cgroup v2 is not supported)`;
  const probe = join(root, `proofrig-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    writeFileSync(join(probe, 'cpu.cfs_quota_us'), '1000');
  } catch (e) {
    return `chip speed cannot create a cgroup under ${root} (${(e as NodeJS.ErrnoException).code}${process.getuid?.() !== 0 ? '; it needs root' : ''})`;
  } finally {
    try {
      rmdirSync(probe);
    } catch {
      /* never created */
    }
  }
  return undefined;
}

const measured = new Map<string, ChipSpeed>();

/**
 * This machine's speed for `binary` (memoized per process): the CPU time (user + system, of the
 * children, from bash's `times`) of the workload run minus an empty run, the least of three each.
 * Blocks for about a second.
 */
export function calibrate(binary: string, chipNs = CHIP_NS_PER_INSTRUCTION): ChipSpeed {
  const known = measured.get(binary);
  if (known) return { ...quotaFor(known.machineNs, chipNs) };
  const dir = mkdtempSync(join(tmpdir(), 'proofrig-chip-'));
  try {
    writeFileSync(join(dir, 'w0.js'), `${WORKLOAD}\nprint(work(0));\n`);
    writeFileSync(join(dir, 'wn.js'), `${WORKLOAD}\nprint(work(${WORKLOAD_N}));\n`);
    const run = (f: string) => `"$B" ${f} >/dev/null </dev/null; times`;
    const out = execFileSync('bash', ['-c', [1, 2, 3].map(() => `${run('w0.js')}; ${run('wn.js')}`).join('; ')], {
      cwd: dir,
      env: { ...process.env, B: binary },
      encoding: 'utf8',
      timeout: 60_000,
    });
    // `times` prints the shell's own times, then its children's (cumulative): "0m0.112s 0m0.004s".
    const children = out
      .split('\n')
      .filter((_, i) => i % 2 === 1)
      .map((l) => [...l.matchAll(/(\d+)m([\d.]+)s/g)].reduce((s, m) => s + Number(m[1]) * 60 + Number(m[2]), 0));
    // Least of each kind: a run can be slowed (the first start of a binary on a busy machine took 0.7 s).
    let empty = Infinity;
    let full = Infinity;
    for (let k = 0; k + 1 < children.length; k += 2) {
      empty = Math.min(empty, children[k]! - (k > 0 ? children[k - 1]! : 0));
      full = Math.min(full, children[k + 1]! - children[k]!);
    }
    const best = full - empty;
    if (!(best > 0)) throw new Error(`chip speed: calibrating ${binary} measured no CPU time (${out.trim().replace(/\n/g, ' | ')})`);
    const speed = quotaFor((best * 1e9) / WORKLOAD_INSTRUCTIONS, chipNs);
    measured.set(binary, speed);
    return { ...speed };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let serial = 0;

/** One interpreter's cgroup: the quota, and the file a process writes its pid to in order to join it. */
export class ChipCgroup {
  readonly path: string;
  private removed = false;

  constructor(
    readonly speed: ChipSpeed,
    root = CPU_CGROUP_ROOT,
  ) {
    sweep(root);
    this.path = join(root, `proofrig-chip-${process.pid}-${++serial}`);
    mkdirSync(this.path);
    try {
      // Period first: the kernel checks quota/period against the parent's at each write.
      writeFileSync(join(this.path, 'cpu.cfs_period_us'), String(speed.periodUs));
      writeFileSync(join(this.path, 'cpu.cfs_quota_us'), String(speed.quotaUs));
    } catch (e) {
      this.remove();
      throw new Error(`chip speed: cannot set the quota of ${this.path}: ${(e as Error).message}`);
    }
  }

  /** Command and arguments that join this cgroup (the shell writes its own pid, then execs: same pid), then run `cmd`. */
  wrap(cmd: string, args: string[]): [string, string[]] {
    return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', join(this.path, 'cgroup.procs'), cmd, ...args]];
  }

  /** Throttling so far (nr_periods, nr_throttled, throttled_time ns), from cpu.stat. */
  stat(): Record<string, number> {
    const r: Record<string, number> = {};
    for (const l of readFileSync(join(this.path, 'cpu.stat'), 'utf8').split('\n')) {
      const [k, v] = l.split(' ');
      if (k) r[k] = Number(v);
    }
    return r;
  }

  /** Remove the cgroup (true when gone). It must be empty: call it after the interpreter exited. */
  remove(): boolean {
    if (this.removed) return true;
    try {
      rmdirSync(this.path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return false;
    }
    this.removed = true;
    return true;
  }
}

/** Remove empty cgroups left by proofrig processes that are gone (killed before they could clean up). */
function sweep(root: string): void {
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => n.startsWith('proofrig-chip-'));
  } catch {
    return;
  }
  for (const n of names) {
    const pid = Number(n.split('-')[2]);
    if (pid === process.pid || existsSync(`/proc/${pid}`)) continue;
    try {
      rmdirSync(join(root, n));
    } catch {
      /* still has a task: leave it */
    }
  }
}
