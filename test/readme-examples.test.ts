// The README's shell examples, run in the order a newcomer runs them: `npm start` (its own port and
// a fresh folder), each `$ npx proofrig ...` of the console block with its printed lines compared
// (ids and times masked), then, after stopping that host as the README says, the fault example
// with the outcome its comment promises. The commands are taken from the README itself; the
// host's folder (journal, tokens) is the fresh folder's .proofrig/ (PROOFRIG_HOME), not the repo's.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from './helpers/e2e.js';
import { startBin, type Proc } from './helpers/bin.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

/** The code blocks (language, lines) of one README section. */
function blocks(heading: string): { lang: string; lines: string[] }[] {
  const start = readme.indexOf('\n## ' + heading);
  const end = readme.indexOf('\n## ', start + 4);
  const sec = readme.slice(start, end < 0 ? undefined : end);
  return [...sec.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], lines: m[2].replace(/\n$/, '').split('\n') }));
}

/** Shell words of a README command line (double quotes group; a trailing comment dropped). */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.replace(/\s+#.*$/, '').matchAll(/(?:[^\s"]+|"[^"]*")+/g)) out.push(m[0].replace(/"/g, ''));
  return out;
}

/** What varies from run to run: ids, times. */
const mask = (s: string) => s.replace(/cmd_[A-Za-z0-9]+/g, 'cmd_…').replace(/\d+ ms/g, 'N ms').replace(/~\d+\.\d s/g, '~N s');

/** A proofrig command in the fresh folder, its state there (PROOFRIG_HOME), not in the repo. */
const start = (cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc => startBin(args, { PROOFRIG_HOME: join(cwd, '.proofrig'), ...env }, cwd);

/** A README `npx proofrig serve ...` (or npm start) on a free port instead of 8787, once it is serving its rig. */
async function serve(cwd: string, args: string[]): Promise<{ host: Proc; url: string }> {
  const host = start(cwd, [...args.filter((a, i) => a !== '--http' && args[i - 1] !== '--http'), '--http', '0']);
  await until(() => /MCP \(Streamable HTTP\): (\S+)\/mcp/.test(host.out()), 30_000, 'serve banner');
  await until(() => /"evt":"device_online"/.test(host.err()), 30_000, 'the simulated rig online');
  return { host, url: /MCP \(Streamable HTTP\): (\S+)\/mcp/.exec(host.out())![1] };
}

async function stop(h: Proc): Promise<void> {
  h.p.kill('SIGINT'); // Ctrl-C
  expect(await h.done).toBe(0);
}

/** `npx proofrig ARGS` as the README gives it, against the host at url. */
async function call(cwd: string, line: string, url: string): Promise<{ code: number; out: string }> {
  const w = words(line);
  expect(w.slice(0, 2)).toEqual(['npx', 'proofrig']);
  const r = start(cwd, w.slice(2), { PROOFRIG_URL: url });
  const code = await r.done;
  return { code, out: r.out() + r.err() };
}

describe("the README's shell examples, in order", () => {
  it('npm start, the console session line by line, then Ctrl-C and the fault example', async () => {
    // A fresh folder with the repo's boards, as a clone's root is for these commands.
    const cwd = mkdtempSync(join(tmpdir(), 'proofrig-readme-'));
    symlinkSync(join(ROOT, 'boards'), join(cwd, 'boards'));
    const [consoleBlock, faultBlock] = blocks('Drive the simulated rig from a shell');
    expect(consoleBlock.lang).toBe('console');
    expect(faultBlock.lang).toBe('sh');

    // npm start
    const startArgs = words(pkg.scripts.start).slice(2); // node host/bin/proofrig.js <args>
    let { host, url } = await serve(cwd, startArgs);
    try {
      // Each `$ command` and the lines it prints, up to the next blank line.
      const steps: { cmd: string; expect: string[] }[] = [];
      for (const l of consoleBlock.lines) {
        if (l.startsWith('$ ')) steps.push({ cmd: l.slice(2), expect: [] });
        else if (l.trim() && steps.length) steps.at(-1)!.expect.push(l);
      }
      expect(steps.length).toBeGreaterThanOrEqual(2);
      for (const s of steps) {
        const r = await call(cwd, s.cmd, url);
        expect(mask(r.out.trimEnd()).split('\n'), s.cmd).toEqual(s.expect.map(mask));
      }
    } finally {
      await stop(host);
    }

    // "stop npm start first", then the fault example.
    const [serveLine, callLine] = faultBlock.lines;
    ({ host, url } = await serve(cwd, words(serveLine).slice(2)));
    try {
      const promised = /#\s*→\s*(\w+) (\w+)/.exec(callLine)!;
      const r = await call(cwd, callLine, url);
      expect(r.code).toBe(3); // any terminal outcome other than completed
      expect(r.out).toMatch(new RegExp(`\\b${promised[1]}\\b[\\s\\S]*\\b${promised[2]}\\b`));
    } finally {
      await stop(host);
    }
  }, 120_000);
});
