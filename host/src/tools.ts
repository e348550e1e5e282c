// @proofrig/host/tools: what the repo's own tools (bench) use to run a host in-process and reach
// it as a client would. TypeScript source, bundled into those tools; not part of the packed package.
export { serve, type Running, type ServeOptions } from './serve.js';
export { findToken } from './cli/call.js';
export { ConsoleClient } from './upload/console-client.js';
export { openTcp } from './upload/transport.js';
