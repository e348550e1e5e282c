// `proofrig board check FILE...`: a board file against its JSON Schema (field names, types,
// ranges, unknown keys: what an editor shows too) and then against the ESP32 and Espruino pin
// rules a schema cannot express. Every message names the field and the rule.
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { Ajv, type ErrorObject } from 'ajv';
import { checkBoard } from '@proofrig/protocol';
import type { BoardDef } from '@proofrig/protocol';
import { BOARDS_DIR, DEFAULT_DB, resolveBoardFile } from '../paths.js';

/**
 * Read a board given as a file path or a bundled board's id, and check it; throws an Error that
 * names the file and every problem. `serve --sim`, `sim` and `upload` all load boards this way.
 */
export function loadBoard(arg: string): BoardDef {
  const file = resolveBoardFile(arg);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`board file ${file} is not valid JSON: ${(e as Error).message}`);
  }
  const r = checkBoard(raw);
  if (!r.ok) throw new Error(`board file ${file} is invalid:\n  ${r.errors.join('\n  ')}`);
  return r.board;
}

export interface BoardReport {
  file: string;
  errors: string[];
  warnings: string[];
}

let validate: ReturnType<Ajv['compile']> | undefined;

function schemaValidator() {
  if (!validate) {
    const schema = JSON.parse(readFileSync(resolve(BOARDS_DIR, 'board.schema.json'), 'utf8'));
    validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
  }
  return validate;
}

/** "/relays/0/feedback/pin" → "relays[0].feedback.pin" */
function fieldOf(e: ErrorObject): string {
  let f = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p.replace(/~1/g, '/').replace(/~0/g, '~')}`))
    .join('')
    .replace(/^\./, '');
  if (e.keyword === 'additionalProperties') f = (f ? f + '.' : '') + String((e.params as { additionalProperty: string }).additionalProperty);
  if (e.keyword === 'required') f = (f ? f + '.' : '') + String((e.params as { missingProperty: string }).missingProperty);
  return f || 'board';
}

function ruleOf(e: ErrorObject): string {
  switch (e.keyword) {
    case 'additionalProperties':
      return 'is not a board field (misspelt?)';
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${(e.params as { type: string }).type === 'integer' ? 'an integer' : 'of type ' + (e.params as { type: string }).type}`;
    case 'minimum':
    case 'maximum':
      return `must be ${e.keyword === 'minimum' ? '≥' : '≤'} ${(e.params as { limit: number }).limit}`;
    case 'enum':
    case 'const':
      return `must be ${JSON.stringify((e.params as { allowedValues?: unknown[]; allowedValue?: unknown }).allowedValues ?? (e.params as { allowedValue: unknown }).allowedValue)}`;
    case 'pattern':
      return `must match ${(e.params as { pattern: string }).pattern}`;
    default:
      return e.message ?? e.keyword;
  }
}

/** Check one parsed board: schema first, then the pin rules; one message per field and rule. */
export function checkBoardFile(raw: unknown, file = 'board'): BoardReport {
  const v = schemaValidator();
  const errors: string[] = [];
  if (!v(raw)) {
    // anyOf (the feedback kinds) reports every branch; the pin rules below say it better.
    for (const e of v.errors ?? []) if (e.keyword !== 'anyOf' && !e.schemaPath.includes('anyOf')) errors.push(`${fieldOf(e)}: ${ruleOf(e)}`);
  }
  const r = checkBoard(raw);
  if (!r.ok) for (const m of r.errors) if (errors.indexOf(m) < 0) errors.push(m);
  // The same field flagged by both: keep the pin rule's message, which says why.
  const byField = new Map<string, string>();
  for (const m of errors) {
    const f = m.slice(0, m.indexOf(':'));
    const prev = byField.get(f);
    if (!prev || (!r.ok && r.errors.includes(m) && !r.errors.includes(prev))) byField.set(f, m);
  }
  const kept = errors.filter((m) => byField.get(m.slice(0, m.indexOf(':'))) === m || (!r.ok && r.errors.includes(m)));
  return { file, errors: [...new Set(kept)], warnings: r.warnings };
}

