// MCP tasks (experimental in SDK 1.32) for stepper_move / stepper_home, backed by the journal:
// the task id IS the command id, its status is read from the journal (so it survives host
// restarts and is the same for every session), and cancelling the task stops the axis.
import type { CreateTaskOptions, TaskStore, ToolTaskHandler } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CreateTaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CallToolResult, Request, RequestId, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import type { HostCore } from '../core/host.js';
import type { CommandStatus } from '../core/command-view.js';
import { toolResult } from './result.js';
import { kindOf, MOTION_ACTIONS } from '@proofrig/protocol/kinds';

export const TASK_CAPABILITIES = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
const POLL_MS = 500;
const CANCEL_WAIT_MS = 5000;

export class JournalTaskStore implements TaskStore {
  /**
   * Commands started by a plain tools/call (no `task` param): the SDK runs those through the
   * task handler and polls; for them the call is already answered (acked, or the outcome
   * when wait_ms asked for it), so the task reads "completed" until its result is taken.
   */
  private direct = new Set<string>();

  constructor(private readonly core: HostCore) {}

  async createTask(o: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<Task> {
    const id = o.context?.command_id;
    if (typeof id !== 'string' || !this.core.status(id)) throw new Error('a proofrig task is created from a journaled command');
    if (!(request.params as { task?: unknown } | undefined)?.task) this.direct.add(id);
    return this.task(id)!;
  }

  async getTask(taskId: string): Promise<Task | null> {
    return this.task(taskId);
  }

  /** Results are the journal's; nothing to store. */
  async storeTaskResult(): Promise<void> {}

  async getTaskResult(taskId: string): Promise<Result> {
    const s = this.core.status(taskId);
    if (!s) throw new Error(`no task "${taskId}"`);
    this.direct.delete(taskId);
    return toolResult(s);
  }

  /** The SDK calls this with "cancelled" for tasks/cancel: stop the axis and wait (bounded) for the command to end. */
  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status !== 'cancelled') return;
    const r = await this.core.commands.cancel(taskId);
    if (r?.stop && r.stop.state !== 'rejected') await this.core.waitTerminal(taskId, CANCEL_WAIT_MS);
  }

  async listTasks(): Promise<{ tasks: Task[] }> {
    return { tasks: this.core.journal.recent({ actions: [...MOTION_ACTIONS], limit: 50 }).map((c) => this.task(c.command_id)!) };
  }

  private task(id: string): Task | null {
    const s = this.core.status(id);
    if (!s || !kindOf(s.action)?.motion) return null;
    const where = s.position_mm !== null ? ` at ${s.position_mm} mm` : '';
    const status: Task['status'] = this.direct.has(id) ? 'completed' : !s.terminal ? 'working' : s.state === 'cancelled' ? 'cancelled' : 'completed';
    return {
      taskId: id,
      status,
      statusMessage: `${s.state}${s.error_code ? ' ' + s.error_code : ''}${where}`,
      ttl: null,
      createdAt: s.submitted_at,
      lastUpdatedAt: new Date(this.core.clock.now()).toISOString(),
      pollInterval: POLL_MS,
    };
  }
}

/** A task tool handler whose task is the journaled command `start` submits. */
export function taskToolHandler<A>(core: HostCore, start: (args: A, extra: CreateTaskRequestHandlerExtra) => Promise<CommandStatus>): ToolTaskHandler<any> {
  const h = {
    createTask: async (args: A, extra: CreateTaskRequestHandlerExtra) => {
      const s = await start(args, extra);
      return { task: await extra.taskStore.createTask({ ttl: null, pollInterval: POLL_MS, context: { command_id: s.command_id } }) };
    },
    getTask: async (_args: A, extra: { taskId: string; taskStore: { getTask(id: string): Promise<Task> } }) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args: A, extra: { taskId: string }) => toolResult(core.status(extra.taskId)!),
  };
  // The SDK types the handler by its zod schema; the tool registration checks the arguments.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return h as unknown as ToolTaskHandler<any>;
}
