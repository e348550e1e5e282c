// Where the repo's built artefacts are, from either host/src (tests) or host/dist (the bin).
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

export const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
export const FIRMWARE_FILE = resolve(REPO_ROOT, 'firmware', 'dist', 'proofrig.js');
export const BOARDS_DIR = resolve(REPO_ROOT, 'boards');
