// One host per journal file: a lock file next to the journal names the owner (PID, port), so
// a second host is refused with a message instead of both writing the same commands table.
import { closeSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface JournalLock {
  file: string;
  /** Record the port the owner listens on, for the message a second host gets. */
  setPort(port: number): void;
  release(): void;
}

interface Owner {
  pid: number;
  port: number | null;
  started: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(file: string): Owner | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Owner;
  } catch {
    return undefined;
  }
}

export function lockJournal(db: string): JournalLock {
  const file = resolve(db) + '.lock';
  const me: Owner = { pid: process.pid, port: null, started: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeFileSync(fd, JSON.stringify(me));
      closeSync(fd);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      const other = readOwner(file);
      if (other && other.pid !== process.pid && alive(other.pid))
        throw new Error(
          `journal ${resolve(db)} is in use by another proofrig (PID ${other.pid}${other.port !== null ? `, port ${other.port}` : ''}, since ${other.started}); ` +
            `stop that one, or give this one its own journal with --db FILE`,
        );
      unlinkSync(file); // left by a host that died without cleaning up
    }
  }
  return {
    file,
    setPort(port) {
      me.port = port;
      writeFileSync(file, JSON.stringify(me));
    },
    release() {
      if (readOwner(file)?.pid === process.pid) {
        try {
          unlinkSync(file);
        } catch {
          /* already gone */
        }
      }
    },
  };
}
