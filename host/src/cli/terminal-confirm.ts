// The person at the host's own terminal confirms an operator-only call that carries no operator
// token: the one confirmation an MCP client cannot give itself. One question at a time (a second
// call waits its turn), answered by typing the device id; anything else, the deadline or the
// caller going away refuses it.
import { createInterface } from 'node:readline';
import type { ConfirmRequest, HostConfirm } from '../mcp/operator-tools.js';

/** How long the person at the terminal has to answer. */
export const CONFIRM_TIMEOUT_MS = 120_000;

export function terminalConfirm(input: NodeJS.ReadableStream, output: NodeJS.WritableStream, timeoutMs = CONFIRM_TIMEOUT_MS): HostConfirm {
  let turn: Promise<unknown> = Promise.resolve();
  const ask = (q: ConfirmRequest, signal: AbortSignal) =>
    new Promise<{ ok: true } | { ok: false; why: string }>((resolve) => {
      if (signal.aborted) return resolve({ ok: false, why: 'the caller went away' });
      // Not a TTY-mode interface: Ctrl-C keeps reaching the host as SIGINT while the question is open.
      const rl = createInterface({ input, terminal: false });
      const end = (r: { ok: true } | { ok: false; why: string }) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', gone);
        rl.removeListener('line', onLine);
        rl.close();
        output.write(r.ok ? `confirmed: ${q.tool} ${q.deviceId}\n` : `refused: ${q.tool} ${q.deviceId} (${r.why})\n`);
        resolve(r);
      };
      const onLine = (line: string) =>
        end(line.trim() === q.deviceId ? { ok: true } : { ok: false, why: line.trim() ? `typed "${line.trim().slice(0, 64)}", not the device id` : 'nothing typed' });
      const gone = () => end({ ok: false, why: 'the caller went away' });
      const timer = setTimeout(() => end({ ok: false, why: `no answer within ${timeoutMs >= 1000 ? Math.round(timeoutMs / 1000) + ' s' : timeoutMs + ' ms'}` }), timeoutMs);
      signal.addEventListener('abort', gone);
      rl.on('line', onLine);
      output.write(
        `\nOPERATOR CONFIRMATION (${q.client ? `asked by MCP client "${q.client}"` : 'asked by an MCP call without a token'}): ${q.what}.\n` +
          `An AI agent must not do this alone. Type the device id "${q.deviceId}" and Enter to confirm; anything else refuses.\n> `,
      );
    });
  return (q, signal) => {
    const mine = turn.then(() => ask(q, signal));
    turn = mine.catch(() => {});
    return mine;
  };
}
