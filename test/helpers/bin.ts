// The built `proofrig` bin as a child process, its output collected: for specs that run the command
// a user types (the README's examples, the secret scan).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../host/bin/proofrig.js', import.meta.url));

export interface Proc {
  p: ChildProcess;
  out: () => string;
  err: () => string;
  done: Promise<number>;
}

/** `proofrig ARGS` with `env` over this process's environment (and in `cwd` when given). */
export function startBin(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Proc {
  const p = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout!.on('data', (d) => (out += d));
  p.stderr!.on('data', (d) => (err += d));
  const done = new Promise<number>((r) => p.on('close', (c) => r(c ?? -1)));
  return { p, out: () => out, err: () => err, done };
}
