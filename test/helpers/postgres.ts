// A real PostgreSQL for a spec: Debian's postgresql binaries, a cluster made by initdb in a temp folder
// owned by the postgres user (PostgreSQL refuses to run as root; as another user it runs as that user),
// listening on a free loopback port only, password (scram) auth over TCP, started with `pg_ctl start -w`
// and stopped and removed afterwards (also when the test process ends). fsync is off in these throwaway
// clusters: the specs test what the journal waits for, not PostgreSQL's own disk. Where the binaries
// are missing the specs skip with a one-line notice; with CI set that fails the run (.ci/run installs them).
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, serviceGate } from './service.js';

function findBin(): string {
  if (process.env.PROOFRIG_PG_BIN) return process.env.PROOFRIG_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : join(root, 'VERSION', 'bin');
}

export const PG_BIN = findBin();
export const POSTGRES_AVAILABLE = existsSync(join(PG_BIN, 'initdb'));
/** True when the PostgreSQL specs run; else prints the one-line notice once. */
export const postgresOrNotice = serviceGate('PostgreSQL', join(PG_BIN, 'initdb'), POSTGRES_AVAILABLE, 'postgresql');

/** The superuser of the specs' clusters and its password (which the URLs carry, and logs must not). */
export const PG_USER = 'proofrig';
export const PG_PASS = 'pg-secret-for-tests';

/** Run a PostgreSQL program as the cluster's owner: the postgres user when we are root, else ourselves. */
function asOwner(cmd: string, args: string[]): string {
  const root = process.getuid?.() === 0;
  const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args]] : [join(PG_BIN, cmd), args];
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface Postgres {
  port: number;
  /** postgres://proofrig:PASS@127.0.0.1:PORT/ + db */
  url(db?: string): string;
  /** A fresh database; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** A client of the cluster (the caller ends it). */
  client(db?: string): Promise<pg.Client>;
  /** The server's log so far. */
  log(): string;
  /** Stop the server at once (pg_ctl stop -m immediate: as if the machine lost it), keeping its files. */
  kill(): void;
  /** Start it again on the same port and files. */
  start(): void;
  /** Stop it and remove its files. */
  stop(): void;
}

let made = 0;
const live = new Set<Postgres>();
process.on('exit', () => {
  for (const p of live) p.stop();
});

/** Start a throwaway cluster on a free loopback port. */
export async function startPostgres(): Promise<Postgres> {
  const dir = mkdtempSync(join(tmpdir(), 'proofrig-pg-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    writeFileSync(join(dir, 'pw'), PG_PASS + '\n');
    chownSync(join(dir, 'pw'), uid, gid);
  } else writeFileSync(join(dir, 'pw'), PG_PASS + '\n');
  asOwner('initdb', ['-D', data, '-U', PG_USER, '--pwfile', join(dir, 'pw'), '--auth-host=scram-sha-256', '--auth-local=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c full_page_writes=off -c synchronous_commit=on`;
  const start = () => void asOwner('pg_ctl', ['-D', data, '-o', opts, '-l', logFile, '-w', '-t', '30', 'start']);
  start();
  let stopped = false;
  const url = (db = 'postgres') => `postgres://${PG_USER}:${PG_PASS}@127.0.0.1:${port}/${db}`;
  const client = async (db = 'postgres') => {
    const c = new pg.Client({ connectionString: url(db) });
    await c.connect();
    return c;
  };
  const self: Postgres = {
    port,
    url,
    client,
    async createDatabase(name = `journal_${process.pid}_${++made}`) {
      const c = await client();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      return url(name);
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    kill() {
      spawnSync(process.getuid?.() === 0 ? 'runuser' : join(PG_BIN, 'pg_ctl'), process.getuid?.() === 0 ? ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'] : ['-D', data, '-m', 'immediate', '-w', 'stop'], {
        stdio: 'ignore',
      });
    },
    start,
    stop() {
      if (stopped) return;
      stopped = true;
      live.delete(self);
      self.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(self);
  return self;
}
