// Nothing an MCP client hears may run ahead of the journal: every message this server sends
// (answers, progress, log and resource notifications) leaves only once everything journaled before
// it is on disk (the batch committed). Per transport, in the order the server sent them.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';

/** JSON-RPC "internal error": the answer was computed but could not be made durable. */
const INTERNAL_ERROR = -32603;

export function durable(core: HostCore, server: McpServer): McpServer {
  const connect = server.connect.bind(server);
  server.connect = (t: Transport) => connect(gate(core, t));
  return server;
}

function gate(core: HostCore, t: Transport): Transport {
  const send = t.send.bind(t);
  let last: Promise<void> = Promise.resolve();
  t.send = (m: JSONRPCMessage, o?: Parameters<Transport['send']>[1]) => {
    // The commit it waits for is the one pending now (when the server produced it), not a later one.
    const written = core.journal.flushed();
    written.catch(() => {}); // handled below, possibly after it settled
    const next = last.then(
      () => written,
      () => written,
    ).then(
      () => send(m, o),
      (e: Error) => {
        // The batch holding what this message reports was rolled back: the answer is withheld and
        // the request told why; a notification about it is dropped.
        if ('id' in m && ('result' in m || 'error' in m))
          return send({ jsonrpc: '2.0', id: m.id, error: { code: INTERNAL_ERROR, message: `${e.message}; ask again (get_action_status) for what the journal holds` } }, o);
      },
    );
    last = next.catch(() => {});
    return next;
  };
  return t;
}
