// MCP clients for the bench, in their own process: each drives one device closed-loop through MCP over
// HTTP for a fixed time and reports the count: relay_set, then get_action_status until terminal, or
// (`wait`) relay_set with wait_ms, which answers with the outcome in the same call.
// With `lat: N` it instead makes N calls one after another on devices[0] (relay_set with wait_ms, then
// get_action_status while not terminal) and reports each call's time: the bench's MCP latency, from a
// client in its own process as an agent's is, so the client's work does not share the host's thread.
// With `raw` the clients are protocol-level (raw-mcp.ts) instead of the SDK's Client, so, as the device
// load generator does for devices, the figure is the host's (the SDK's client costs about as much CPU per call).
// argv[2]: JSON { url, token?, devices: string[], ms, channel, wait?, lat?, raw? }
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RawClient, type Caller } from './raw-mcp.js';

const o = JSON.parse(process.argv[2]) as { url: string; token?: string; devices: string[]; ms: number; channel: number; wait?: boolean; lat?: number; raw?: boolean };

async function client(): Promise<Caller> {
  if (o.raw) return RawClient.connect(o.url, o.token);
  const c = new Client({ name: 'bench', version: '1' });
  const headers: Record<string, string> = o.token ? { Authorization: `Bearer ${o.token}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(o.url), { requestInit: { headers } }));
  return c;
}

/** One relay_set (with wait_ms when `wait`), then get_action_status until terminal: the command's final status. */
async function relaySet(c: Caller, dev: string, on: boolean, wait: boolean): Promise<Record<string, unknown>> {
  const r = (await c.callTool({ name: 'relay_set', arguments: { device_id: dev, channel: o.channel, on, ...(wait ? { wait_ms: 5000 } : {}) } })) as {
    structuredContent?: Record<string, unknown>;
  };
  let s = r.structuredContent!;
  while (!s.terminal) {
    const q = (await c.callTool({ name: 'get_action_status', arguments: { command_id: s.command_id, wait_ms: 5000 } })) as { structuredContent?: Record<string, unknown> };
    s = q.structuredContent!;
  }
  return s;
}

async function loop(c: Caller, dev: string, end: number, n: { done: number; bad: number }): Promise<void> {
  let on = true;
  while (Date.now() < end) {
    const s = await relaySet(c, dev, on, !!o.wait);
    if (s.state === 'completed') n.done++;
    else n.bad++;
    on = !on;
  }
}

if (o.lat !== undefined) {
  const c = await client();
  process.send!({ ready: true });
  process.once('message', async () => {
    const times: number[] = [];
    for (let i = 0; i < o.lat!; i++) {
      const t = performance.now();
      await relaySet(c, o.devices[0], i % 2 === 0, true);
      times.push(performance.now() - t);
    }
    process.send!({ times });
    await c.close();
    process.exit(0);
  });
} else {
// Connect in small batches (a burst of 100 handshakes at once overflows a loaded host's accept queue), retrying a reset.
const clients: Caller[] = [];
for (let i = 0; i < o.devices.length; i += 10) {
  const batch = await Promise.all(
    o.devices.slice(i, i + 10).map(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await client();
        } catch (e) {
          if (attempt >= 4) throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }),
  );
  clients.push(...batch);
}
process.send!({ ready: true });
process.once('message', async () => {
  const n = { done: 0, bad: 0 };
  const t = Date.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(clients.map((c, i) => loop(c, o.devices[i], t + o.ms, n)));
  const cpu = process.cpuUsage(cpu0);
  // The clients' own CPU: on a small machine they share its cores with the host.
  process.send!({ done: n.done, bad: n.bad, ms: Date.now() - t, cpuUs: cpu.user + cpu.system });
  await Promise.all(clients.map((c) => c.close()));
  process.exit(0);
});
}
