// Action kinds are modules: the host core, MCP and the dashboard read each kind's traits
// (shared-protocol/src/kinds) instead of naming actions, so a new kind is its own files plus one
// line per registry. Checked on the source itself.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ACTIONS } from '@proofrig/protocol';
import { KINDS, MOTION_ACTIONS, kindOf } from '@proofrig/protocol/kinds';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(ROOT, p)).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Source without comments (a comment may name an action). */
const code = (p: string) => readFileSync(join(ROOT, p), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');

describe('action kinds', () => {
  it('every action the protocol has is declared by exactly one kind, under its own name', () => {
    expect(Object.keys(KINDS).sort()).toEqual(Object.keys(ACTIONS).sort());
    for (const [name, k] of Object.entries(KINDS)) expect(k.action).toBe(name);
    expect(kindOf('relay.toggle')).toBeUndefined();
    expect(kindOf('toString')).toBeUndefined();
  });

  it('the motion actions are the stepper kind\'s', () => {
    expect([...MOTION_ACTIONS].sort()).toEqual(['stepper.home', 'stepper.move']);
  });

  it('no action name is written in host/src/core, host/src/mcp or host/src/dashboard: they read the kinds', () => {
    const names = Object.keys(ACTIONS);
    const found: string[] = [];
    for (const f of [...files('host/src/core'), ...files('host/src/mcp'), ...files('host/src/dashboard')]) {
      const src = code(f);
      for (const n of names) if (new RegExp(`['"\`]${n.replace('.', '\\.')}['"\`]`).test(src)) found.push(`${f}: ${n}`);
    }
    expect(found).toEqual([]);
  });
});
