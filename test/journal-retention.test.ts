// Journal retention: terminal commands older than the configured age, or beyond the configured count,
// are pruned on a schedule; open commands never are; a pruned command is answered "pruned", not "unknown".
// On both backends: a SQLite file, and PostgreSQL (where installed).
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import type { BoardDef } from '@proofrig/protocol';
import { HostCore } from '../host/src/core/host.js';
import { createMcpServer } from '../host/src/mcp/tools.js';
import { FakeDevice, flush } from './helpers/fake-device.js';
import { BACKENDS } from './helpers/journal-fixture.js';
import { startPostgres, type Postgres } from './helpers/postgres.js';

const board: BoardDef = JSON.parse(readFileSync(new URL('../boards/relay-rig-4ch.json', import.meta.url), 'utf8'));
const SECRET = 'a'.repeat(64);
const DAY = 86400000;
const HOUR = 3600000;

let clock: VirtualClock;
let core: HostCore;
let dbPath: string;
let d: FakeDevice;

function makeCore(retention = { maxAgeMs: 30 * DAY, maxCommands: 1000 }) {
  return new HostCore({ db: dbPath, clock, heartbeatMs: 3600_000, offlineGraceMs: 5000, retention, pruneEveryMs: HOUR });
}

async function connect() {
  d = new FakeDevice(core, 'rig1', SECRET, 'boot0001');
  await d.connect();
  d.answerStateQuery();
  await flush();
}

/** A relay command that the device completes. */
async function completed(request_id?: string): Promise<string> {
  const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id });
  await flush();
  const rid = d.of('cmd').at(-1)!.rid as string;
  d.send({ t: 'ack', rid, st: 'accepted' });
  d.send({ t: 'res', rid, st: 'completed', ev: 'pin_readback', ver: true, s: d.state(true), ms: 2 });
  await flush();
  expect(core.status(s.command_id)!.state).toBe('completed');
  return s.command_id;
}

