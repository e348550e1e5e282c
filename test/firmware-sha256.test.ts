// The firmware's SHA-256 is Espruino's native require('crypto').SHA256 and its HMAC is built on
// it in TypeScript: both must agree with Node's crypto byte for byte, or the host refuses every
// connection. Checked against a Node-backed SHA256 here, and on the real interpreter when
// PROOFRIG_ESPRUINO is set.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { authMessage, DEVICE_DIR, MAC_BYTES, macInput, seal, withCounter } from '@proofrig/protocol';
import { OP_TEXT, wsEncode } from '@proofrig/protocol/wscodec';
import { bundleForEspruino, ESPRUINO, ESPRUINO_NOTICE, runEspruino } from './helpers/espruino-run';

const nodeSha = (s: string) => createHash('sha256').update(Buffer.from(s, 'latin1')).digest('hex');
const nodeHmac = (k: string, m: string) => createHmac('sha256', k).update(m).digest('hex');

const SHA_VECTORS = ['', 'abc', 'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', '\xff\x80\x00\xfe'.repeat(20),
  ...[1, 31, 55, 56, 57, 63, 64, 65, 119, 120, 128, 129, 300].map((n) => randomBytes(n).toString('latin1'))];
const HMAC_VECTORS: [string, string][] = [];
for (const k of ['', 'k', 'a'.repeat(63), 'b'.repeat(64), 'c'.repeat(65), 'd'.repeat(200), 'clé-秘密-🔑'])
  for (const m of ['', 'x', 'y'.repeat(55), 'z'.repeat(64), 'w'.repeat(130), 'proofrig-auth-1|dév|…|😀']) HMAC_VECTORS.push([k, m]);

type Fw = { sha256(m: string): string; toHex(b: string): string; hmacSha256Hex(k: string, m: string): string };

