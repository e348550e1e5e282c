// `proofrig devices list|rm ID`: the provisioned devices of a journal, and removing one.
import { DEFAULT_DB } from '../paths.js';
import type { Command } from 'commander';
import { Journal } from '../core/journal/journal.js';
import { lockJournal } from '../journal-lock.js';
import { existsSync } from 'node:fs';
import { isPostgresUrl } from '../core/journal/db-url.js';

function open(db: string): Journal {
  if (!isPostgresUrl(db) && !existsSync(db)) throw new Error(`journal ${db} does not exist (pass --db FILE)`);
  return new Journal(db);
}

export function registerDevicesCommand(program: Command): void {
  const devices = program.command('devices').description('List or remove the devices provisioned in a journal.');

  devices
    .command('list')
    .description('List provisioned devices: board, last seen, simulated or real, open commands.')
    .option('--db <path>', 'journal database file', DEFAULT_DB)
    .option('--json', 'print JSON', false)
    .action((o) => {
      const j = open(o.db);
      try {
        const rows = j.devices().map((d) => ({
          device_id: d.device_id,
          board_id: d.board.id,
          simulated: d.simulated,
          last_seen: d.last_seen === null ? null : new Date(d.last_seen).toISOString(),
          open_commands: j.recent({ device_id: d.device_id, open: true, limit: 200 }).length,
        }));
        if (o.json) return void process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
        if (!rows.length) return void process.stdout.write('no devices provisioned\n');
        for (const r of rows)
          process.stdout.write(
            `${r.device_id}  board=${r.board_id}  ${r.simulated ? 'simulated' : 'real'}  last_seen=${r.last_seen ?? 'never'}  open_commands=${r.open_commands}\n`,
          );
      } finally {
        j.close();
      }
    });

  devices
    .command('rm')
    .description('Remove a device (its secret and board; its commands stay as history). Refused while it has open commands or a host owns the journal.')
    .argument('<device_id>')
    .option('--db <path>', 'journal database file', DEFAULT_DB)
    .action((id: string, o) => {
      if (!isPostgresUrl(o.db) && !existsSync(o.db)) throw new Error(`journal ${o.db} does not exist (pass --db FILE)`);
      // A running host keeps its devices in memory: remove only while no host owns the journal (in
      // PostgreSQL the journal's own advisory lock refuses this while a host holds the database).
      const lock = isPostgresUrl(o.db) ? undefined : lockJournal(o.db);
      let j: Journal | undefined;
      try {
        j = open(o.db);
        const r = j.removeDevice(id);
        if (!r.ok) throw new Error(r.reason);
        process.stdout.write(`removed ${id}\n`);
      } finally {
        j?.close();
        lock?.release();
      }
    });
}
