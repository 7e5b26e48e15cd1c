import type { Message } from "../domain/a2a-types.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { TaskContext } from "../machine/task-context.js";
import { withinStoreBudget } from "./store-call-budget.js";
import type { TaskReadPort } from "./task-read-port.js";
import type { TaskListPage, TaskListQuery } from "./task-store.js";

/**
 * The task reads of request handlers that carry no caller deadline (the OpenWOP runs API's events and
 * interrupts): each read is cancelled by the driver at STORE_TIMEOUT_MS and answers `unavailable` when the
 * store is down or stalled. Background readers (the engine, commit fan-outs) keep the plain port.
 */
export class CappedTaskReads implements TaskReadPort {
  constructor(
    private readonly reads: TaskReadPort,
    private readonly capMs: number,
  ) {}

  get(taskId: string, tenant: string): Promise<TaskRecord> {
    return this.capped(() => this.reads.get(taskId, tenant));
  }

  find(taskId: string): Promise<TaskRecord | null> {
    return this.capped(() => this.reads.find(taskId));
  }

  contextOf(record: TaskRecord): TaskContext {
    return this.reads.contextOf(record);
  }

  historyOf(record: TaskRecord, limit?: number): Promise<Message[]> {
    return this.capped(() => this.reads.historyOf(record, limit));
  }

  readEvents(taskId: string, fromSequence: number, limit?: number): Promise<RunEvent[]> {
    return this.capped(() => this.reads.readEvents(taskId, fromSequence, limit));
  }

  findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null> {
    return this.capped(() => this.reads.findByIdempotencyKey(idempotencyKey));
  }

  list(query: TaskListQuery): Promise<TaskListPage> {
    return this.capped(() => this.reads.list(query));
  }

  private capped<T>(op: () => Promise<T>): Promise<T> {
    return withinStoreBudget({ capMs: this.capMs }, op, { cancel: true });
  }
}
