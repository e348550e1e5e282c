// Globals Espruino shares with browsers and Node. Only the firmware's own tsconfig includes this
// file: the root typecheck gets these names from @types/node, and declaring them twice clashes.
declare function setTimeout(fn: () => void, ms?: number): number;
declare function setInterval(fn: () => void, ms?: number): number;
declare function clearTimeout(id?: number): void;
declare function clearInterval(id?: number): void;
declare function btoa(bytes: string): string;
declare function require(name: string): any;
declare var console: { log(...args: unknown[]): void };
declare var process: any;
