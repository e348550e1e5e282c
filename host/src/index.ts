// Programmatic API of the host (tests, scripts and embedders).
export { HostCore, type HostOptions } from './core/host.js';
export { createMemoryLinkPair, type Link } from './core/memory-link.js';
export { realClock, VirtualClock, type Clock } from '@proofrig/protocol/clock';
export type { CommandStatus, SubmitInput } from './core/command-view.js';
export { createMcpServer } from './mcp/tools.js';
export { startHttpHost } from './mcp/http.js';
export { serve, parseSimSpec, type Running, type ServeOptions } from './serve.js';
export { loadBoard } from './cli/board.js';
