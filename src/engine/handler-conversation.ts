import type { Message } from "../domain/a2a-types.js";
import { DomainError } from "../domain/errors.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { ConversationTask, HandlerContext } from "../workflows/workflow-types.js";

/** `referenceTaskIds` beyond this many (distinct) are not read. */
export const MAX_REFERENCED_TASKS = 10;
export const DEFAULT_CONTEXT_TASKS = 10;
export const MAX_CONTEXT_TASKS = 50;
/** `contextTasks` reads at most this many ListTasks pages (tasks created after the handler's own are skipped). */
const MAX_CONTEXT_PAGES = 3;

/** The reads a handler's view of its conversation needs: the read port's committed state, nothing else. */
export type ConversationReads = Pick<TaskReadPort, "get" | "list" | "contextOf">;

export interface ConversationScope {
  tenant: string;
  contextId: string;
  /** The incoming message (copied for the handler). */
  message: Message;
  /** The task the handler runs for: left out of `contextTasks`, which lists only tasks created up to its creation. None for a stateless skill. */
  self?: { taskId: string; createdAt: string };
}

type Conversation = Pick<HandlerContext, "message" | "contextId" | "referencedTasks" | "contextTasks">;
/** The rest of a handler's context, which each path builds itself. */
export type HandlerContextBase = Omit<HandlerContext, keyof Conversation>;

/**
 * `base` with what a handler sees of its conversation (HandlerContext `message`, `contextId`,
 * `referencedTasks`, `contextTasks`), the same on the durable and the stateless path. Reads go through the
 * read port (get by id and tenant, ListTasks by tenant and contextId), so they are indexed and tenant-scoped,
 * and can be repeated after a restart. The handler's copy of the message is made when it first reads it (most
 * handlers read only `input`); a deep copy per call was a measurable share of a short task's CPU.
 */
export function withConversation(
  base: HandlerContextBase,
  reads: ConversationReads,
  scope: ConversationScope,
): HandlerContext {
  const { tenant, contextId, self } = scope;
  let message: Message | undefined;
  const messageCopy = (): Message => (message ??= structuredClone(scope.message));
  const conversation: Omit<Conversation, "message"> = {
    contextId,
    async referencedTasks() {
      const referenced = [...new Set(scope.message.referenceTaskIds ?? [])].slice(0, MAX_REFERENCED_TASKS);
      const records = await Promise.all(referenced.map((id) => reads.get(id, tenant).catch(absentIfNotFound)));
      return records.filter((r): r is TaskRecord => r !== null).map((r) => conversationTaskOf(reads, r));
    },
    async contextTasks(options = {}) {
      const limit = boundedLimit(options.limit);
      const found: ConversationTask[] = [];
      let after: { updatedAt: string; taskId: string } | undefined;
      for (let page = 0; page < MAX_CONTEXT_PAGES && found.length < limit; page++) {
        const pageSize = limit + 1; // one more: the handler's own task is in the list too
        const { records } = await reads.list({ tenant, contextId, limit: pageSize, ...(after ? { after } : {}) });
        for (const r of records) {
          if (found.length >= limit) break;
          if (self && (r.taskId === self.taskId || r.createdAt > self.createdAt)) continue;
          found.push(conversationTaskOf(reads, r));
        }
        const last = records.at(-1);
        if (records.length < pageSize || !last) break;
        after = { updatedAt: last.updatedAt, taskId: last.taskId };
      }
      return found;
    },
  };
  Object.assign(base, conversation);
  // Enumerable, so a handler that spreads or logs its context still sees the message.
  return Object.defineProperty(base, "message", {
    get: messageCopy,
    enumerable: true,
    configurable: true,
  }) as HandlerContext;
}

function boundedLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_CONTEXT_TASKS;
  return Math.min(MAX_CONTEXT_TASKS, Math.max(1, Math.floor(limit)));
}

function absentIfNotFound(err: unknown): null {
  if (err instanceof DomainError && err.code === "task-not-found") return null;
  throw err;
}

function conversationTaskOf(reads: ConversationReads, record: TaskRecord): ConversationTask {
  return {
    id: record.taskId,
    contextId: record.contextId,
    state: record.a2a.state,
    artifacts: structuredClone(reads.contextOf(record).artifacts),
  };
}
