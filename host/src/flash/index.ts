// Flashing Espruino onto an ESP32: the programmatic API.
export {
  flashEspruino,
  listPorts,
  describePort,
  FlashError,
  DEFAULT_FLASH_BAUD,
  ROM_BAUD,
  NO_BOOTLOADER_HINT,
  type FlashErrorCode,
  type FlashOptions,
  type FlashProgress,
  type FlashResult,
  type FlashedRegion,
  type SerialPortListing,
} from './flash.js';
export { registerFlashCommand, runFlashCommand, type FlashCommandDeps, type FlashCommandOptions } from './command.js';
export { WebSerialAdapter, serialPortLike, type PortLike, type PortSink, type PortInfo, type ModemLines } from './web-serial-adapter.js';
export { loadEspruinoRelease, ESPRUINO_ESP32_LAYOUT, type ReleaseFile } from './release.js';