describe("firmware sha256 and HMAC over a SHA256 like Espruino's native one (Node-backed here)", () => {
  let FW: Fw;
  beforeAll(async () => {
    // The module as built for the chip, in a vm with what Espruino offers: require('crypto').SHA256
    // → ArrayBuffer(32) of the string's bytes, E.toString(ArrayBuffer) → byte string.
    const ctx = vm.createContext({
      require: (n: string) => {
        if (n !== 'crypto') throw new Error('Module ' + n + ' not found');
        return { SHA256: (m: string) => new Uint8Array(createHash('sha256').update(Buffer.from(m, 'latin1')).digest()).buffer };
      },
      E: { toString: (b: ArrayBuffer) => Buffer.from(b).toString('latin1') },
    });
    vm.runInContext(await bundleForEspruino(join(__dirname, 'fixtures/espruino-probes/sha256-entry.ts')), ctx);
    FW = (ctx as { FW: Fw }).FW;
  }, 30_000);

  it('hashes byte strings, the FIPS 180-2 vectors and bytes with the high bit set included', () => {
    expect(FW.toHex(FW.sha256('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    for (const m of SHA_VECTORS) expect(FW.toHex(FW.sha256(m)), `length ${m.length}`).toBe(nodeSha(m));
  });

  it('hmacSha256Hex equals createHmac(sha256, key) for keys shorter than, equal to and longer than the block, UTF-8 included', () => {
    for (const [k, m] of HMAC_VECTORS) expect(FW.hmacSha256Hex(k, m), `key ${k.length}, msg ${m.length}`).toBe(nodeHmac(k, m));
  });

  it('gives the auth MAC the host checks, as 64 lowercase hex chars', () => {
    const secret = randomBytes(32).toString('hex');
    const msg = authMessage('relay-rig-4ch', '3-0123456789ab', randomBytes(16).toString('hex'), randomBytes(16).toString('hex'));
    expect(FW.hmacSha256Hex(secret, msg)).toMatch(/^[0-9a-f]{64}$/);
    expect(FW.hmacSha256Hex(secret, msg)).toBe(nodeHmac(secret, msg));
  });
});

/** JSON with every non-ASCII char as a \\u escape (the interpreter reads a file's bytes; literals with escapes are exact). */
const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

describe.skipIf(!ESPRUINO)('on the real Espruino interpreter (PROOFRIG_ESPRUINO)', () => {
  it('native SHA256 and the firmware HMAC equal Node\'s for every vector; prints the per-frame and handshake cost', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proofrig-crypto-'));
    const res = JSON.stringify({ t: 'res', rid: 'r-000123', st: 'completed', ev: 'aux_contact', ver: true, s: { up: 123456, relays: [1, 2, 3, 4].map((ch) => ({ ch, cmd: ch === 1, pin: ch === 1, aux: ch <= 2 ? ch === 1 : null })) }, ms: 31 });
    // Byte vectors travel as arrays of byte values and become byte strings there (String.fromCharCode).
    const vectors = { sha: SHA_VECTORS.map((m) => [...Buffer.from(m, 'latin1')]), hmac: HMAC_VECTORS, res, n: 200, hn: 20 };
    const src = 'var VECTORS=' + asciiJson(vectors) + ';\n' + (await bundleForEspruino(join(__dirname, 'fixtures/espruino-probes/crypto-probe.ts')));
    writeFileSync(join(dir, 'probe.js'), src);
    const out = await runEspruino(join(dir, 'probe.js'), dir, /PROBE\{.*\}\s*\n/, 30_000);
    const r = JSON.parse(/PROBE(\{.*\})/.exec(out)![1]) as { frameUs: number; wsFrameUs: number; tableFrameUs: number; handshakeUs: number; sealedLength: number };
    expect([...out.matchAll(/^SHA ([0-9a-f]+)/gm)].map((m) => m[1])).toEqual(SHA_VECTORS.map(nodeSha));
    expect([...out.matchAll(/^HMAC ([0-9a-f]+)/gm)].map((m) => m[1])).toEqual(HMAC_VECTORS.map(([k, m]) => nodeHmac(k, m)));
    // The 4-bytes-at-a-time masking (native conversions) equals the byte-by-byte reference
    // (Node has no E, so wsEncode here takes the byte loop), for lengths 125..132.
    const body = withCounter(res, vectors.n);
    const key = createHash('sha256').update('session key').digest();
    const last = seal(body, createHmac('sha256', key).update(macInput(DEVICE_DIR, body)).digest().subarray(0, MAC_BYTES).toString('base64'));
    const masked = [...out.matchAll(/^MASK ([0-9a-f]+)/gm)].map((m) => m[1]);
    expect(masked).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((n) => Buffer.from(wsEncode(OP_TEXT, last.substr(0, 125 + n), 'a\xb3c\xfe'), 'latin1').toString('hex')));
    // The firmware's own frames (mask.ts): the mask bit set, the all-zero key, the payload unchanged;
    // each equals the reference masking with that key (what the host's WebSocket library undoes).
    const tmasked = [...out.matchAll(/^TMASK ([0-9a-f]+)/gm)].map((m) => Buffer.from(m[1], 'hex').toString('latin1'));
    expect(tmasked.map((f) => f.charCodeAt(1) & 128)).toEqual(Array(8).fill(128));
    expect(tmasked).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((n) => wsEncode(OP_TEXT, last.substr(0, 125 + n), '\0\0\0\0')));
    console.log(`Espruino: sealing a ${r.sealedLength}-byte res frame takes ${r.frameUs.toFixed(0)} µs (masking it into a WebSocket frame: ${r.wsFrameUs.toFixed(0)} µs word by word, ${r.tableFrameUs.toFixed(0)} µs with the zero key); the device's handshake crypto ${r.handshakeUs.toFixed(0)} µs`);
  }, 60_000);
});
if (!ESPRUINO) console.log(ESPRUINO_NOTICE);
