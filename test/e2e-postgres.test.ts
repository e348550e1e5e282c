// End to end on a PostgreSQL journal: `serve --db postgres://…` with a simulated relay rig, the real MCP
// client, relay_set completes; the host restarted on the same database answers the command with its
// status and history; the password in the URL is in no log line.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RELAY_BOARD, RIG, startE2E, until, type E2E } from './helpers/e2e.js';
import { startBin } from './helpers/bin.js';
import { PG_PASS, postgresOrNotice, startPostgres, type Postgres } from './helpers/postgres.js';

// The MCP tokens of a PostgreSQL journal live in the host's state folder: a temporary one here.
vi.hoisted(async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  process.env.PROOFRIG_HOME = mkdtempSync(join(tmpdir(), 'proofrig-home-'));
});

const RUN = postgresOrNotice();

describe.runIf(RUN)('serve with its journal in PostgreSQL', () => {
  let server: Postgres;
  let e: E2E | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await e?.close();
    server?.stop();
  });

  it('relay_set completes; after a restart on the same database the command keeps its status and history; the password is logged nowhere', async () => {
    const db = await server.createDatabase();
    e = await startE2E({ db });
    const { final } = await e.act('relay_set', { device_id: RIG, channel: 1, on: true });
    expect(final, e.story(final)).toMatchObject({ state: 'completed', verified: true, evidence: 'aux_contact' });
    const history = e.running.core.commands.history(final.command_id);
    expect(history.map((h) => h.state)).toContain('completed');
    await e.restart();
    const r = await e.call('get_action_status', { command_id: final.command_id });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ command_id: final.command_id, state: 'completed', verified: true, evidence: 'aux_contact' });
    expect(e.running.core.commands.history(final.command_id)).toStrictEqual(history);
    // PostgreSQL holds it (not only the restarted host's working copy).
    const c = await server.client(new URL(db).pathname.slice(1));
    const rows = (await c.query('SELECT state, history FROM commands WHERE command_id = $1', [final.command_id])).rows;
    await c.end();
    expect(rows).toHaveLength(1);
    expect(rows[0].state).toBe('completed');
    expect(JSON.stringify(e.logs)).not.toContain(PG_PASS);
  });

  it('the proofrig command: serve on a URL shows it without the password; a second serve, and devices list, are refused while it runs; devices list works after', async () => {
    const db = await server.createDatabase();
    const env = { PROOFRIG_HOME: process.env.PROOFRIG_HOME };
    const host = startBin(['serve', '--db', db, '--http', '0', '--sim', RELAY_BOARD, '--log-level', 'silent'], env);
    await until(() => host.out().includes('proofrig is running') || host.p.exitCode !== null, 20000, 'the host to start');
    expect(host.err()).toBe('');
    expect(host.out()).toContain(`journal:               ${db.replace(PG_PASS, '***')}`);
    expect(host.out() + host.err()).not.toContain(PG_PASS);
    const second = startBin(['serve', '--db', db, '--http', '0', '--log-level', 'silent'], env);
    expect(await second.done).not.toBe(0);
    expect(second.err()).toMatch(/journal postgres:\/\/proofrig:\*\*\*@127\.0\.0\.1:\d+\/\w+ is in use by another proofrig host \(proofrig host pid \d+ at 127\.0\.0\.1 since [^)]+\); stop that one, or give this one its own database with --db/);
    const busy = startBin(['devices', 'list', '--db', db], env);
    expect(await busy.done).not.toBe(0);
    expect(busy.err()).toContain('is in use by another proofrig host');
    for (const p of [second, busy]) expect(p.out() + p.err()).not.toContain(PG_PASS);
    host.p.kill('SIGTERM');
    expect(await host.done).toBe(0);
    const list = startBin(['devices', 'list', '--db', db, '--json'], env);
    expect(await list.done).toBe(0);
    expect(JSON.parse(list.out())).toMatchObject([{ device_id: RIG, simulated: true }]);
  });
});
