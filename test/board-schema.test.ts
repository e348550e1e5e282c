// Board files have a JSON Schema generated from the protocol's BoardDef type, so editors
// complete and check them, and `proofrig board check` names the field and the rule for every
// mistake, including the ESP32 wiring rules a schema cannot express.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkBoardFile } from '../host/src/cli/board.js';

const root = new URL('..', import.meta.url).pathname;
const dir = join(root, 'boards');
const boards = readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'board.schema.json');
const load = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8'));
const BIN = join(root, 'host/bin/proofrig.js');

describe('the board schema', () => {
  it('is what BoardDef in shared-protocol says today (regenerated and compared)', () => {
    const r = spawnSync(process.execPath, [join(root, 'scripts/board-schema.mjs'), '--check'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 120_000);

  it.each(boards)('%s names the schema and passes it with no error or warning', (f) => {
    const b = load(f);
    expect(b.$schema).toBe('./board.schema.json');
    expect(checkBoardFile(b, f)).toEqual({ file: f, errors: [], warnings: [] });
  });
});

describe('proofrig board check boards/*.json', () => {
  it('checks every board the folder holds and skips the schema that sits beside them, exit 0', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => join(dir, f));
    const r = spawnSync(process.execPath, [BIN, 'board', 'check', ...files], { encoding: 'utf8' });
    expect(r.stdout).toContain('board.schema.json: skipped (a JSON Schema, not a board)');
    for (const f of boards) expect(r.stdout).toContain(`${f}: ok`);
    expect(r.status).toBe(0);
  });
});

describe('proofrig board check names the field and the rule', () => {
  const relay = () => load('relay-rig-4ch.json');
  const stepper = () => load('stepper-rig.json');

  it.each([
    ['a misspelt field', relay, (b: any) => ((b.relays[0].setle_ms = 25), delete b.relays[0].settle_ms), 'relays[0].setle_ms: is not a board field (misspelt?)'],
    ['a fractional channel', relay, (b: any) => (b.relays[0].ch = 1.5), 'relays[0].ch: must be an integer 1..64'],
    ['a GPIO number the ESP32 does not have', relay, (b: any) => (b.relays[0].pin = 40), 'relays[0].pin: GPIO40 is not a usable ESP32 GPIO'],
    ['an internal pull-up asked of an input-only pin', relay, (b: any) => (b.relays[0].feedback.pull = 'up'), 'relays[0].feedback.pull: GPIO34 has no internal pull resistor; wire one and say "external"'],
    ['step pulses on a DAC pin', stepper, (b: any) => (b.steppers[0].driver.step_pin = 25), 'steppers[0].driver.step_pin: GPIO25 is a DAC pin where Espruino\'s analogWrite makes a voltage, not step pulses'],
    ['a watched switch on a pin Espruino cannot watch', stepper, (b: any) => (b.steppers[0].home.pin = 4), 'steppers[0].home.pin: Espruino cannot setWatch GPIO4 on the ESP32'],
    ['a missing required field', stepper, (b: any) => delete b.steppers[0].tolerance_mm, 'steppers[0].tolerance_mm: must be a positive number'],
    ['an unknown top-level field', relay, (b: any) => (b.wifi = 'x'), 'wifi: is not a board field (misspelt?)'],
  ])('%s', (_what, base, mutate, msg) => {
    const b = base();
    mutate(b);
    const r = checkBoardFile(b);
    expect(r.errors.some((e) => e.startsWith(msg))).toBe(true);
    // One message per field: the schema and the pin rules never say the same thing twice.
    const fields = r.errors.map((e) => e.slice(0, e.indexOf(':')));
    expect(new Set(fields).size).toBe(fields.length);
  });

  it('warns about strapping pins without refusing the board', () => {
    const b = relay();
    b.relays[2].pin = 12;
    const r = checkBoardFile(b);
    expect(r.errors).toEqual([]);
    expect(r.warnings).toEqual([expect.stringMatching(/^relays\[2\]\.pin: GPIO12 is a strapping pin \(MTDI\): held high at reset it selects 1\.8 V flash/)]);
  });

  it('exits 0 for good boards, 1 with errors listed for a bad one, 2 for a missing file', () => {
    const ok = spawnSync(process.execPath, [BIN, 'board', 'check', join(dir, 'relay-rig-4ch.json'), join(dir, 'stepper-rig.json')], { encoding: 'utf8' });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/relay-rig-4ch\.json: ok\n.*stepper-rig\.json: ok/s);
    const b = relay();
    b.relays[1].pin = 34;
    const f = join(mkdtempSync(join(tmpdir(), 'proofrig-board-')), 'mine.json');
    writeFileSync(f, JSON.stringify(b));
    const bad = spawnSync(process.execPath, [BIN, 'board', 'check', f], { encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stdout).toContain('error    relays[1].pin: GPIO34 is input-only and cannot drive a relay');
    const none = spawnSync(process.execPath, [BIN, 'board', 'check', f + '.nope'], { encoding: 'utf8' });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('no such file');
  }, 120_000);
});
