// The capacity loop over the host core API, shared by `npm run bench` and the profiling probe:
// every device toggles relay 3 back to back until `ms` have passed, each command followed to its end.
import { performance } from 'node:perf_hooks';
import type { HostCore } from '@proofrig/host/core';

export interface CoreLoad {
  done: number;
  bad: number;
  secs: number;
  cpu: NodeJS.CpuUsage;
}

export async function driveCore(core: HostCore, devices: { id: string }[], ms: number): Promise<CoreLoad> {
  let done = 0;
  let bad = 0;
  const end = Date.now() + ms;
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  await Promise.all(
    devices.map(async (d) => {
      let on = true;
      while (Date.now() < end) {
        const c = await core.submit({ device_id: d.id, action: 'relay.set', args: { ch: 3, on } });
        const s = await core.waitTerminal(c.command_id, 5000);
        if (s?.state === 'completed') done++;
        else bad++;
        on = !on;
      }
    }),
  );
  return { done, bad, secs: (performance.now() - t) / 1000, cpu: process.cpuUsage(cpu0) };
}
