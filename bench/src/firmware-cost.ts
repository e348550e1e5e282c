// The firmware's CPU per relay command as instructions (valgrind callgrind on the real Espruino
// interpreter, PROOFRIG_ESPRUINO; bench/src/cost-harness.ts), beside the floor script measured the
// same way in the same run, and the ESP32 estimate with its assumptions. Called from run.ts's
// firmware part. Instruction counts do not depend on the machine's load.
import { execFileSync } from 'node:child_process';
import { ESP32, esp32Ms, firmwareCost, floorCost, valgrindMissing } from './cost-harness.js';

type RowFn = (r: { group: string; what: string; value: number; unit: string; baseline: string; base: number; target?: string; ok?: boolean }) => void;

/** Target of issue 25 item 3: instructions per relay command. */
const TARGET = 6e6;

/** valgrind is part of the bench's setup: installed with apt-get where it is missing and that is possible. */
function ensureValgrind(): string | undefined {
  let why = valgrindMissing();
  if (!why || process.getuid?.() !== 0) return why;
  try {
    process.stderr.write('firmware cost: installing valgrind (apt-get install -y valgrind)\n');
    execFileSync('sh', ['-c', 'command -v apt-get >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null'], { stdio: 'ignore', timeout: 300000 });
  } catch {
    /* reported below */
  }
  why = valgrindMissing();
  return why;
}

export async function firmwareCostRows(row: RowFn, notes: string[]): Promise<void> {
  const bin = process.env.PROOFRIG_ESPRUINO;
  if (!bin) return void notes.push('Firmware instructions per command: skipped, PROOFRIG_ESPRUINO is not set.');
  const missing = ensureValgrind();
  if (missing) {
    process.stderr.write(`firmware cost: skipped (${missing})\n`);
    return void notes.push(`Firmware instructions per command: skipped, ${missing}.`);
  }
  process.stderr.write('firmware cost: relay rig on the interpreter under callgrind, 20 relay commands; then the floor script\n');
  const c = await firmwareCost({ binary: bin, commands: 20 });
  const floor = await floorCost({ binary: bin, frames: 20 });
  const M = (n: number) => n / 1e6;
  row({ group: 'firmware', what: 'firmware CPU per relay command (ch 3: cmd carrying the previous rack, res), x86-64 instructions in JS callbacks (callgrind), M', value: M(c.perCommand), unit: 'M instr', baseline: 'floor script per frame in+out (JSON.parse + native SHA-256 + JSON.stringify + socket write), M', base: M(floor), target: '≤ 6 M', ok: c.perCommand <= TARGET });
  row({ group: 'firmware', what: 'firmware CPU for the handshake (connect, hello/chal/auth/ok, first state), M instructions', value: M(c.handshake), unit: 'M instr', baseline: 'one relay command, M', base: M(c.perCommand) });
  const [lo, hi] = esp32Ms(c.perCommand);
  const [hlo, hhi] = esp32Ms(c.handshake);
  row({ group: 'firmware', what: 'ESP32 estimate: CPU per relay command, worst of the range', value: hi, unit: 'ms', baseline: 'best of the range', base: lo });
  notes.push(
    `Firmware instructions: the relay rig's firmware (${c.bytes} B) booted from Storage in the real interpreter under valgrind's callgrind, counted only inside JavaScript event callbacks ` +
      `(socket data, timers; the boot's own evaluation is not counted), driven by a host core over loopback; (20 relay commands − an idle stretch as long) ÷ 20. ` +
      `The .boot0 pin shim's JavaScript is inside the count (its digitalRead is a named-pipe round trip the ESP32 does natively). ` +
      `ESP32 estimate: ${ESP32.mhz} MHz, in-order, code from flash through a 32 KB cache, ${ESP32.instrRatio[0]}-${ESP32.instrRatio[1]}x the x86-64 instruction count at ${ESP32.ipc[0]}-${ESP32.ipc[1]} IPC: ` +
      `${lo.toFixed(0)}-${hi.toFixed(0)} ms per relay command, ${hlo.toFixed(0)}-${hhi.toFixed(0)} ms for the handshake. See docs/performance.md.`,
  );
}