describe.each(BACKENDS)('on the %s journal', (backend) => {
  let server: Postgres | undefined;
  if (backend === 'postgres') {
    beforeAll(async () => {
      server = await startPostgres();
    });
    afterAll(() => server?.stop());
  }

  beforeEach(async () => {
    clock = new VirtualClock(1_700_000_000_000);
    dbPath = backend === 'postgres' ? await server!.createDatabase() : join(mkdtempSync(join(tmpdir(), 'proofrig-retention-')), 'journal.db');
    core = makeCore();
    core.provision('rig1', SECRET, board);
    await connect();
  });
  afterEach(() => core.close());

  describe('terminal commands older than the retention age are pruned on schedule', () => {
    it('a command 31 days past its end is gone after the next hourly run; a younger one stays', async () => {
      const old = await completed();
      clock.advance(2 * DAY);
      await connect(); // the device went silent for two days; it dials in again
      const young = await completed();
      clock.advance(29 * DAY + HOUR); // old: 31 days; young: 29 days
      await flush();
      expect(core.status(old)).toBeUndefined();
      expect(core.pruned(old)).toMatchObject({ command_id: old, device_id: 'rig1', action: 'relay.set', state: 'completed' });
      expect(core.status(young)).toMatchObject({ state: 'completed' });
      expect(core.commands.history(old)).toEqual([]); // its events went with it
    });

    it('never prunes an open command, however old', async () => {
      await completed();
      const s = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 1, on: true } });
      await flush();
      const rid = d.of('cmd').at(-1)!.rid as string;
      d.send({ t: 'ack', rid, st: 'accepted' }); // accepted, never finished; the device stays online
      await flush();
      expect(core.status(s.command_id)!.terminal).toBe(false);
      // Run retention directly at a time a year on (advancing the clock would let the command's deadline pass).
      const n = core.journal.prune({ maxAgeMs: 0, maxCommands: 0 }, clock.now() + 365 * DAY);
      expect(n).toBe(1); // the completed one went
      expect(core.status(s.command_id)).toMatchObject({ state: 'accepted', terminal: false });
      expect(core.pruned(s.command_id)).toBeUndefined();
    });
  });

  describe('beyond the retention count the oldest terminal commands go first', () => {
    it('with a cap of 3, five completed commands leave the newest three', async () => {
      core.close();
      core = makeCore({ maxAgeMs: 30 * DAY, maxCommands: 3 });
      await connect();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(await completed());
        clock.advance(1000);
      }
      core.prune();
      expect(ids.map((id) => core.status(id) !== undefined)).toEqual([false, false, true, true, true]);
    });
  });

  describe('a pruned command is answered "pruned", never "unknown", and its request_id never runs again', () => {
    it('get_action_status and cancel_action say COMMAND_PRUNED with its final state; an unknown id stays UNKNOWN_COMMAND', async () => {
      const id = await completed();
      clock.advance(31 * DAY);
      await flush();
      const [ct, st] = InMemoryTransport.createLinkedPair();
      await createMcpServer(core).connect(st);
      const client = new Client({ name: 'test', version: '1' });
      await client.connect(ct);
      const r = (await client.callTool({ name: 'get_action_status', arguments: { command_id: id, wait_ms: 0 } })) as CallToolResult;
      expect(r.isError).toBe(true);
      const text = (r.content[0] as { text: string }).text;
      expect(text).toMatch(/^COMMAND_PRUNED: /);
      expect(text).toContain('ended completed');
      expect(text).toContain('30 days');
      const c = (await client.callTool({ name: 'cancel_action', arguments: { command_id: id } })) as CallToolResult;
      expect((c.content[0] as { text: string }).text).toMatch(/^COMMAND_PRUNED: /);
      const u = (await client.callTool({ name: 'get_action_status', arguments: { command_id: 'cmd_nosuchthing', wait_ms: 0 } })) as CallToolResult;
      expect((u.content[0] as { text: string }).text).toMatch(/^UNKNOWN_COMMAND: /);
      await client.close();
    });

    it('a retry with the request_id of a pruned command is rejected and nothing is sent to the device', async () => {
      await completed('my-key-1');
      clock.advance(31 * DAY);
      await flush();
      const sent = d.of('cmd').length;
      const again = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'my-key-1' });
      await flush();
      expect(again).toMatchObject({ state: 'rejected', error_code: 'INVALID_ARGS' });
      expect(again.detail).toMatch(/pruned/);
      expect(d.of('cmd').length).toBe(sent);
      // The refusal is journaled under its own request id: the key stays with the pruned command's tombstone.
      expect(again.request_id).not.toBe('my-key-1');
      expect(core.commands.status(again.command_id)!.request_id).toBe(again.request_id);
    });

    it('a refusal of the moment that retention pruned leaves no tombstone: a retry with its request_id is judged anew and runs', async () => {
      d.link.close();
      await flush();
      const offline = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'offline-key' });
      expect(offline).toMatchObject({ state: 'rejected', error_code: 'DEVICE_OFFLINE' });
      clock.advance(31 * DAY);
      await flush();
      expect(core.status(offline.command_id)).toBeUndefined();
      expect(core.pruned(offline.command_id)).toBeUndefined();
      await connect();
      const sent = d.of('cmd').length;
      const again = await core.submit({ device_id: 'rig1', action: 'relay.set', args: { ch: 3, on: true }, request_id: 'offline-key' });
      await flush();
      expect(again).toMatchObject({ state: 'sent', request_id: 'offline-key' });
      expect(d.of('cmd').length).toBe(sent + 1);
    });

    it('tombstones survive a host restart', async () => {
      const id = await completed();
      clock.advance(31 * DAY);
      await flush();
      core.close();
      core = makeCore();
      expect(core.pruned(id)).toMatchObject({ state: 'completed' });
    });
  });
});
