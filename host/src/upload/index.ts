// Uploading the firmware and a rig config to an Espruino ESP32: public API of host/src/upload.
export { upload, normalizeHostUrl, asciiJson, makeRedactor, type UploadOptions, type UploadResult, type UploadedFile } from './upload.js';
export { registerUploadCommand, runUploadCommand, type UploadCommandDeps, type UploadCommandOptions } from './command.js';
export { UploadError, exitCodeOf, type UploadErrorCode } from './errors.js';
export { ConsoleClient, byteLiteral, CHUNK_BYTES, type FileInfo } from './console-client.js';
export { crc32, hex32 } from './crc.js';
export { parseTcpTarget, describeTarget, TELNET_PORT, CONSOLE_BAUD, type ConsoleTarget } from './transport.js';
