// The simulated flash Storage: Espruino's file semantics, from the firmware and from Node.
import { describe, expect, it } from 'vitest';
import { firmware } from './helpers/sim-script.js';
import { VirtualClock } from '@proofrig/protocol/clock';
import { SimRig, SimStorage } from '@proofrig/sim';

function run(src: string, prepare?: (s: SimStorage) => void) {
  const lines: string[] = [];
  const rig = new SimRig({ firmwarePath: firmware(src), clock: new VirtualClock(0), seed: 1, console: (l) => lines.push(l) });
  prepare?.(rig.storage);
  rig.boot();
  return { rig, lines };
}

describe('Storage from Node (what the uploader and the tests use)', () => {
  it('reads and writes latin1 byte strings and lists files in creation order', () => {
    const s = new SimStorage();
    expect(s.write('a', 'x\u00ff\u0000y')).toBe(true);
    s.write('b.json', JSON.stringify({ k: 1 }));
    expect(s.read('a')).toBe('x\u00ff\u0000y');
    expect(s.readBytes('a')).toEqual(new Uint8Array([0x78, 0xff, 0, 0x79]));
    expect(s.readJSON('b.json')).toEqual({ k: 1 });
    expect(s.read('missing')).toBeUndefined();
    expect(s.list()).toEqual(['a', 'b.json']);
    expect(s.list(/\.json$/)).toEqual(['b.json']);
    s.erase('a');
    expect(s.list()).toEqual(['b.json']);
  });

  it('writes in chunks with offset/size like Espruino: unwritten bytes read as 0xFF', () => {
    const s = new SimStorage();
    s.write('f', 'Hello', 0, 14);
    expect(s.read('f')).toBe('Hello' + '\u00ff'.repeat(9));
    s.write('f', ' ', 5);
    s.write('f', 'World!!!', 6);
    expect(s.read('f')).toBe('Hello World!!!');
    expect(s.read('f', 6, 5)).toBe('World');
  });

  it('refuses to overwrite written bytes, to overflow the size, or to write at an offset of a missing file', () => {
    const s = new SimStorage();
    s.write('f', 'abc', 0, 6);
    expect(() => s.write('f', 'x', 1)).toThrow('File already written with different data');
    expect(() => s.write('f', 'wxyz', 3)).toThrow('Too much data for file size');
    expect(() => s.write('nope', 'x', 4)).toThrow('Unable to find or create file');
    expect(() => s.write('empty', '')).toThrow("Can't create zero length file");
  });

  it('rejects names longer than 28 characters', () => {
    const s = new SimStorage();
    expect(s.write('x'.repeat(28), '1')).toBe(true);
    expect(() => s.write('x'.repeat(29), '1')).toThrow(/File name too long/);
  });

  it('keeps replaced and erased files as trash until compact()', () => {
    const s = new SimStorage(4096);
    const free0 = s.getFree();
    s.write('a', 'x'.repeat(100));
    const free1 = s.getFree();
    expect(free1).toBeLessThan(free0);
    s.write('a', 'y'.repeat(100));
    expect(s.getFree()).toBeLessThan(free1);
    expect(s.getStats().trashCount).toBe(1);
    s.compact();
    expect(s.getFree()).toBe(free1);
    s.write('a', 'y'.repeat(100)); // identical content: nothing is written
    expect(s.getStats().trashCount).toBe(0);
  });

  it('compacts by itself when a new file does not fit, and fails when it still does not', () => {
    const s = new SimStorage(1024);
    for (let i = 0; i < 5; i++) s.write('a', String(i).repeat(400));
    expect(s.read('a')).toBe('4'.repeat(400));
    expect(() => s.write('b', 'z'.repeat(900))).toThrow('Unable to find or create file');
  });
});

describe("require('Storage') inside the firmware", () => {
  it('read/write/list/erase with Espruino results', () => {
    const { lines } = run(`
      var s = require('Storage');
      print(s.write('a.txt', 'hi'), s.read('a.txt'), s.read('none'));
      s.write('arr', [65, 66, 67]);
      s.write('obj', { k: [1] });
      print(s.read('arr'), s.read('obj'));
      print(JSON.stringify(s.list()), JSON.stringify(s.list(/^a/)), s.list() instanceof Array);
      s.erase('arr'); print(s.list().length, typeof s.getFree());`);
    expect(lines).toEqual(['true hi undefined', 'ABC {"k":[1]}', '["a.txt","arr","obj"] ["a.txt","arr"] true', '2 number']);
  });

  it('readJSON parses into the firmware realm and throws on bad JSON unless noExceptions', () => {
    const { lines } = run(`
      var s = require('Storage');
      s.writeJSON('c.json', { a: [1, 2] });
      var o = s.readJSON('c.json'); print(o.a.length, o instanceof Object, Array.isArray(o.a));
      s.write('bad.json', '{oops');
      try { s.readJSON('bad.json'); } catch (e) { print('threw', e instanceof SyntaxError); }
      print(s.readJSON('bad.json', true), s.readJSON('missing.json'));`);
    expect(lines).toEqual(['2 true true', 'threw true', 'undefined undefined']);
  });

  it('readArrayBuffer gives the raw bytes', () => {
    const { lines } = run(`var b = new Uint8Array(require('Storage').readArrayBuffer('bin')); print(b.length, b[0], b[2]);`, (s) =>
      s.write('bin', new Uint8Array([1, 2, 255])),
    );
    expect(lines).toEqual(['3 1 255']);
  });

  it('a name longer than 28 characters throws an Error the firmware can catch', () => {
    const { lines } = run(`try { require('Storage').write('${'n'.repeat(29)}', 'x'); } catch (e) { print(e instanceof Error, e.message); }`);
    expect(lines[0]).toMatch(/^true File name too long/);
  });

  it('what the firmware writes is visible from Node at once', () => {
    const { rig } = run(`require('Storage').write('log', 'a', 0, 3); require('Storage').write('log', 'b', 1);`);
    expect(rig.storage.read('log')).toBe('ab\u00ff');
  });
});
