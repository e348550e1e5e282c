// Ad-hoc (not part of the bench): where an MCP relay_set wait_ms call's time goes, on a rig in another
// process. node bench/dist/mcplat.js CH N   (RAW=1: a protocol-level client instead of the SDK's)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RawClient, type Caller } from './raw-mcp.js';
import { hostWithRig } from './one-rig.js';

const ch = Number(process.argv[2] ?? 3);
const n = Number(process.argv[3] ?? 200);
const { running, close } = await hostWithRig();
let tReq = 0, tSubmit = 0, tSubmitted = 0, tTerminal = 0, tFinish = 0;
running.http.server.prependListener('request', (_req, res) => {
  tReq = performance.now();
  res.once('finish', () => (tFinish = performance.now()));
});
const core = running.core as unknown as { submit(...a: unknown[]): Promise<unknown>; waitTerminal(...a: unknown[]): Promise<unknown> };
const submit = core.submit.bind(core);
core.submit = async (...a) => {
  tSubmit = performance.now();
  const r = await submit(...a);
  tSubmitted = performance.now();
  return r;
};
const wt = core.waitTerminal.bind(core);
core.waitTerminal = async (...a) => {
  const r = await wt(...a);
  tTerminal = performance.now();
  return r;
};
const j = running.core.journal as unknown as { syncAsync(fd: number, d: (e: Error | null) => void): void };
const syncs: [number, number][] = [];
const sa = j.syncAsync.bind(j);
j.syncAsync = (fd, d) => {
  const t = performance.now();
  sa(fd, (e) => {
    syncs.push([t, performance.now()]);
    d(e);
  });
};
let c: Caller;
if (process.env.RAW) c = await RawClient.connect(running.url + '/mcp', running.tokens?.agent);
else {
  const sdk = new Client({ name: 'lat', version: '1' });
  await sdk.connect(new StreamableHTTPClientTransport(new URL(running.url + '/mcp'), { requestInit: { headers: running.tokens?.agent ? { Authorization: `Bearer ${running.tokens.agent}` } : {} } }));
  c = sdk;
}
const rows: number[][] = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const r = (await c.callTool({ name: 'relay_set', arguments: { device_id: 'lat-1', channel: ch, on: i % 2 === 0, wait_ms: 5000 } })) as unknown as { structuredContent: { terminal: boolean } };
  const t1 = performance.now();
  if (!r.structuredContent.terminal) throw new Error('not terminal');
  const inSubmit = syncs.filter(([a]) => a >= tSubmit && a <= tSubmitted);
  syncs.length = 0;
  if (i >= 10) rows.push([inSubmit.length, inSubmit.length ? inSubmit[0][0] - tSubmit : 0, inSubmit.length ? tSubmitted - inSubmit[inSubmit.length - 1][1] : 0, tReq - t0, tSubmit - tReq, tSubmitted - tSubmit, tTerminal - tSubmitted, tFinish - tTerminal, t1 - tFinish, t1 - t0]);
}
const med0 = (k: number) => { const xs = rows.map((r) => r[k]).sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)].toFixed(3); };
console.log(`submit: fsyncs ${med0(0)}, submit→first fsync start ${med0(1)}, last fsync end→resolved ${med0(2)}`);
for (const r of rows) r.splice(0, 3);
const med = (k: number) => { const xs = rows.map((r) => r[k]).sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)].toFixed(3); };
console.log(`ch ${ch} MCP p50 ms: client→request in ${med(0)}, request→submit ${med(1)}, submit ${med(2)}, submitted→terminal ${med(3)}, terminal→response finished ${med(4)}, finished→client has it ${med(5)}, total ${med(6)}`);
await c.close();
await close();
process.exit(0);
