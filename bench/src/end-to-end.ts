// Bench section 3: end to end with real simulated rigs in another process.
import { performance } from 'node:perf_hooks';
import { RELAY_BOARD, CAP_MS, until, startHost, rigsProcess, stop } from './harness.js';

export async function endToEnd(n: number): Promise<number> {
  const h = await startHost();
  const rigs = rigsProcess(['--board', RELAY_BOARD, '--count', String(n), '--id-prefix', 'e2e', '--host', h.ws, '--db', h.db, '--seed', '5']);
  const ids = Array.from({ length: n }, (_, i) => `e2e-${i + 1}`);
  await until(() => ids.every((id) => h.running.core.devices.session(id) !== undefined), 60000, `${n} rigs online`);
  let done = 0;
  const end = Date.now() + CAP_MS;
  const t = performance.now();
  await Promise.all(
    ids.map(async (id) => {
      let on = true;
      while (Date.now() < end) {
        const c = await h.running.core.submit({ device_id: id, action: 'relay.set', args: { ch: 3, on } });
        const s = await h.running.core.waitTerminal(c.command_id, 5000);
        if (s?.state === 'completed') done++;
        on = !on;
      }
    }),
  );
  const rate = done / ((performance.now() - t) / 1000);
  await stop(rigs);
  await h.running.close();
  return rate;
}
