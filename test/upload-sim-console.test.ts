// The simulated Espruino console over TCP: the REPL behaviour EspruinoTools and the uploader rely on,
// reset/load/E.reboot/save, and the `proofrig sim` command.
import { afterEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import { BOOT_CODE_FILE } from '@proofrig/protocol';
import { SimRig } from '@proofrig/sim';
import { countBrackets, SAVED_STATE_FILE } from '../sim/src/console.js';
import { runSimCommand } from '../host/src/cli/sim.js';
import { crc32 } from '../host/src/upload/index.js';
import { RELAY_BOARD, until } from './helpers/e2e.js';

interface Term {
  sock: net.Socket;
  text(): string;
  clear(): void;
  send(s: string): void;
  /** Wait until the received text satisfies f. */
  wait(f: (t: string) => boolean, what?: string): Promise<string>;
  closed(): boolean;
}

async function connect(port: number): Promise<Term> {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  let got = '';
  let isClosed = false;
  sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
  sock.on('close', () => (isClosed = true));
  return {
    sock,
    text: () => got,
    clear: () => (got = ''),
    send: (s) => sock.write(Buffer.from(s, 'latin1')),
    async wait(f, what = 'console output') {
      await until(() => f(got), 3000, `${what} (got ${JSON.stringify(got)})`);
      return got;
    },
    closed: () => isClosed,
  };
}

let rig: SimRig | undefined;
let term: Term | undefined;
let consolePort = 0;
afterEach(() => {
  term?.sock.destroy();
  rig?.shutdown();
  rig = undefined;
  term = undefined;
});

async function blank(): Promise<{ rig: SimRig; term: Term }> {
  rig = new SimRig({ seed: 1 });
  rig.boot();
  consolePort = await rig.serveConsole(0);
  term = await connect(consolePort);
  return { rig, term };
}

describe('the REPL', () => {
  it('echoes typed input, prints =result and the > prompt with \\r\\n line ends', async () => {
    const { term } = await blank();
    term.send('\n');
    await term.wait((t) => t === '\r\n>');
    term.clear();
    term.send('1+2\n');
    expect(await term.wait((t) => t.endsWith('>'))).toBe('1+2\r\n=3\r\n>');
    term.clear();
    term.send('"a"+"b"\r\n');
    expect(await term.wait((t) => t.endsWith('>'))).toBe('"a"+"b"\r\n="ab"\r\n>');
  });

  it('a line starting with \\x10 runs without echo and without its result; print output still shows, then the prompt', async () => {
    const { term } = await blank();
    term.send('\x10var x = 41\n\x10x++\n\x10print("x is", x)\n');
    expect(await term.wait((t) => t.endsWith('>'))).toBe('x is 42\r\n>');
  });

  it('multi-line input runs once the brackets close; strings and comments hide brackets; ESC LF never executes', async () => {
    const { term } = await blank();
    term.send('function f(a) {\n  return a * 2; // }\n}\n');
    expect(await term.wait((t) => t.endsWith('>'))).toBe('function f(a) {\r\n:  return a * 2; // }\r\n:}\r\n=undefined\r\n>');
    term.clear();
    term.send('\x10var s = "{(["\x1b\n\x10print(f(21), s)\n');
    expect(await term.wait((t) => t.endsWith('>'))).toBe('42 {([\r\n>');
    expect(countBrackets('a("(", /* ) */ [1')).toBe(2);
    expect(countBrackets('"unfinished')).toBeGreaterThan(100);
  });

  it('errors are reported as "Uncaught ..." and the console carries on; Ctrl-C clears a half-typed line', async () => {
    const { term } = await blank();
    term.send('nosuch()\n');
    expect(await term.wait((t) => t.endsWith('>'))).toBe('nosuch()\r\nUncaught ReferenceError: nosuch is not defined\r\n>');
    term.clear();
    term.send('\x10if (true) {\x03\x10print("fresh")\n');
    expect(await term.wait((t) => t.includes('fresh') && t.endsWith('>'))).toBe('fresh\r\n>');
  });

  it('process.env answers what EspruinoTools asks on connect; E.CRC32 of Storage matches the uploader\'s CRC', async () => {
    const { rig, term } = await blank();
    term.send('\x10print("<","<<",JSON.stringify(process.env),">>",">")\n');
    const t = await term.wait((x) => x.includes('>> >'));
    const env = JSON.parse(/< << (.*) >> >/.exec(t)![1]);
    expect(env).toMatchObject({ BOARD: 'ESP32', VERSION: '2v25', CONSOLE: 'Telnet' });
    expect(env.MODULES.split(',')).toEqual(expect.arrayContaining(['Storage', 'net', 'Wifi']));
    const data = Buffer.from('hello \x00\xff world', 'latin1');
    rig.storage.write('f', data.toString('latin1'));
    term.clear();
    term.send('\x10print(E.CRC32(require("Storage").read("f")))\n');
    expect(Number((await term.wait((x) => x.endsWith('>'))).split('\r\n')[0])).toBe(crc32(data));
  });
});

describe('reset, load, E.reboot and save', () => {
  it('reset() stops everything and leaves a fresh context; Storage survives', async () => {
    const { rig, term } = await blank();
    term.send('\x10var keep = 1; setInterval(function(){ print("tick") }, 20); require("Storage").write("a", "kept")\n');
    await term.wait((t) => t.includes('tick'));
    term.send('\x10reset()\n');
    await until(() => rig.bootCount === 2, 2000, 'reset');
    term.clear();
    term.send('\x10print(typeof keep, require("Storage").read("a"))\n');
    await term.wait((t) => t.includes('undefined kept'));
    await new Promise((r) => setTimeout(r, 80));
    expect(term.text()).not.toContain('tick');
    expect(term.closed()).toBe(false);
  });

  it('load() runs Storage .bootcde in a fresh context and keeps the session; E.reboot() is a hardware reset that drops it', async () => {
    const { rig, term } = await blank();
    const code = 'var booted = "yes"; print("boot code ran");';
    term.send(`\x10require("Storage").write(${JSON.stringify(BOOT_CODE_FILE)}, ${JSON.stringify(code)})\n\x10load()\n`);
    await term.wait((t) => t.includes('boot code ran') && t.endsWith('>'));
    expect(rig.bootCount).toBe(2);
    term.clear();
    term.send('booted\n');
    await term.wait((t) => t.includes('="yes"'));
    term.send('\x10E.reboot()\n');
    await until(() => term.closed(), 2000, 'session dropped by E.reboot');
    await until(() => rig.bootCount === 3, 2000, 'rebooted');
    const again = await connect(consolePort);
    again.send('booted\n');
    await again.wait((t) => t.includes('="yes"'));
    again.sock.destroy();
  });

  it('save() keeps what was typed since the boot and the next boot replays it', async () => {
    const { rig, term } = await blank();
    term.send('\x10var saved = 5 * 5\n\x10save()\n');
    await until(() => rig.storage.read(SAVED_STATE_FILE) !== undefined, 2000, 'saved');
    term.send('\x10load()\n');
    await until(() => rig.bootCount === 2, 2000, 'load');
    term.clear();
    term.send('saved\n');
    await term.wait((t) => t.includes('=25'));
  });

  it('a power loss drops the session and the chip boots again', async () => {
    const { rig, term } = await blank();
    rig.powerLoss(50);
    await until(() => term.closed(), 2000, 'dropped');
    await until(() => rig.bootCount === 2, 2000, 'power back');
    expect(rig.running).toBe(true);
  });
});

describe('proofrig sim', () => {
  it('--blank serves an empty Espruino on the console port until told to stop', async () => {
    let out = '';
    let seen: { storage: string[]; answer: string } | undefined;
    const code = await runSimCommand(
      { board: RELAY_BOARD, consolePort: 0, blank: true, host: 'ws://127.0.0.1:8787/device' },
      {
        stdout: { write: (t: string) => (out += t) },
        stderr: { write: (t: string) => (out += t) },
        until: async (r, port) => {
          const t = await connect(port);
          t.send('6*7\n');
          const answer = await t.wait((x) => x.includes('=42'));
          seen = { storage: r.storage.list(), answer };
          t.sock.destroy();
        },
      },
    );
    expect(code).toBe(0);
    expect(seen!.storage).toEqual([]);
    expect(out).toMatch(/Espruino console: tcp:\/\/127\.0\.0\.1:\d+/);
    expect(out).toMatch(/proofrig upload --tcp 127\.0\.0\.1:\d+ --board/);
  });

  it('without --blank the board already holds the firmware and a config; wrong calls exit 2', async () => {
    let out = '';
    // proofrig.boot: the firmware's boot counter, written at its first boot.
    const code = await runSimCommand(
      { board: RELAY_BOARD, consolePort: 0, host: 'ws://127.0.0.1:9/device', quiet: true },
      { stdout: { write: (t: string) => (out += t) }, until: async (r) => void expect(r.storage.list().sort()).toEqual(['.bootcde', 'proofrig.boot', 'proofrig.json']) },
    );
    expect(code).toBe(0);
    expect(out).toMatch(/proofrig firmware, device relay-rig-4ch/);
    let err = '';
    const bad = await runSimCommand({ consolePort: 0, host: 'x' }, { stderr: { write: (t: string) => (err += t) } });
    expect(bad).toBe(2);
    expect(err).toMatch(/BAD_OPTION: --board is required/);
  });
});
