// @proofrig/protocol: the one source of truth for what crosses the device link.
export * from './codes.js';
export * from './lifecycle.js';
export * from './device-state.js';
export * from './board.js';
export * from './board-check.js';
export * from './sensors.js';
export * from './load-current.js';
export * from './pwm.js';
export * from './actions.js';
export * from './constants.js';
export * from './seal.js';
export * from './timeout.js';
export * from './motion.js';
export * from './check.js';
export * from './to-device.js';
export * from './to-host.js';
export * from './config.js';
export type { Link } from './link.js';
