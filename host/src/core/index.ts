// @proofrig/host/core: what the repo's own tools (chaos, bench) build on from the host core.
// TypeScript source, bundled into those tools; not part of the packed package (see package.json "files").
export { HostCore, type HostOptions } from './host.js';
export type { CommandStatus, SubmitInput } from './command-view.js';
export { Journal } from './journal/journal.js';
export { blankCommand, type CommandRecord } from './journal/records.js';
export { Checkpointer } from './checkpointer.js';
export { newSecret } from './ids.js';
