// The ad-hoc latency probes' setup: a host in this process and one simulated relay rig (`proofrig rigs`,
// the built firmware) in another, online as `lat-1`. RIG_PROF=dir CPU-profiles the rig process.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { DEVICE_PATH } from '@proofrig/protocol';
import { serve } from '@proofrig/host/tools';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function hostWithRig() {
  const db = join(mkdtempSync(join(tmpdir(), 'proofrig-lat-')), 'journal.db');
  const running = await serve({ db, port: 0, logger: pino({ level: 'silent' }), heartbeatMs: 2000 });
  const prof = process.env.RIG_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.RIG_PROF] : [];
  const args = [...prof, join(ROOT, 'host', 'bin', 'proofrig.js'), 'rigs', '--board', join(ROOT, 'boards', 'relay-rig-4ch.json'), '--count', '1', '--id-prefix', 'lat'];
  const rig = spawn(process.execPath, [...args, '--host', `ws://127.0.0.1:${running.http.port}${DEVICE_PATH}`, '--db', db, '--seed', '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
  while (!running.core.devices.session('lat-1')) await new Promise((r) => setTimeout(r, 20));
  /** Stop the rig (letting it write its profile with RIG_PROF) and the host. */
  const close = async () => {
    rig.kill(prof.length ? 'SIGTERM' : 'SIGKILL');
    if (prof.length) await new Promise((r) => rig.once('exit', r));
    await running.close();
  };
  return { running, close };
}
