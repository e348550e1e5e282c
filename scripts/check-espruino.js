#!/usr/bin/env node
// Fails the firmware build when the bundle contains something Espruino v2v29 rejects.
//
//   node scripts/check-espruino.js FILE [--max-bytes N] [--allow-modules Storage,net,Wifi]
//
// exit 0: prints "FILE: N bytes, 0 violations"
// exit 1: prints one `FILE:LINE:COL rule-id: message (excerpt)` line per violation
// exit 2: usage error or FILE missing

import { existsSync, readFileSync } from 'node:fs';
import { checkEspruino, formatViolation, DEFAULT_MAX_BYTES, DEFAULT_ALLOW_MODULES } from './espruino-compat.js';

const USAGE = 'usage: node scripts/check-espruino.js FILE [--max-bytes N] [--allow-modules Storage,net,Wifi]';

/** @param {string} message */
function usage(message) {
  console.error(`check-espruino: ${message}\n${USAGE}`);
  process.exit(2);
}

/** @param {string[]} argv */
function parseArgs(argv) {
  /** @type {{file?: string, maxBytes: number, allowModules: string[]}} */
  const out = { maxBytes: DEFAULT_MAX_BYTES, allowModules: [...DEFAULT_ALLOW_MODULES] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.startsWith('--') ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) usage(`${flag} needs a value`);
      return /** @type {string} */ (v);
    };
    if (flag === '--max-bytes') {
      const n = Number(value());
      if (!Number.isInteger(n) || n <= 0) usage('--max-bytes must be a positive integer');
      out.maxBytes = n;
    } else if (flag === '--allow-modules') {
      out.allowModules = value().split(',').map((s) => s.trim()).filter(Boolean);
    } else if (flag === '--help' || flag === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg.startsWith('-')) {
      usage(`unknown option ${arg}`);
    } else if (out.file) {
      usage('only one FILE at a time');
    } else {
      out.file = arg;
    }
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
if (!args.file) usage('missing FILE');
const file = /** @type {string} */ (args.file);
if (!existsSync(file)) {
  console.error(`check-espruino: ${file} does not exist: build the firmware first with npm run build -w firmware`);
  process.exit(2);
}

const source = readFileSync(file, 'utf8');
const bytes = Buffer.byteLength(source, 'utf8');
const violations = checkEspruino(source, { maxBytes: args.maxBytes, allowModules: args.allowModules });

// exitCode, not process.exit(): output to a pipe is written asynchronously and
// process.exit() would cut a long list of violations short.
if (violations.length === 0) {
  console.log(`${file}: ${bytes} bytes, 0 violations (Espruino compatibility check)`);
  process.exitCode = 0;
} else {
  const lines = violations.map((v) => formatViolation(file, v));
  lines.push(`${file}: ${bytes} bytes, ${violations.length} violation${violations.length === 1 ? '' : 's'} - Espruino would reject or lack these (the rules: scripts/espruino-compat/)`);
  process.stderr.write(lines.join('\n') + '\n');
  process.exitCode = 1;
}
