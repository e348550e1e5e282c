// Upload failures: a stable code for scripts and a message that says how to fix the call.

export type UploadErrorCode =
  | 'BAD_OPTION'
  | 'BAD_BOARD'
  | 'BUILD_FAILED'
  | 'NO_CONSOLE'
  | 'PORT_BUSY'
  | 'NO_RESPONSE'
  | 'WRITE_FAILED'
  | 'UPLOAD_FAILED'
  | 'CRC_MISMATCH'
  | 'REGISTER_FAILED'
  | 'REBOOT_FAILED';

/** Exit code of `proofrig upload` for each failure: 2 = the call was wrong, 1 = it failed. */
export function exitCodeOf(code: UploadErrorCode): 1 | 2 {
  return code === 'BAD_OPTION' || code === 'BAD_BOARD' ? 2 : 1;
}

export class UploadError extends Error {
  constructor(
    readonly code: UploadErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'UploadError';
  }
}
