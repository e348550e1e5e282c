// Byte pipes to an Espruino console: a TCP socket (an ESP32's telnet console, or a simulated rig's) or a
// serial port. The console client and the EspruinoTools wrapper both run over these addresses.
import net from 'node:net';
import { UploadError } from './errors.js';

/** Default telnet port of Espruino's console on an ESP32. */
export const TELNET_PORT = 23;
/** Baud rate of the Espruino console on an ESP32. */
export const CONSOLE_BAUD = 115200;

export type ConsoleTarget = { kind: 'tcp'; host: string; port: number } | { kind: 'serial'; path: string; baud: number };

export interface Transport {
  write(data: Buffer): Promise<void>;
  /** Received bytes as a latin1 string (Espruino's strings are bytes). */
  onData(cb: (chunk: string) => void): void;
  onClose(cb: () => void): void;
  close(): Promise<void>;
}

export function describeTarget(t: ConsoleTarget): string {
  return t.kind === 'tcp' ? `tcp://${t.host}:${t.port}` : t.path;
}

/** "HOST[:PORT]" → target; throws BAD_OPTION for anything else. */
export function parseTcpTarget(s: string): ConsoleTarget {
  const m = /^(?:tcp:\/\/)?([A-Za-z0-9.-]+)(?::([0-9]{1,5}))?$/.exec(String(s).trim());
  const port = m && m[2] !== undefined ? Number(m[2]) : TELNET_PORT;
  if (!m || !(port >= 1 && port <= 65535))
    throw new UploadError('BAD_OPTION', `--tcp must be HOST[:PORT] (port 1..65535, default ${TELNET_PORT}), got "${s}"`);
  return { kind: 'tcp', host: m[1], port };
}

export function open(target: ConsoleTarget, timeoutMs = 4000): Promise<Transport> {
  return target.kind === 'tcp' ? openTcp(target.host, target.port, timeoutMs) : openSerial(target.path, target.baud);
}

function noConsoleTcp(host: string, port: number, why: string): UploadError {
  return new UploadError(
    'NO_CONSOLE',
    `no Espruino console at tcp://${host}:${port} (${why}). Is the board powered, on the network and running Espruino ` +
      `(its telnet console listens on port ${TELNET_PORT})? For a simulated board start one with ` +
      '`proofrig sim --board boards/<rig>.json --console-port N --blank` and use --tcp 127.0.0.1:N; over USB use --port.',
  );
}

export function openTcp(host: string, port: number, timeoutMs: number): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host, port });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(noConsoleTcp(host, port, `no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(noConsoleTcp(host, port, e.code === 'ECONNREFUSED' ? 'connection refused' : e.code ?? e.message));
    });
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.removeAllListeners('error');
      sock.on('error', () => {});
      sock.setNoDelay(true);
      resolve({
        write: (data) => new Promise<void>((res, rej) => sock.write(data, (err) => (err ? rej(err) : res()))),
        onData: (cb) => sock.on('data', (b: Buffer) => cb(b.toString('latin1'))),
        onClose: (cb) => sock.on('close', cb),
        close: () =>
          new Promise<void>((res) => {
            if (sock.destroyed) return res();
            sock.once('close', () => res());
            sock.end();
            setTimeout(() => sock.destroy(), 500).unref();
          }),
      });
    });
  });
}

export async function openSerial(path: string, baud: number): Promise<Transport> {
  const { SerialPort } = await import('serialport');
  const port = new SerialPort({ path, baudRate: baud, autoOpen: false });
  await new Promise<void>((resolve, reject) =>
    port.open((err) => {
      if (!err) return resolve();
      const msg = err.message;
      if (/busy|denied|lock/i.test(msg))
        reject(new UploadError('PORT_BUSY', `serial port ${path} is held by another program (a serial monitor, the Espruino IDE?): ${msg}`));
      else
        reject(
          new UploadError('NO_CONSOLE', `cannot open serial port ${path}: ${msg}. List the ports with \`proofrig flash --list\`; is the board plugged in with a data cable?`),
        );
    }),
  );
  return {
    write: (data) =>
      new Promise<void>((res, rej) =>
        port.write(data, (err) => {
          if (err) return rej(err);
          port.drain((e) => (e ? rej(e) : res()));
        }),
      ),
    onData: (cb) => port.on('data', (b: Buffer) => cb(b.toString('latin1'))),
    onClose: (cb) => port.on('close', cb),
    close: () => new Promise<void>((res) => (port.isOpen ? port.close(() => res()) : res())),
  };
}
