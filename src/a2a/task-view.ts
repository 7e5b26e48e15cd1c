import type { Message, Task } from "../domain/a2a-types.js";
import { isTerminalRunStatus } from "../domain/run-status.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskRecord } from "../domain/task-record.js";

/** How much history a read returns: `undefined` = all, 0 = none, n = the last n messages. */
export type HistoryLimit = number | undefined;

/**
 * The A2A Task a stored record shows, with the history the caller asked for (read by `TaskReadPort.historyOf`).
 * `interruptToken` is the signed resolve token of the pending interrupt (issued by the caller, so this stays
 * pure); it goes to `metadata.openwop.interruptToken`.
 */
export function taskView(
  record: TaskRecord,
  context: TaskContext,
  history: Message[],
  extras: { interruptToken?: string } = {},
): Task {
  const { interrupt, error, statusMessage } = context;
  return {
    id: record.taskId,
    contextId: record.contextId,
    status: {
      state: record.a2a.state,
      ...(statusMessage ? { message: statusMessage } : {}),
      timestamp: record.updatedAt,
    },
    artifacts: context.artifacts,
    history,
    metadata: {
      openwop: {
        runId: record.taskId,
        workflowId: record.workflowId,
        status: record.status,
        ...(context.cursor && !isTerminalRunStatus(record.status) ? { currentNodeId: context.cursor } : {}),
        ...(interrupt
          ? {
              interrupt: {
                kind: interrupt.kind,
                nodeId: interrupt.nodeId,
                interruptId: interrupt.interruptId,
                data: interrupt.data,
                ...(interrupt.metadata ? { metadata: interrupt.metadata } : {}),
                ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
                ...(interrupt.exchanges.length ? { exchanges: interrupt.exchanges } : {}),
              },
            }
          : {}),
        ...(interrupt && extras.interruptToken ? { interruptToken: extras.interruptToken } : {}),
        ...(error ? { error: { code: error.code, message: error.message } } : {}),
      },
    },
    ...(record.generation !== undefined ? { generation: record.generation } : {}),
  };
}
