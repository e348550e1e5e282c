// What MCP clients may see and act on (`--expose`), as Home Assistant exposes chosen entities to
// its assistants: by default every provisioned device and output; with a list, only the devices
// and outputs it names. The dashboard and the operator's CLI are not MCP clients and see all.
import { readFileSync } from 'node:fs';
import { axisByName, relayByName, type BoardDef } from '@proofrig/protocol';

/** One entry: a whole device (`relay-rig-4ch`), one output of it (`relay-rig-4ch:1`, `stepper-rig:slide`), or a host-wide output name (`bench lamp`). */
interface Entry {
  device: string | null;
  output: string | null;
}

export class Exposure {
  private constructor(private readonly entries: Entry[] | null) {}

  /** Everything exposed (no --expose). */
  static all(): Exposure {
    return new Exposure(null);
  }

  /**
   * From `--expose` values: each is a comma-separated list of entries, or `@FILE` with one entry a
   * line (`#` starts a comment). `device`, `device:output` (number, name or label), or an output's
   * name alone.
   */
  static parse(values: string[]): Exposure {
    if (values.length === 0) return Exposure.all();
    const entries: Entry[] = [];
    for (const v of values) {
      const items = v.startsWith('@') ? readFileSync(v.slice(1), 'utf8').split('\n').map((l) => l.replace(/#.*/, '')) : v.split(',');
      for (const raw of items) {
        const s = raw.trim();
        if (!s) continue;
        const i = s.indexOf(':');
        entries.push(i < 0 ? { device: null, output: s } : { device: s.slice(0, i).trim(), output: s.slice(i + 1).trim() || null });
      }
    }
    if (entries.length === 0) throw new Error('--expose names nothing: give device ids, device:output pairs or output names');
    return new Exposure(entries);
  }

  get limited(): boolean {
    return this.entries !== null;
  }

  /** Is any part of this device exposed? */
  device(id: string, board: BoardDef | undefined): boolean {
    if (!this.entries) return true;
    return this.entries.some((e) => (e.device === null ? !!board && outputOf(board, e.output!) : e.device === id));
  }

  /** Is this relay channel exposed? */
  relay(id: string, board: BoardDef, ch: number): boolean {
    return this.output(id, board, (key) => relayOf(board, key) === ch);
  }

  /** Is this axis exposed? */
  axis(id: string, board: BoardDef, axis: string): boolean {
    return this.output(id, board, (key) => axisOf(board, key) === axis);
  }

  private output(id: string, board: BoardDef, is: (key: string) => boolean): boolean {
    if (!this.entries) return true;
    return this.entries.some((e) => (e.device === null ? is(e.output!) : e.device === id && (e.output === null || is(e.output))));
  }
}

function relayOf(board: BoardDef, key: string): number | undefined {
  if (/^\d+$/.test(key)) return board.relays.some((r) => r.ch === Number(key)) ? Number(key) : undefined;
  return relayByName(board, key)?.ch;
}

function axisOf(board: BoardDef, key: string): string | undefined {
  return axisByName(board, key)?.axis;
}

/** Does this board have an output called `key` (a name or label, not a bare number)? */
function outputOf(board: BoardDef, key: string): boolean {
  return !/^\d+$/.test(key) && (relayOf(board, key) !== undefined || axisOf(board, key) !== undefined);
}
