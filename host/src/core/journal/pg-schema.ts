// The journal's tables in PostgreSQL: the same tables and columns as the SQLite working copy (read from
// it, so schema.ts and the column table in records.ts stay their one source), with the types mapped,
// each with the working copy's rowid where the table has no integer key of its own (so a reload keeps
// the order SQLite's queries break ties by). A version table records the migrations applied; a journal
// written by a newer proofrig is refused rather than written with an older idea of its tables.
import type Database from 'better-sqlite3';
import type { Query } from './pg-link.js';

/** The PostgreSQL schema version this proofrig writes. */
export const PG_SCHEMA_VERSION = 1;
/** The column holding the working copy's rowid in tables without an INTEGER PRIMARY KEY. */
export const ROWID = '_rowid';
/** The key of the advisory lock the host holding a journal takes (one writing host per database in this version). */
export const LOCK_KEY = 0x70726f6f; // "proo"

export interface Table {
  name: string;
  /** The columns, in the working copy's order. */
  cols: string[];
  /** Their PostgreSQL declarations. */
  decls: string[];
  key: string;
  /** The key is the rowid (INTEGER PRIMARY KEY): no ROWID column. */
  keyIsRowid: boolean;
}

interface ColumnInfo {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}

/**
 * SQLite's declared type as PostgreSQL's. INTEGER is NUMERIC: SQLite keeps any JS number a column is given
 * (12.5 in an INTEGER column is stored as REAL), and NUMERIC gives back exactly the number it was given.
 */
export function pgType(sqliteType: string): string {
  const t = sqliteType.toUpperCase();
  if (t.includes('INT')) return 'NUMERIC';
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return 'DOUBLE PRECISION';
  return 'TEXT';
}

/** The journal's tables as the working copy has them (after its own migrations). */
export function tablesOf(db: Database.Database): Table[] {
  const names = (db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  return names.map((name) => {
    const info = db.prepare(`PRAGMA main.table_info(${name})`).all() as ColumnInfo[];
    const pks = info.filter((c) => c.pk > 0);
    if (pks.length !== 1) throw new Error(`journal table ${name} has no single-column primary key; it cannot be kept in PostgreSQL`);
    const key = pks[0];
    return {
      name,
      cols: info.map((c) => c.name),
      decls: info.map((c) => `${pgType(c.type)}${c.pk ? ' PRIMARY KEY' : c.notnull ? ' NOT NULL' : ''}${c.dflt_value !== null ? ` DEFAULT ${c.dflt_value}` : ''}`),
      key: key.name,
      keyIsRowid: key.type.toUpperCase() === 'INTEGER',
    };
  });
}

/** The CREATE TABLE of a table (with its ROWID column unless its key is the rowid). */
function createTable(t: Table): string {
  const cols = t.cols.map((c, i) => `  ${c} ${t.decls[i]}`);
  if (!t.keyIsRowid) cols.push(`  ${ROWID} BIGINT NOT NULL`);
  return `CREATE TABLE IF NOT EXISTS ${t.name} (\n${cols.join(',\n')}\n)`;
}

/**
 * The migrations, by version: what brings a database at version v-1 to v. Version 1 creates the tables
 * as the working copy has them. Columns the working copy gained since are added by reconcile() at every
 * start, as SQLite's migrate() adds them to an older file (schema.ts).
 */
const MIGRATIONS: ((tables: Table[]) => Query[])[] = [(tables) => tables.map((t) => ({ text: createTable(t) }))];

export const VERSION_TABLE = `CREATE TABLE IF NOT EXISTS proofrig_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL, by TEXT NOT NULL)`;

/** The queries that bring a database at `have` to this version (one transaction, with the version rows). */
export function migrations(have: number, tables: Table[], now: number): Query[] {
  const out: Query[] = [];
  for (let v = have + 1; v <= PG_SCHEMA_VERSION; v++) {
    out.push(...MIGRATIONS[v - 1](tables));
    out.push({ text: 'INSERT INTO proofrig_schema (version, applied_at, by) VALUES ($1, $2, $3)', values: [v, now, `proofrig host pid ${process.pid}`] });
  }
  return out;
}

/** Tables and columns the working copy has and the database lacks (a newer proofrig's columns, added in place). */
export function reconcile(tables: Table[], have: { table: string; column: string }[]): Query[] {
  const cols = new Set(have.map((h) => `${h.table}.${h.column}`));
  const present = new Set(have.map((h) => h.table));
  const out: Query[] = [];
  for (const t of tables) {
    if (!present.has(t.name)) {
      out.push({ text: createTable(t) });
      continue;
    }
    t.cols.forEach((c, i) => {
      // A key cannot be added to an existing table; NOT NULL columns need their DEFAULT (as in SQLite's ALTER TABLE).
      if (!cols.has(`${t.name}.${c}`)) out.push({ text: `ALTER TABLE ${t.name} ADD COLUMN ${c} ${t.decls[i].replace(' PRIMARY KEY', '')}` });
    });
  }
  return out;
}

/** The columns of the journal's tables in the database (to reconcile). */
export const COLUMNS_QUERY = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`;
