// How Espruino prints values on its console: console.log/print arguments and "Uncaught ..." reports.

const MAX_DEPTH = 6;

function tag(v: unknown): string {
  return Object.prototype.toString.call(v).slice(8, -1);
}

function isErrorLike(v: unknown): v is { name: string; message: string } {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { name?: unknown; message?: unknown };
  return tag(v) === 'Error' || (typeof o.name === 'string' && typeof o.message === 'string' && /Error$/.test(o.name));
}

/** Espruino-style JSON-ish rendering: `{ "a": 1, "b": [ 1, 2 ] }`, strings quoted. */
export function formatValue(v: unknown, depth = 0, seen: unknown[] = []): string {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
    case 'boolean':
      return String(v);
    case 'bigint':
      return String(v);
    case 'symbol':
      return String(v);
    case 'function':
      return 'function () { ... }';
  }
  if (isErrorLike(v)) return `${v.name}: ${v.message}`;
  if (seen.indexOf(v) >= 0 || depth >= MAX_DEPTH) return '...';
  const next = seen.concat([v]);
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
    const arr = Array.prototype.slice.call(v as unknown as ArrayLike<number>) as number[];
    return `new ${tag(v)}([${arr.join(', ')}])`;
  }
  if (tag(v) === 'ArrayBuffer') {
    return `new Uint8Array([${Array.prototype.slice.call(new Uint8Array(v as ArrayBuffer)).join(', ')}]).buffer`;
  }
  if (Array.isArray(v)) {
    if (v.length === 0) return '[ ]';
    return '[ ' + v.map((x) => formatValue(x, depth + 1, next)).join(', ') + ' ]';
  }
  if (tag(v) === 'Date') return (v as Date).toString();
  const keys = Object.keys(v as object);
  if (keys.length === 0) return '{ }';
  return (
    '{ ' +
    keys.map((k) => JSON.stringify(k) + ': ' + formatValue((v as Record<string, unknown>)[k], depth + 1, next)).join(', ') +
    ' }'
  );
}

/** console.log / print: strings as they are, other values as formatValue, joined by spaces. */
export function formatArgs(args: readonly unknown[]): string {
  return args.map((a) => (typeof a === 'string' ? a : formatValue(a))).join(' ');
}

/** The lines Espruino prints for an exception nobody caught. */
export function uncaughtLines(e: unknown, scriptName: string): string[] {
  const first = 'Uncaught ' + formatValue(e);
  const lines = [first];
  const stack = isErrorLike(e) ? (e as { stack?: unknown }).stack : undefined;
  if (typeof stack === 'string') {
    for (const l of stack.split('\n').slice(1)) {
      if (l.indexOf(scriptName) >= 0 || /evalmachine|<anonymous>/.test(l)) lines.push(' ' + l.trim());
    }
  }
  return lines;
}
