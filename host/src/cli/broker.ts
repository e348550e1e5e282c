// `proofrig broker acl`: the MQTT broker's password and ACL files from the devices provisioned in a
// journal (host/src/broker/mosquitto-auth.ts says who may do what), for Mosquitto's password_file
// and acl_file. Run it again after provisioning a device, then reload the broker (SIGHUP).
import { chmodSync, chownSync, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_DB } from '../paths.js';
import { Journal } from '../core/journal/journal.js';
import { isPostgresUrl } from '../core/journal/db-url.js';
import { prepareStateDir, stateDir } from '../state-dir.js';
import { loadOrCreateBrokerPassword, BROKER_PASSWORD_FILE } from '../broker/host-password.js';
import { HOST_USER, mosquittoAuth } from '../broker/mosquitto-auth.js';

interface Out {
  write(text: string): unknown;
}

/**
 * Write `passwd` and `acl` into dir (each whole or not at all) for the journal's devices and the host
 * (only the host while there is no journal yet); returns their paths. Throws before writing anything
 * when a device cannot be a broker user.
 */
export function writeBrokerAcl(db: string, dir: string): { passwd: string; acl: string; devices: string[]; journal: boolean } {
  let devices: { device_id: string; secret: string }[] = [];
  // A bench starting out has no journal yet: the files then let the host in, and no device.
  const journal = isPostgresUrl(db) || existsSync(db);
  if (journal) {
    const j = new Journal(db);
    try {
      devices = j.devices().map((d) => ({ device_id: d.device_id, secret: d.secret }));
    } finally {
      j.close();
    }
  } else prepareStateDir(stateDir(db));
  const auth = mosquittoAuth(devices, loadOrCreateBrokerPassword(stateDir(db)));
  mkdirSync(dir, { recursive: true });
  const out = { passwd: join(dir, 'passwd'), acl: join(dir, 'acl') };
  // Whole files only: a broker reloading meanwhile reads the old one or the new one. 0640: hashes
  // only, but no reason for everyone to read them; the broker's group must (chgrp mosquitto). A file
  // written before keeps its mode, owner and group, so that setting survives the next run.
  for (const [file, text] of [[out.passwd, auth.passwd], [out.acl, auth.acl]] as const) {
    const tmp = file + '.tmp';
    writeFileSync(tmp, text, { mode: 0o640 });
    if (existsSync(file)) {
      const st = statSync(file);
      chmodSync(tmp, st.mode & 0o777);
      try {
        chownSync(tmp, st.uid, st.gid);
      } catch {
        // Not ours to give away (not root): the new file stays this user's.
      }
    }
    renameSync(tmp, file);
  }
  return { ...out, devices: devices.map((d) => d.device_id), journal };
}

export function registerBrokerCommand(program: Command, out: Out = process.stdout): void {
  const broker = program.command('broker').description('Files for an MQTT broker that devices reach the host through (docs/mqtt.md).');
  broker
    .command('acl')
    .description(
      `Write a Mosquitto password file and ACL file for the devices provisioned in the journal: each device (user name = device id, password derived from its secret) may only use its own topics, the host (user ${HOST_USER}) all. Reload the broker afterwards (SIGHUP).`,
    )
    .option('--db <path>', 'journal database file', DEFAULT_DB)
    .requiredOption('--out <dir>', 'folder to write passwd and acl into')
    .action((o) => {
      const r = writeBrokerAcl(o.db, resolve(o.out));
      out.write(
        [
          `wrote ${r.passwd} and ${r.acl}: the host (${HOST_USER}) and ${r.devices.length} device(s)${r.devices.length ? ': ' + r.devices.join(', ') : ''}${r.journal ? '' : ` (no journal at ${resolve(o.db)} yet: run this again once devices are provisioned)`}`,
          `the host's broker password is in ${join(stateDir(resolve(o.db)), BROKER_PASSWORD_FILE)}; serve --broker mqtt://HOST:PORT logs in with it`,
          'mosquitto.conf needs:',
          '  allow_anonymous false',
          `  password_file ${r.passwd}`,
          `  acl_file ${r.acl}`,
          '  set_tcp_nodelay true',
          'then reload the broker (kill -HUP <its pid>); a running broker started as root reads them as the mosquitto user (chgrp mosquitto them).',
          '',
        ].join('\n'),
      );
    });
}
