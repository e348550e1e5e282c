// Every secret a representative run uses (device secrets, both MCP tokens, the Wi-Fi password)
// is searched for in everything that run printed or kept outside its secret stores: the host's
// banner and logs, proofrig call's output, the simulator's console, the uploader's output, and a
// dump of the journal's command tables. The run is real processes of the built bin.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { RELAY_BOARD, RIG, until } from './helpers/e2e.js';
import { startBin, type Proc } from './helpers/bin.js';

const WIFI_PASSWORD = 'wifi-Pa55-never-printed';

const start = (args: string[], env: NodeJS.ProcessEnv = {}): Proc => startBin(args, env);

async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  const pr = start(args, env);
  const timer = setTimeout(() => pr.p.kill('SIGKILL'), 30000);
  const code = await pr.done;
  clearTimeout(timer);
  return { code, out: pr.out(), err: pr.err() };
}

describe('no secret leaves its store', () => {
  it('a run with a simulated rig, calls as agent and operator, and an upload with Wi-Fi prints and journals none of its secrets', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'proofrig-scan-')), '.proofrig');
    const db = join(dir, 'journal.db');
    const outputs: Record<string, string> = {};
    let serve = start(['serve', '--http', '0', '--sim', RELAY_BOARD, '--db', db, '--log-level', 'debug', '--heartbeat-ms', '200']);
    try {
      await until(() => /MCP \(Streamable HTTP\): (\S+)\/mcp/.test(serve.out()), 15000, 'serve banner');
      const url = /MCP \(Streamable HTTP\): (\S+)\/mcp/.exec(serve.out())![1];
      const port = Number(new URL(url).port);
      await until(() => /"evt":"device_online"/.test(serve.err()), 15000, 'rig online');

      const calls: [string, string[], NodeJS.ProcessEnv?][] = [
        ['call relay_set', ['call', 'relay_set', `device_id=${RIG}`, 'channel=1', 'on=true', '--url', url, '--db', db]],
        ['call --operator list_devices', ['call', 'list_devices', '--operator', '--url', url, '--db', db]],
        ['call with a wrong token', ['call', 'list_devices', '--url', url, '--db', join(dir, 'nowhere', 'j.db')], { PROOFRIG_TOKEN: 'wrong-token' }],
      ];
      for (const [name, args, env] of calls) {
        const r = await run(args, env);
        outputs[name] = r.out + r.err;
      }
      expect(outputs['call relay_set']).toMatch(/completed {2}evidence=aux_contact/);
      expect(outputs['call with a wrong token']).toMatch(/refused the token from PROOFRIG_TOKEN/);

      // An upload with Wi-Fi onto a blank simulated board, registered in this host's journal.
      const sim = start(['sim', '--board', RELAY_BOARD, '--blank', '--console-port', '0']);
      try {
        await until(() => /console: tcp:\/\/127\.0\.0\.1:(\d+)/.test(sim.out()), 15000, 'sim console');
        const cport = /console: tcp:\/\/127\.0\.0\.1:(\d+)/.exec(sim.out())![1];
        const up = await run(
          ['upload', '--tcp', `127.0.0.1:${cport}`, '--board', RELAY_BOARD, '--device-id', 'bench-9', '--host', `ws://127.0.0.1:${port}`, '--wifi-ssid', 'lab', '--db', db, '--verbose'],
          { PROOFRIG_WIFI_PASSWORD: WIFI_PASSWORD },
        );
        expect(up.code).toBe(0);
        outputs.upload = up.out + up.err;
        const r = await run(['call', 'relay_set', 'device_id=bench-9', 'channel=2', 'on=true', '--url', url, '--db', db]);
        expect(r.out).toMatch(/completed/);
        outputs['call bench-9'] = r.out + r.err;
      } finally {
        sim.p.kill('SIGINT');
        await sim.done;
        outputs['sim console'] = sim.out() + sim.err();
      }
    } finally {
      serve.p.kill('SIGTERM');
      await serve.done;
    }
    outputs['first serve banner'] = serve.out();
    outputs['first serve logs'] = serve.err();
    // The second run starts no simulated rig and so forgets this one (sims of earlier runs do not
    // pile up): take its secret now, to scan every output for it.
    const j1 = new Database(db, { readonly: true });
    const firstRun = j1.prepare('SELECT device_id, secret FROM devices').all() as { device_id: string; secret: string }[];
    j1.close();
    // a restart: the banner now names the token file instead of printing the token
    serve = start(['serve', '--http', '0', '--db', db, '--log-level', 'debug']);
    await until(() => /MCP \(Streamable HTTP\)/.test(serve.out()), 15000, 'second banner');
    serve.p.kill('SIGTERM');
    await serve.done;
    outputs['second serve banner'] = serve.out();
    outputs['second serve logs'] = serve.err();

    const j = new Database(db, { readonly: true });
    const secrets: Record<string, string> = { 'Wi-Fi password': WIFI_PASSWORD };
    for (const d of firstRun) secrets[`secret of ${d.device_id}`] = d.secret;
    for (const d of j.prepare('SELECT device_id, secret FROM devices').all() as { device_id: string; secret: string }[]) secrets[`secret of ${d.device_id}`] = d.secret;
    outputs['journal commands and events'] = JSON.stringify([j.prepare('SELECT * FROM commands').all(), j.prepare('SELECT * FROM command_events').all()]);
    j.close();
    secrets['agent token'] = readFileSync(join(dir, 'agent-token'), 'utf8').trim();
    secrets['operator token'] = readFileSync(join(dir, 'operator-token'), 'utf8').trim();
    expect(Object.keys(secrets).sort()).toEqual(['Wi-Fi password', 'agent token', 'operator token', 'secret of bench-9', `secret of ${RIG}`].sort());

    // The first banner shows the agent token on purpose (it was just created): in the client config
    // and in the dashboard URL's fragment. Those two places aside, nothing.
    const first = outputs['first serve banner'];
    expect(first.split(secrets['agent token']).length - 1).toBe(2);
    outputs['first serve banner'] = first
      .replace(`"Authorization": "Bearer ${secrets['agent token']}"`, '"Authorization": "<shown once>"')
      .replace(`/#token=${encodeURIComponent(secrets['agent token'])}`, '/#token=<shown once>');

    const hits: string[] = [];
    for (const [what, secret] of Object.entries(secrets)) {
      // the whole secret, and any 12-character piece of it (a truncated or split print)
      const pieces = [secret];
      for (let i = 0; i + 12 <= secret.length; i += 6) pieces.push(secret.slice(i, i + 12));
      for (const [where, text] of Object.entries(outputs)) if (pieces.some((p) => text.includes(p))) hits.push(`${what} in ${where}`);
    }
    expect(hits).toEqual([]);
    expect(outputs['second serve banner']).toMatch(/Bearer <the token in .*agent-token>/);
  }, 120000);
});
