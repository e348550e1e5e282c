// The simulated rig: public API of host/src/sim (the hardware every test and `--sim` run talks to).
export { SimRig, DEFAULT_OFF_MS, REBOOT_MS, type SimRigOptions } from './rig.js';
export { parseFault, RELAY_FAULTS, isRelayFault, type RelayFault } from './faults.js';
export { SimStorage, STORAGE_NAME_MAX, STORAGE_DEFAULT_SIZE, type StorageStats } from './storage.js';
export type { RelayState } from './relay-model.js';
export type { DropDirection } from './link.js';
export { SOCKET_ERRORS, NET_CHUNK_SIZE } from './net.js';
export { WIFI_CONNECT_MS } from './wifi.js';
export type { Gpio, PinMode, PwmState, Level } from './gpio.js';
