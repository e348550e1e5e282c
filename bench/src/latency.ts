// Bench section 1: verified-completion latency on a simulated rig in another process.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { type BoardDef } from '@proofrig/protocol';
import { RELAY_BOARD, N_LAT, row, fmt, pct, until, startHost, rigsProcess, stop, deviceShare } from './harness.js';
import { mcpLatency } from './capacity.js';

export async function latency(rttP50: number, rttP99: number): Promise<void> {
  process.stderr.write('latency: relay rig (built firmware, proofrig rigs in another process)\n');
  const h = await startHost();
  const rig = rigsProcess(['--board', RELAY_BOARD, '--count', '1', '--id-prefix', 'lat', '--host', h.ws, '--db', h.db, '--seed', '1']);
  await until(() => h.running.core.devices.session('lat-1') !== undefined, 20000, 'rig online');
  const board = JSON.parse(readFileSync(RELAY_BOARD, 'utf8')) as BoardDef;
  // Where a core-API command's time goes: from the host's write of the cmd frame to its read of the
  // res frame the command is at the device (simulated: the sim's link and the firmware in its vm, plus
  // the physical time); the rest is the host's (journal commits and fdatasyncs, frame handling).
  const atDeviceMs = deviceShare(h.running, ['lat-1']);
  for (const ch of [1, 3, 4]) {
    const r = board.relays.find((x) => x.ch === ch)!;
    // The physical floor: settle (the firmware waits it before reading evidence), or the simulated armature's operate time where longer.
    const physical = Math.max(r.settle_ms, r.feedback.kind === 'aux_contact' ? r.operate_ms : 0);
    const core: number[] = [];
    const atDevice: number[] = [];
    const viaMcp: number[] = [];
    const viaSdk: number[] = [];
    for (let i = 0; i < N_LAT; i++) {
      const t = performance.now();
      const c = await h.running.core.submit({ device_id: 'lat-1', action: 'relay.set', args: { ch, on: i % 2 === 0 } });
      const s = await h.running.core.waitTerminal(c.command_id, 5000);
      if (!s?.terminal) throw new Error(`bench: channel ${ch} command not terminal`);
      core.push(performance.now() - t);
      atDevice.push(atDeviceMs(c.request_id));
    }
    // One tool call each, as an agent would make it (wait_ms returns the verified outcome in the answer),
    // from a client in its own process, as an agent's is: a protocol-level client (the host's time, the
    // target's), then the MCP SDK's client (what an agent built on it sees, its own parsing included).
    viaMcp.push(...(await mcpLatency(h.mcp, h.running.tokens?.agent, 'lat-1', ch, N_LAT, true)));
    viaSdk.push(...(await mcpLatency(h.mcp, h.running.tokens?.agent, 'lat-1', ch, N_LAT, false)));
    for (const [path, xs, targeted] of [['core API', core, true], ['MCP relay_set wait_ms', viaMcp, true], ['MCP relay_set wait_ms, SDK client', viaSdk, false]] as const) {
      const f50 = physical + rttP50;
      const f99 = physical + rttP99;
      const p50 = pct(xs, 50);
      const p99 = pct(xs, 99);
      const target3 = ch === 3 && targeted;
      row({ group: 'latency', what: `ch ${ch} (settle ${r.settle_ms} ms) ${path} → terminal, p50`, value: p50, unit: 'ms', baseline: 'floor p50 (physical + ws RTT p50)', base: f50,
        ...(target3 ? { target: `≤ floor + 1 RTT + 1 ms (${fmt(f50 + rttP50 + 1)} ms)`, ok: p50 <= f50 + rttP50 + 1 } : {}) });
      row({ group: 'latency', what: `ch ${ch} (settle ${r.settle_ms} ms) ${path} → terminal, p99`, value: p99, unit: 'ms', baseline: 'floor p99 (physical + ws RTT p99)', base: f99,
        ...(target3 ? { target: `≤ floor + 5 ms (${fmt(f99 + 5)} ms)`, ok: p99 <= f99 + 5 } : {}) });
    }
    if (ch === 3) {
      // The split of the core-API p50 (each part's own median, so they need not add up exactly).
      const dev50 = pct(atDevice, 50);
      const host50 = pct(core.map((x, i) => x - atDevice[i]), 50);
      row({ group: 'latency', what: `ch 3 core API, of which at the simulated device (cmd written → res read), p50`, value: dev50, unit: 'ms', baseline: 'physical + ws RTT p50', base: physical + rttP50 });
      row({ group: 'latency', what: `ch 3 core API, of which the host's (submit → cmd written, res read → waiter told), p50`, value: host50, unit: 'ms', baseline: '1 RTT + 1 ms (the overhead the target allows)', base: rttP50 + 1 });
    }
  }
  await stop(rig);
  await h.running.close();
}
