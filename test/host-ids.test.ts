// The ids the host mints: an agent and the journal tell commands apart by them, so they never repeat;
// they sort by the time they were minted, so the journal's indexes on them grow at one end.
import { describe, expect, it, vi } from 'vitest';
import { newCommandId, newRequestId } from '../host/src/core/ids.js';

describe('minted ids', () => {
  it('20,000 command and request ids (many refills of the random pool) are all distinct and well formed', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const c = newCommandId();
      const r = newRequestId();
      expect(c).toMatch(/^cmd_[A-Za-z0-9]{16}$/);
      expect(r).toMatch(/^req_[A-Za-z0-9]{16}$/);
      seen.add(c.slice(4));
      seen.add(r.slice(4));
    }
    expect(seen.size).toBe(20_000);
  });

  it('an id minted in a later millisecond sorts after every earlier one, also when the wall clock steps back', () => {
    const now = vi.spyOn(Date, 'now');
    try {
      const at = (ms: number) => {
        now.mockReturnValue(ms);
        return newCommandId();
      };
      const ids = [at(1_800_000_000_000), at(1_800_000_000_001), at(1_800_000_000_062), at(1_800_000_003_844), at(1_900_000_000_000)];
      expect([...ids].sort()).toEqual(ids);
      // a step back of the clock (NTP) does not make ids go back in order
      const back = at(1_700_000_000_000);
      expect(back > ids[ids.length - 1].slice(0, 11)).toBe(true);
    } finally {
      now.mockRestore();
    }
  });
});