/**
 * Labels of this board that a device provisioned in the journal already uses: a name alone must
 * find one output on the host. The device the board is for (deviceId) does not clash with itself.
 * Read-only; a journal that cannot be read (a running host holds it) is reported as a warning.
 */
export function labelClashes(board: BoardDef, db: string, deviceId?: string): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  let rows: { device_id: string; board: string }[];
  try {
    const d = new Database(db, { readonly: true, fileMustExist: true });
    try {
      rows = d.prepare('SELECT device_id, board FROM devices').all() as { device_id: string; board: string }[];
    } finally {
      d.close();
    }
  } catch (e) {
    return { errors, warnings: [`labels not checked against the devices in ${db}: ${(e as Error).message}`] };
  }
  const mine = [
    ...board.relays.map((r) => ({ label: r.label, at: `relay channel ${r.ch}` })),
    ...(board.steppers ?? []).map((s) => ({ label: s.label, at: `axis ${s.axis}` })),
  ].filter((x): x is { label: string; at: string } => x.label !== undefined);
  for (const row of rows) {
    if (row.device_id === deviceId) continue;
    const other = JSON.parse(row.board) as BoardDef;
    const theirs = [...other.relays.map((r) => ({ label: r.label, at: `channel ${r.ch}` })), ...(other.steppers ?? []).map((s) => ({ label: s.label, at: `axis ${s.axis}` }))];
    for (const m of mine) {
      const t = theirs.find((x) => x.label !== undefined && x.label.trim().toLowerCase() === m.label.trim().toLowerCase());
      if (t) errors.push(`${m.at}: label "${m.label}" is already used by device ${row.device_id} (${t.at}); labels must be unique on the host so a name alone finds one output`);
    }
  }
  return { errors, warnings: [] };
}

/** A JSON Schema document (its `$schema` names json-schema.org), such as boards/board.schema.json. */
function isJsonSchema(raw: unknown): boolean {
  const s = (raw as { $schema?: unknown } | null)?.$schema;
  return typeof s === 'string' && /json-schema\.org/.test(s);
}

export function registerBoardCommand(program: Command): void {
  const board = program.command('board').description('Board definition files (boards/*.json).');
  board
    .command('check')
    .description('Check board files against the board schema and the ESP32/Espruino pin rules; exit 1 when any has errors.')
    .argument('<files...>', 'board JSON files')
    .option('--db <path>', 'also refuse labels that a device provisioned in this journal uses (default: the host journal, when there is one)')
    .option('--device-id <id>', 'the device the board is for (default: the board id, as for a simulated rig): its own labels in the journal are not duplicates')
    .action((files: string[], o: { db?: string; deviceId?: string }) => {
      const db = o.db ?? (existsSync(DEFAULT_DB) ? DEFAULT_DB : undefined);
      let bad = 0;
      for (const f of files) {
        let raw: unknown;
        try {
          raw = JSON.parse(readFileSync(f, 'utf8'));
        } catch (e) {
          throw new Error(`${f}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : 'not valid JSON: ' + (e as Error).message}`);
        }
        // `boards/*.json` takes the schema along: it describes boards, it is not one.
        if (isJsonSchema(raw)) {
          process.stdout.write(`${f}: skipped (a JSON Schema, not a board)\n`);
          continue;
        }
        const rep = checkBoardFile(raw, f);
        if (db && rep.errors.length === 0) {
          const c = labelClashes(raw as BoardDef, db, o.deviceId ?? (raw as BoardDef).id);
          rep.errors.push(...c.errors);
          rep.warnings.push(...c.warnings);
        }
        if (rep.errors.length) bad++;
        process.stdout.write(`${f}: ${rep.errors.length ? `${rep.errors.length} error(s)` : 'ok'}${rep.warnings.length ? `, ${rep.warnings.length} warning(s)` : ''}\n`);
        for (const m of rep.errors) process.stdout.write(`  error    ${m}\n`);
        for (const m of rep.warnings) process.stdout.write(`  warning  ${m}\n`);
      }
      process.exitCode = bad ? 1 : 0;
    });
}
