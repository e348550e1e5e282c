// The Web-Serial-shaped adapter esptool-js talks through: lines, bytes, baud rate, close.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SerialPort, SerialPortMock } from 'serialport';
import { Transport } from 'esptool-js';
import { serialPortLike, WebSerialAdapter, type ModemLines, type PortLike, type PortSink } from '../host/src/flash/web-serial-adapter.js';

/** A PortLike that records what it is asked to do. */
function recordingPort() {
  const calls: { set: ModemLines[]; update: number[]; written: Uint8Array[] } = { set: [], update: [], written: [] };
  let sink: PortSink | null = null;
  const port: PortLike = {
    path: '/dev/ttyTEST',
    getInfo: () => ({ usbVendorId: 0x1a86, usbProductId: 0x7523 }),
    open: async (_baud, s) => {
      sink = s;
    },
    write: async (d) => {
      calls.written.push(new Uint8Array(d));
    },
    set: async (l) => {
      calls.set.push({ ...l });
    },
    update: async (b) => {
      calls.update.push(b);
    },
    close: async () => {
      sink = null;
    },
  };
  return { port, calls, emit: (b: Uint8Array) => sink?.data(b), hangUp: () => sink?.closed() };
}

describe('modem lines', () => {
  it('remembers both lines and sends both, whichever one esptool-js sets', async () => {
    const { port, calls } = recordingPort();
    const adapter = new WebSerialAdapter(port);
    await adapter.open({ baudRate: 115200 });
    await adapter.setSignals({ dataTerminalReady: false });
    await adapter.setSignals({ requestToSend: true });
    await adapter.setSignals({ dataTerminalReady: true, requestToSend: false });
    await adapter.setSignals({ break: true });
    expect(calls.set).toEqual([
      { dtr: false, rts: true, brk: false }, // RTS as the tty was opened (asserted), not a default
      { dtr: false, rts: true, brk: false },
      { dtr: true, rts: false, brk: false },
      { dtr: true, rts: false, brk: true },
    ]);
  });

  it("esptool-js's setRTS (RTS, then DTR re-sent) reaches the port with both lines each time", async () => {
    const { port, calls } = recordingPort();
    const transport = new Transport(new WebSerialAdapter(port) as never);
    await transport.connect(115200);
    await transport.setDTR(false);
    await transport.setRTS(true);
    expect(calls.set).toEqual([
      { dtr: false, rts: true, brk: false },
      { dtr: false, rts: true, brk: false },
      { dtr: false, rts: true, brk: false },
    ]);
  });

  describe('on a serialport port (serialport mock binding)', () => {
    const instances: SerialPortMock[] = [];
    class TrackedMock extends SerialPortMock {
      constructor(options: ConstructorParameters<typeof SerialPortMock>[0]) {
        super(options);
        instances.push(this);
      }
    }
    afterEach(() => {
      instances.length = 0;
      SerialPortMock.binding.reset();
    });

    it('serialport itself drives a line left out to high; the adapter never leaves one out', async () => {
      SerialPortMock.binding.createPort('/dev/ttyMOCK0', { echo: true });
      // The pitfall: raw serialport, DTR alone → RTS forced high.
      const raw = new SerialPortMock({ path: '/dev/ttyMOCK0', baudRate: 115200, autoOpen: false });
      await new Promise<void>((res, rej) => raw.open((e) => (e ? rej(e) : res())));
      const rawSet = vi.spyOn(raw.port!, 'set');
      await new Promise<void>((res) => raw.set({ dtr: false }, () => res()));
      expect(rawSet.mock.calls[0][0]).toMatchObject({ dtr: false, rts: true });
      await new Promise<void>((res) => raw.close(() => res()));

      const adapter = new WebSerialAdapter(serialPortLike('/dev/ttyMOCK0', {}, TrackedMock as unknown as typeof SerialPort));
      await adapter.open({ baudRate: 115200 });
      const set = vi.spyOn(instances[0].port!, 'set');
      await adapter.setSignals({ dataTerminalReady: true, requestToSend: false });
      await adapter.setSignals({ dataTerminalReady: false });
      expect(set.mock.calls.map(([l]: [{ dtr?: boolean; rts?: boolean; brk?: boolean }]) => ({ dtr: l.dtr, rts: l.rts, brk: l.brk }))).toEqual([
        { dtr: true, rts: false, brk: false },
        { dtr: false, rts: false, brk: false },
      ]);
      await adapter.close();
    });

    it('moves bytes both ways, changes the rate in place and closes', async () => {
      SerialPortMock.binding.createPort('/dev/ttyMOCK1', { echo: true });
      const adapter = new WebSerialAdapter(serialPortLike('/dev/ttyMOCK1', {}, TrackedMock as unknown as typeof SerialPort));
      await adapter.open({ baudRate: 115200 });
      const writer = adapter.writable!.getWriter();
      await writer.write(Uint8Array.of(0xc0, 0x01, 0x02, 0xc0));
      writer.releaseLock();
      const reader = adapter.readable!.getReader();
      const { value } = await reader.read();
      reader.releaseLock();
      expect([...value!]).toEqual([0xc0, 0x01, 0x02, 0xc0]); // the mock echoes

      await adapter.setBaudRate(921600);
      expect((await instances[0].port!.getBaudRate()).baudRate).toBe(921600);
      expect(adapter.baudRate).toBe(921600);

      await adapter.close();
      expect(instances[0].isOpen).toBe(false);
      expect(adapter.readable).toBeNull();
      expect(adapter.writable).toBeNull();
    });
  });
});

describe('streams, as Web Serial has them', () => {
  it('a cancelled readable is replaced by a fresh one while the port stays open', async () => {
    const { port, emit } = recordingPort();
    const adapter = new WebSerialAdapter(port);
    expect(adapter.readable).toBeNull();
    await adapter.open({ baudRate: 115200 });
    const first = adapter.readable!;
    const reader = first.getReader();
    emit(Uint8Array.of(1, 2));
    expect([...(await reader.read()).value!]).toEqual([1, 2]);
    await reader.cancel();
    reader.releaseLock();
    const second = adapter.readable!;
    expect(second).not.toBe(first);
    emit(Uint8Array.of(3));
    const r2 = second.getReader();
    expect([...(await r2.read()).value!]).toEqual([3]);
    r2.releaseLock();
  });

  it('the device going away ends the readable (esptool-js sees done)', async () => {
    const { port, hangUp } = recordingPort();
    const adapter = new WebSerialAdapter(port);
    await adapter.open({ baudRate: 115200 });
    const reader = adapter.readable!.getReader();
    const pending = reader.read();
    hangUp();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(adapter.readable).toBeNull();
  });

  it('getInfo passes the USB ids through; opening twice is an error', async () => {
    const { port } = recordingPort();
    const adapter = new WebSerialAdapter(port);
    expect(adapter.getInfo()).toEqual({ usbVendorId: 0x1a86, usbProductId: 0x7523 });
    await adapter.open({ baudRate: 115200 });
    await expect(adapter.open({ baudRate: 115200 })).rejects.toThrow(/already open/);
  });
});
