// The README's tables of states, evidence and error codes say what the protocol says: one
// source of truth, checked.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { ERROR_CODES, EVIDENCE_MEANING, STATE_MEANING } from '@proofrig/protocol';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('has a row for every lifecycle state with what it means and does not mean', () => {
    for (const [state, m] of Object.entries(STATE_MEANING)) expect(readme).toContain(`| \`${state}\` | ${m.means} | ${m.does_not_mean} |`);
  });

  it('has a row for every evidence value', () => {
    for (const [ev, m] of Object.entries(EVIDENCE_MEANING)) expect(readme).toContain(`| \`${ev}\` | ${m.means} | ${m.does_not_mean} |`);
  });

  it('lists every error code with its meaning and its retry rule', () => {
    const retry = { same_request_id: 'same request id', after_fresh_state_read: 'after fresh state read', fix_input: 'fix input', no: 'no' };
    for (const [code, info] of Object.entries(ERROR_CODES))
      expect(readme).toContain(`| \`${code}\` | ${info.ends ?? '—'} | ${info.meaning} | ${retry[info.retry]} |`);
  });

  it('gives the two quick-start command lines', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toMatch(/^npm test/m);
  });
});
