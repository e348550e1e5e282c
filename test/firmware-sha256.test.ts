// The firmware's own SHA-256 / HMAC-SHA256 (the chip may lack require('crypto')) must agree
// with Node's crypto byte for byte, or the host refuses every connection.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authMessage } from '@proofrig/protocol';
import { hmacSha256Hex, sha256, toHex } from '../firmware/src/sha256';

const latin1 = (b: Buffer) => b.toString('latin1');
const nodeSha = (s: string) => createHash('sha256').update(Buffer.from(s, 'latin1')).digest('hex');

describe('firmware sha256', () => {
  it('matches the FIPS 180-2 test vectors', () => {
    expect(toHex(sha256(''))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(toHex(sha256('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(toHex(sha256('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('agrees with node:crypto at every padding boundary (55, 56, 63, 64, 65 bytes) and over many blocks', () => {
    for (const n of [0, 1, 3, 31, 32, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4097]) {
      const m = latin1(randomBytes(n));
      expect(toHex(sha256(m)), `length ${n}`).toBe(nodeSha(m));
    }
  });

  it('hashes bytes with the high bit set as bytes', () => {
    const m = '\xff\x80\x00\xfe'.repeat(20);
    expect(toHex(sha256(m))).toBe(nodeSha(m));
  });
});

describe('firmware hmacSha256Hex', () => {
  it('equals createHmac(sha256, secretString) for the auth message the host checks', () => {
    const secret = randomBytes(32).toString('hex');
    const msg = authMessage('relay-rig-4ch', '0123456789abcdef', randomBytes(16).toString('hex'), randomBytes(16).toString('hex'));
    expect(hmacSha256Hex(secret, msg)).toBe(createHmac('sha256', secret).update(msg).digest('hex'));
  });

  it('handles keys shorter than, equal to and longer than the 64-byte block', () => {
    for (const k of ['', 'k', 'a'.repeat(63), 'b'.repeat(64), 'c'.repeat(65), 'd'.repeat(200)]) {
      for (const m of ['', 'x', 'y'.repeat(55), 'z'.repeat(64), 'w'.repeat(300)]) {
        expect(hmacSha256Hex(k, m), `key ${k.length}, msg ${m.length}`).toBe(createHmac('sha256', k).update(m).digest('hex'));
      }
    }
  });

  it('uses the UTF-8 bytes of non-ASCII keys and messages, as Node does', () => {
    const k = 'clé-秘密-🔑';
    const m = 'proofrig-auth-1|dév|…|😀';
    expect(hmacSha256Hex(k, m)).toBe(createHmac('sha256', k).update(m).digest('hex'));
  });

  it('returns 64 lowercase hex chars (the auth frame format)', () => {
    expect(hmacSha256Hex('s', 'm')).toMatch(/^[0-9a-f]{64}$/);
  });
});
