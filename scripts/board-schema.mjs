#!/usr/bin/env node
// Generates boards/board.schema.json from the BoardDef type in shared-protocol/src/board.ts (the
// one source of truth: its doc comments become the schema's descriptions). `--check` exits 1
// when the committed schema differs from what the type says.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createGenerator } from 'ts-json-schema-generator';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = root + 'boards/board.schema.json';

export function generateBoardSchema() {
  const schema = createGenerator({
    path: root + 'shared-protocol/src/board.ts',
    tsconfig: root + 'tsconfig.json',
    type: 'BoardDef',
    additionalProperties: false,
    skipTypeCheck: true,
    topRef: false,
  }).createSchema('BoardDef');
  // Board files name their schema so editors complete and check them.
  schema.properties = { $schema: { type: 'string', description: 'Path or URL of this schema, for editors.' }, ...schema.properties };
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'proofrig board definition',
    description:
      'A relay/stepper rig wired to an ESP32: pins, active levels, feedback per output, worst-case actuation times, steps/mm, encoder counts/mm, travel and tolerances. Generated from BoardDef in shared-protocol/src/board.ts; `proofrig board check FILE` also checks the ESP32 pin rules a schema cannot express.',
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema')),
  };
}

const text = JSON.stringify(generateBoardSchema(), null, 2) + '\n';
if (process.argv.includes('--check')) {
  let had = '';
  try {
    had = readFileSync(out, 'utf8');
  } catch {}
  if (had !== text) {
    process.stderr.write('boards/board.schema.json is out of date with BoardDef: run `npm run schema`\n');
    process.exit(1);
  }
} else {
  writeFileSync(out, text);
  process.stdout.write(`wrote ${out}\n`);
}
