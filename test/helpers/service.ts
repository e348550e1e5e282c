// What the specs on a real service (Mosquitto, PostgreSQL) share: whether the service is installed,
// with a one-line notice once where it is not (and a failed run under CI, where .ci/run installs it),
// and a free loopback port for it.
import { createServer } from 'node:net';

/**
 * The gate of one service's specs: `available` says whether its binary is at `where`. Under CI a
 * missing one throws at once; elsewhere the returned function prints `<what> specs skipped: ...` once.
 */
export function serviceGate(what: string, where: string, available: boolean, pkg: string): () => boolean {
  if (!available && process.env.CI) throw new Error(`CI requires ${pkg} at ${where}: .ci/run installs Debian's ${pkg} package`);
  let noticed = false;
  return () => {
    if (available) return true;
    if (!noticed) {
      noticed = true;
      console.log(`${what} specs skipped: not found at ${where} (apt-get install -y ${pkg})`);
    }
    return false;
  };
}

/** A loopback port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}
