import type { Message } from "../domain/a2a-types.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskStore } from "../store/task-store.js";

/**
 * A task's A2A history as of one committed version: the last `limit` messages (all when undefined). The head's
 * context holds the newest messages; only a read reaching further back reads the log (one indexed query over
 * the events that carry messages, up to that version).
 */
export async function readTaskHistory(
  store: Pick<TaskStore, "readHistory">,
  at: { taskId: string; version: number },
  context: TaskContext,
  limit?: number,
): Promise<Message[]> {
  const inHead = historyInHead(context, limit);
  if (inHead) return inHead;
  const count = context.historyCount;
  const from = limit === undefined ? 0 : Math.max(0, count - limit);
  // Tasks stored before the log carried messages keep their early history in the head.
  const unlogged = context.unloggedHistory ?? [];
  const logged = await store.readHistory(at.taskId, Math.max(from, unlogged.length), at.version);
  return [...unlogged.slice(from), ...logged];
}

/** The last `limit` messages (all when undefined) when the head's window holds them; undefined when the log must be read. */
export function historyInHead(context: TaskContext, limit?: number): Message[] | undefined {
  const count = context.historyCount;
  const from = limit === undefined ? 0 : Math.max(0, count - limit);
  if (from >= count) return [];
  const windowStart = count - context.history.length;
  return from >= windowStart ? context.history.slice(from - windowStart) : undefined;
}

/** The history's message with this id: looked up in the head first, in the log only when the head lacks messages. */
export async function findTaskHistoryMessage(
  store: Pick<TaskStore, "findHistoryMessage">,
  at: { taskId: string; version: number },
  context: TaskContext,
  messageId: string,
): Promise<Message | undefined> {
  const inHead =
    context.history.find((m) => m.messageId === messageId) ??
    context.unloggedHistory?.find((m) => m.messageId === messageId);
  if (inHead) return inHead;
  const loggedOutsideWindow = context.historyCount - context.history.length - (context.unloggedHistory?.length ?? 0);
  if (loggedOutsideWindow <= 0) return undefined;
  return (await store.findHistoryMessage(at.taskId, messageId, at.version)) ?? undefined;
}
