import type { Message } from "../domain/a2a-types.js";
import type { TaskContext } from "../machine/task-context.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { TaskListPage, TaskListQuery } from "./task-store.js";

/**
 * What readers of tasks (the A2A service, the runs API, push) may ask: committed state only, never a write.
 * The engine's task repository implements it; nothing else hands out the store.
 */
export interface TaskReadPort {
  /** The task as last committed, when it belongs to `tenant`; task-not-found otherwise (also when expired). */
  get(taskId: string, tenant: string): Promise<TaskRecord>;
  /** The task whatever its tenant, or null: for callers whose credential names the task (interrupt tokens, push). */
  find(taskId: string): Promise<TaskRecord | null>;
  /**
   * The machine context of a record (artifacts, interrupt, the newest history messages), read through the
   * machine-version check. Its `history` is only the newest part: read the whole with `historyOf`.
   */
  contextOf(record: TaskRecord): TaskContext;
  /** The A2A history as of `record`: the last `limit` messages, or all when undefined (0: none). */
  historyOf(record: TaskRecord, limit?: number): Promise<Message[]>;
  /** Committed events with sequence >= fromSequence, in order, at most `limit`. */
  readEvents(taskId: string, fromSequence: number, limit?: number): Promise<RunEvent[]>;
  /** The live task created with this idempotency key, or null. */
  findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null>;
  /** One page of a tenant's live tasks (ListTasks). */
  list(query: TaskListQuery): Promise<TaskListPage>;
}
