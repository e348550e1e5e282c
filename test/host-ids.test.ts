// The ids the host mints: an agent and the journal tell commands apart by them, so they never repeat.
import { describe, expect, it } from 'vitest';
import { newCommandId, newRequestId } from '../host/src/core/ids.js';

describe('minted ids', () => {
  it('20,000 command and request ids (many refills of the random pool) are all distinct and well formed', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const c = newCommandId();
      const r = newRequestId();
      expect(c).toMatch(/^cmd_[A-Za-z0-9]{12}$/);
      expect(r).toMatch(/^req_[A-Za-z0-9]{12}$/);
      seen.add(c.slice(4));
      seen.add(r.slice(4));
    }
    expect(seen.size).toBe(20_000);
  });
});
