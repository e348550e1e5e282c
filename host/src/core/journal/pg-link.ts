// One PostgreSQL connection (node-postgres) on a worker thread, which the journal uses both ways: waited
// for on this thread (the start, a write that must be durable when it returns, close: Atomics.wait
// until the worker answers, as the journal's SQLite calls are synchronous) and in the background (a
// batch's commit, whose waiters are told when it returns). The worker runs requests one at a time, in
// the order they were asked, so a waited-for request also waits for the background ones before it;
// after a request fails, every later one fails with the same reason (nothing commits after a lost batch).
import { createRequire } from 'node:module';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

export interface Query {
  text: string;
  values?: unknown[];
}

interface Reply {
  id: number;
  /** The rows of each query, as arrays in the order of its columns. */
  rows?: unknown[][][];
  error?: string;
}

// CommonJS, evaluated as the worker's whole program. flags[0]: the id of the last waited-for request answered.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const pg = require(workerData.pg);
// BIGINT and NUMERIC as JS numbers (the journal's columns hold what a JS number holds).
pg.types.setTypeParser(20, Number);
pg.types.setTypeParser(1700, Number);
const flags = new Int32Array(workerData.flags);
const port = workerData.port;
const client = new pg.Client({ connectionString: workerData.url, application_name: workerData.app, connectionTimeoutMillis: workerData.connectMs });
let dead;
const say = (e) => (e && (e.message || (e.errors && e.errors.map((x) => x.message).join('; ')) || e.code)) || String(e);
client.on('error', (e) => { dead = dead || e; });
let chain = client.connect().catch((e) => { dead = e; });
async function handle(m) {
  let reply;
  if (m.close) {
    try { await client.end(); } catch {}
    reply = { id: m.id, rows: [] };
  } else if (dead) reply = { id: m.id, error: say(dead) };
  else
    try {
      const rows = [];
      if (m.tx) await client.query('BEGIN');
      for (const q of m.queries) rows.push((await client.query({ text: q.text, values: q.values, rowMode: 'array' })).rows);
      if (m.tx) await client.query('COMMIT');
      reply = { id: m.id, rows };
    } catch (e) {
      if (m.tx && !dead) try { await client.query('ROLLBACK'); } catch {}
      reply = { id: m.id, error: say(e) };
      // A transaction that failed is a journal that takes no more writes: nothing after it may commit.
      dead = dead || e;
    }
  if (m.sync) {
    port.postMessage(reply);
    Atomics.store(flags, 0, m.id);
    Atomics.notify(flags, 0);
  } else parentPort.postMessage(reply);
}
parentPort.on('message', (m) => { chain = chain.then(() => handle(m)); });
`;

export class PgLink {
  private readonly worker: Worker;
  private readonly flags = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private nextId = 0;
  private readonly pending = new Map<number, (r: Reply) => void>();
  private closed = false;

  /** `url` is the connection string; `shown` is how errors name the database (the URL with its password masked). */
  constructor(
    url: string,
    private readonly shown: string,
    private readonly waitMs: number,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const pg = createRequire(import.meta.url).resolve('pg');
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { url, pg, flags: this.flags.buffer, port: port2, app: `proofrig host pid ${process.pid}`, connectMs: waitMs },
      transferList: [port2],
    });
    // Kept alive only while a background request runs (see run).
    this.worker.unref();
    this.worker.on('message', (r: Reply) => {
      const done = this.pending.get(r.id);
      this.pending.delete(r.id);
      if (this.pending.size === 0) this.worker.unref();
      done?.(r);
    });
    this.worker.on('error', (e) => this.failAll(`the PostgreSQL worker failed: ${e.message}`));
    this.worker.on('exit', () => this.failAll('the PostgreSQL worker exited'));
  }

  private failAll(error: string): void {
    for (const [id, done] of this.pending) done({ id, error });
    this.pending.clear();
  }

  /** Run the queries (in one transaction with `tx`) and wait for them on this thread; throws with PostgreSQL's reason. */
  runSync(queries: Query[], tx = false): unknown[][][] {
    if (this.closed) throw new Error(`the connection to ${this.shown} is closed`);
    const id = ++this.nextId;
    this.worker.postMessage({ id, sync: true, tx, queries });
    const end = Date.now() + this.waitMs;
    for (;;) {
      const got = Atomics.load(this.flags, 0);
      if (got === id) break;
      const left = end - Date.now();
      if (left <= 0 || Atomics.wait(this.flags, 0, got, left) === 'timed-out')
        throw new Error(`PostgreSQL at ${this.shown} did not answer within ${this.waitMs} ms`);
    }
    const r = receiveMessageOnPort(this.port)?.message as Reply | undefined;
    if (!r || r.id !== id) throw new Error(`PostgreSQL at ${this.shown}: answer out of order`);
    if (r.error !== undefined) throw new Error(r.error);
    return r.rows!;
  }

  /** Run the queries in the background (in one transaction with `tx`); `done` gets PostgreSQL's reason if they failed. */
  run(queries: Query[], tx: boolean, done: (err: Error | null) => void): void {
    if (this.closed) return done(new Error(`the connection to ${this.shown} is closed`));
    const id = ++this.nextId;
    this.worker.ref();
    this.pending.set(id, (r) => done(r.error === undefined ? null : new Error(r.error)));
    this.worker.postMessage({ id, sync: false, tx, queries });
  }

  /** End the connection (after what was asked before) and the thread; nothing can be asked after this. */
  close(): void {
    if (this.closed) return;
    try {
      this.runSync([]);
      const id = ++this.nextId;
      this.worker.postMessage({ id, sync: true, close: true, queries: [] });
      Atomics.wait(this.flags, 0, Atomics.load(this.flags, 0), this.waitMs);
    } catch {
      // a connection that is gone ends with the thread
    }
    this.closed = true;
    void this.worker.terminate();
  }
}
