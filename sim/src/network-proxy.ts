// The Espruino engine's network path: a loopback TCP proxy the rig owns between the interpreter's
// real socket and the host's gateway (or the MQTT broker), so linkDrop acts on a real TCP connection with the same
// semantics as the vm engine (bytes swallowed, new connections refused, live ones reset when the
// outage ends).
import net from 'node:net';
import type { SimNetwork } from './network.js';

export class NetworkProxy {
  private server: net.Server | undefined;
  private pairs = new Set<{ dev: net.Socket; up: net.Socket }>();

  constructor(
    private readonly network: SimNetwork,
    private readonly target: { host: string; port: number },
  ) {}

  /** Listen on a free loopback port; resolves to it. */
  async listen(): Promise<number> {
    const server = net.createServer((dev) => this.accept(dev));
    this.server = server;
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(0, '127.0.0.1', () => res());
    });
    return (server.address() as net.AddressInfo).port;
  }

  private accept(dev: net.Socket): void {
    dev.setNoDelay(true);
    if (this.network.down) {
      dev.resetAndDestroy(); // the SYN is lost: to the chip a refused connection
      return;
    }
    const up = net.connect(this.target.port, this.target.host);
    up.setNoDelay(true);
    const pair = { dev, up };
    this.pairs.add(pair);
    const unregister = this.network.register({
      outageReset: () => {
        dev.resetAndDestroy();
        up.destroy();
      },
    });
    const end = (): void => {
      this.pairs.delete(pair);
      unregister();
    };
    dev.on('data', (b) => {
      if (!this.network.swallowsFromDevice) up.write(b);
    });
    up.on('data', (b) => {
      if (!this.network.swallowsToDevice) dev.write(b);
    });
    // A FIN or RST during an outage is lost like the bytes; the network's reset at restore ends the pair.
    dev.on('close', () => {
      if (!this.network.swallowsFromDevice) up.destroy();
      end();
    });
    up.on('close', () => {
      if (!this.network.swallowsToDevice) dev.destroy();
      else return;
      end();
    });
    dev.on('error', () => {});
    up.on('error', () => {});
  }

  /** Drop every connection (the interpreter died) without touching the listening port. */
  resetAll(): void {
    for (const p of this.pairs) {
      p.dev.destroy();
      p.up.destroy();
    }
    this.pairs.clear();
  }

  close(): void {
    this.resetAll();
    this.server?.close();
    this.server = undefined;
  }
}
