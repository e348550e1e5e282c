// The README a newcomer reads first and the docs/ it leads to: short, in the order a person needs
// it, every link and anchor resolving, and the tables of states, evidence and error codes saying
// what the protocol says (one source of truth, checked).
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, EVIDENCE_MEANING, STATE_MEANING } from '@proofrig/protocol';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const readme = read('README.md');
const DOCS = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => 'docs/' + f);

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function anchors(md: string): Set<string> {
  const out = new Set<string>();
  for (const m of md.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm))
    out.add(m[1].trim().toLowerCase().replace(/[`*_]/g, '').replace(/[^\p{L}\p{N} -]/gu, '').replace(/ /g, '-'));
  return out;
}

/** Every relative markdown link [text](target) outside code blocks. */
function links(md: string): string[] {
  return [...md.replace(/```[\s\S]*?```/g, '').replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/.test(t));
}

describe('the README', () => {
  it('fits in 250 lines and opens with a table of contents', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    expect(readme.slice(0, 1500)).toMatch(/\*\*Contents:\*\*/);
  });

  it('gives the two quick-start command lines', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toMatch(/^npm test/m);
  });

  it('reaches wiring and flashing a real ESP32 in its first half, after driving the simulated rig', () => {
    const lines = readme.split('\n');
    const at = (h: string) => lines.findIndex((l) => l.startsWith('## ') && l.includes(h));
    expect(at('Drive the simulated rig')).toBeGreaterThan(0);
    expect(at('Wire and flash a real ESP32')).toBeGreaterThan(at('Drive the simulated rig'));
    expect(at('Wire and flash a real ESP32')).toBeLessThan(lines.length / 2 + 20);
  });

  it('links every file in docs/', () => {
    for (const d of DOCS) expect(readme, d).toContain(`](${d})`);
  });
});

describe('the docs', () => {
  it.each(DOCS)('%s opens with its title and who it is for', (d) => {
    const [title, blank, who] = read(d).split('\n');
    expect(title).toMatch(/^# \S/);
    expect(blank).toBe('');
    expect(who).toMatch(/^For /);
  });

  it('every relative link and anchor in the README and docs resolves', () => {
    const broken: string[] = [];
    for (const f of ['README.md', ...DOCS]) {
      const md = read(f);
      for (const l of links(md)) {
        const [path, hash] = l.split('#');
        const target = path ? resolve(join(ROOT, dirname(f)), path) : join(ROOT, f);
        if (!existsSync(target)) broken.push(`${f}: ${l} (no such file)`);
        else if (hash && target.endsWith('.md') && !anchors(readFileSync(target, 'utf8')).has(hash)) broken.push(`${f}: ${l} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('has a row for every lifecycle state with what it means and does not mean', () => {
    const doc = read('docs/protocol.md');
    for (const [state, m] of Object.entries(STATE_MEANING)) expect(doc).toContain(`| \`${state}\` | ${m.means} | ${m.does_not_mean} |`);
  });

  it('has a row for every evidence value', () => {
    const doc = read('docs/protocol.md');
    for (const [ev, m] of Object.entries(EVIDENCE_MEANING)) expect(doc).toContain(`| \`${ev}\` | ${m.means} | ${m.does_not_mean} |`);
  });

  it('lists every error code with its meaning and its retry rule', () => {
    const doc = read('docs/error-codes.md');
    const retry = { same_request_id: 'same request id', after_fresh_state_read: 'after fresh state read', fix_input: 'fix input', no: 'no' };
    for (const [code, info] of Object.entries(ERROR_CODES))
      expect(doc).toContain(`| \`${code}\` | ${info.ends ?? '—'} | ${info.meaning} | ${retry[info.retry]} |`);
  });
});
