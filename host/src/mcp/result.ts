// Every successful tool result, tasks included: the structured result, and as text a plain-language
// sentence first (text-only clients such as xiaozhi read nothing else), then the same JSON.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { summarize } from './summary.js';

export function toolResult(data: object): CallToolResult {
  const json = JSON.stringify(data, null, 2);
  const line = summarize(data as Record<string, unknown>) ?? 'Result:';
  return { content: [{ type: 'text', text: line + '\n\n' + json }], structuredContent: data as Record<string, unknown> };
}
