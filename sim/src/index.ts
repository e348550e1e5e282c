// @proofrig/sim: the simulated rig (the hardware every test and `--sim` run talks to).
export { SimRig, DEFAULT_OFF_MS, REBOOT_MS, ENGINES, type Engine, type SimRigOptions } from './rig.js';
export { EspruinoEngine, espruinoBinary } from './espruino-engine.js';
export {
  parseFault,
  resolveFault,
  RELAY_FAULTS,
  isRelayFault,
  AXIS_FAULTS,
  AXIS_FAULT_FORMS,
  isAxisFault,
  HARD_STOP_MM,
  type RelayFault,
  type AxisFault,
  type AxisFaultSpec,
  type ResolvedFault,
} from './faults.js';
export { SimStorage, STORAGE_NAME_MAX, STORAGE_DEFAULT_SIZE, type StorageStats } from './storage.js';
export type { RelayState } from './relay-model.js';
export {
  PHYSICS_TICK_MS,
  SWITCH_BAND_MM,
  STALL_FAULT_MIN_MS,
  STALL_FAULT_MAX_MS,
  type AxisState,
} from './slide-model.js';
export type { DropDirection } from './network.js';
export { SOCKET_ERRORS, NET_CHUNK_SIZE } from './net.js';
export { WIFI_CONNECT_MS } from './wifi.js';
export type { Gpio, PinMode, PwmState, Level } from './gpio.js';
export { Fabric, NO_FAULTS, type FabricFaults, type FabricEvent, type FabricDirection } from './fabric.js';
export { calibrate, chipSpeedUnavailable, quotaFor, ChipCgroup, CHIP_NS_PER_INSTRUCTION, type ChipSpeed } from './chip-speed.js';
export { SensorModels, SENSOR_FAULTS, type SensorFault } from './sensor-models.js';
export { PwmModels, FAN_FAULTS, type FanFault, type FanTruth, type ServoTruth } from './pwm-models.js';
