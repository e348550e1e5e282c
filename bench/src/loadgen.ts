// Protocol-level devices for the bench, in their own process: each authenticates exactly as the firmware
// does and answers every `cmd` with `ack` then `res` (no vm, no physics), so capacity figures are the
// host's. Built on @proofrig/protocol so it follows the wire format. `echo` mode is the raw baseline: a
// plain WebSocket client per socket that answers each message with one message.
// argv[2]: JSON { url, mode: 'proofrig' | 'echo', devices: [{ id, secret, board }] }
import { createHmac, randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import {
  authMessage,
  DEVICE_DIR,
  HOST_DIR,
  hostProofMessage,
  MAC_BYTES,
  macInput,
  parseToDevice,
  PROTOCOL_VERSION,
  seal,
  sessionKeyMessage,
  unseal,
  withCounter,
  type DeviceState,
} from '@proofrig/protocol';

interface Spec {
  url: string;
  mode: 'proofrig' | 'echo';
  devices: { id: string; secret: string; board: string }[];
}

const spec = JSON.parse(process.argv[2]) as Spec;
const t0 = Date.now();
let online = 0;

function report(): void {
  process.send?.({ online });
}

function echoDevice(): void {
  const ws = new WebSocket(spec.url, { perMessageDeflate: false });
  ws.on('open', () => {
    online++;
    report();
  });
  ws.on('message', (m) => ws.send(m as Buffer));
  ws.on('error', () => {});
}

function device(d: Spec['devices'][number]): void {
  const ws = new WebSocket(spec.url, { perMessageDeflate: false });
  const boot = randomBytes(6).toString('hex');
  const cn = randomBytes(16).toString('hex');
  const relays = [1, 2, 3, 4].map((ch) => ({ ch, cmd: null as boolean | null, pin: null as boolean | null, aux: null }));
  const state = (): DeviceState => ({ up: Date.now() - t0, relays });
  let hb: NodeJS.Timeout | undefined;
  let sn = '';
  // After the host's `ok` (its proof checked) every frame both ways is sealed, exactly as the firmware does (seal.ts).
  let key: Buffer | undefined;
  let txN = 0;
  let rxN = 0;
  const mac = (dir: string, body: string) => createHmac('sha256', key!).update(macInput(dir, body)).digest().subarray(0, MAC_BYTES).toString('base64');
  const send = (f: object) => {
    let j = JSON.stringify(f);
    if (key) {
      j = withCounter(j, ++txN);
      j = seal(j, mac(DEVICE_DIR, j));
    }
    ws.send(j);
  };
  ws.on('open', () => send({ t: 'hello', v: PROTOCOL_VERSION, dev: d.id, boot, fw: 'bench-loadgen', board: d.board, cn }));
  ws.on('message', (m) => {
    let text = m.toString();
    if (key) {
      const u = unseal(text);
      // Like the firmware: anything but the next frame with a good MAC is refused and never acted on.
      if (!u || u.mac !== mac(HOST_DIR, u.body) || !u.body.endsWith(withCounter('}', rxN + 1))) return;
      rxN++;
      text = u.body;
    }
    const p = parseToDevice(text);
    if (!p.ok) return;
    const f = p.f;
    switch (f.t) {
      case 'chal':
        sn = f.sn;
        send({ t: 'auth', mac: createHmac('sha256', d.secret).update(authMessage(d.id, boot, cn, f.sn)).digest('hex') });
        return;
      case 'ok':
        if (key || f.mac !== createHmac('sha256', d.secret).update(hostProofMessage(d.id, boot, cn, sn, f.hb)).digest('hex')) {
          ws.close();
          return;
        }
        key = createHmac('sha256', d.secret).update(sessionKeyMessage(d.id, boot, cn, sn)).digest();
        online++;
        report();
        hb = setInterval(() => send({ t: 'hb', up: Date.now() - t0 }), f.hb);
        return;
      case 'cmd': {
        // As the firmware: accepted, executed, then the result with its evidence and a state snapshot.
        send({ t: 'ack', rid: f.rid, st: 'accepted' });
        const r = relays.find((x) => x.ch === f.p.ch);
        if (r) r.cmd = r.pin = f.p.on === true;
        send({ t: 'res', rid: f.rid, st: 'completed', ev: 'pin_readback', ver: true, s: state(), ms: 0 });
        return;
      }
      case 'q':
        send(f.rid ? { t: 'state', q: f.q, s: state(), rid: f.rid, rst: 'unknown' } : { t: 'state', q: f.q, s: state() });
        return;
      default:
        return;
    }
  });
  ws.on('close', () => clearInterval(hb));
  ws.on('error', () => {});
}

for (const d of spec.devices) (spec.mode === 'echo' ? echoDevice : () => device(d))();
process.on('disconnect', () => process.exit(0));
