#!/usr/bin/env node
// npm pack of the host (prepack): the installed package carries the built firmware file and the
// example boards in host/assets/, since it has no repo around it to find them in.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const fw = root + 'firmware/dist/proofrig.js';
const fwMqtt = root + 'firmware/dist/proofrig-mqtt.js';
if (!existsSync(fw) || !existsSync(fwMqtt) || !existsSync(root + 'host/dist/cli.js')) {
  process.stderr.write('pack: build first (npm run build): the package ships host/dist and firmware/dist/proofrig.js and proofrig-mqtt.js\n');
  process.exit(1);
}
const assets = root + 'host/assets/';
rmSync(assets, { recursive: true, force: true });
mkdirSync(assets + 'boards', { recursive: true });
cpSync(fw, assets + 'proofrig.js');
cpSync(fwMqtt, assets + 'proofrig-mqtt.js');
for (const f of readdirSync(root + 'boards')) if (f.endsWith('.json')) cpSync(root + 'boards/' + f, assets + 'boards/' + f);
process.stdout.write(`pack: firmware (WebSocket and MQTT) and ${readdirSync(assets + 'boards').length} board files copied into host/assets\n`);
