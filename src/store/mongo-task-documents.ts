import type { AnyBulkWriteOperation, Filter, IndexDescription, ObjectId, UpdateFilter } from "mongodb";
import type { RunEvent, TaskRecord, TaskRecordChanges } from "./task-store.js";

/**
 * The head of a task (`tasks`): the record fields only, no event log, so a transition rewrites a document
 * whose size does not depend on how many events the task has. `commitId` names the last commit that moved
 * the head, so a batch can tell its own update from a concurrent writer's when the version filter missed.
 */
export interface TaskDocument extends Omit<TaskRecord, "taskId" | "expireAt" | "timerDueAt"> {
  _id: string;
  expireAt?: Date | null;
  timerDueAt?: Date | null;
  commitId?: string;
}

/**
 * One event of the log (`task_events`, unique (taskId, sequence)). `writer` is the store instance that wrote
 * it; `expireAt` is set once the task ends, so the TTL index removes the log with its head.
 */
export interface EventDocument extends RunEvent {
  _id?: ObjectId;
  taskId: string;
  writer: string;
  expireAt?: Date | null;
}

export const DUPLICATE_KEY = 11000;

export const TASK_INDEXES: IndexDescription[] = [
  { key: { status: 1 }, name: "status" },
  { key: { timerDueAt: 1 }, name: "timer_due", sparse: true },
  // TTL: MongoDB deletes a terminal task once its retention has passed.
  { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
  { key: { tenant: 1, contextId: 1, updatedAt: -1, _id: -1 }, name: "tenant_context_updated" },
  // ListTasks without a context filter: a tenant's tasks, newest first.
  { key: { tenant: 1, updatedAt: -1, _id: -1 }, name: "tenant_updated" },
  // A2A message.messageId idempotency: one live task per (tenant, principal, messageId) digest; the create fails on a repeat.
  { key: { idempotencyKey: 1 }, name: "idempotency_key", unique: true, partialFilterExpression: { idempotencyKey: { $type: "string" } } },
];

export const EVENT_INDEXES: IndexDescription[] = [
  { key: { taskId: 1, sequence: 1 }, name: "task_sequence", unique: true },
  // The log of an ended task goes with it (its events are stamped with the head's expiry).
  { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
];

export function toDate(value: string | null | undefined): Date | null {
  return value ? new Date(value) : null;
}

export function toTaskDocument(record: TaskRecord): TaskDocument {
  const { taskId, expireAt, timerDueAt, ...rest } = record;
  return { ...rest, _id: taskId, expireAt: toDate(expireAt), timerDueAt: toDate(timerDueAt) };
}

export function toRecord(doc: TaskDocument): TaskRecord {
  const { _id, expireAt, timerDueAt, commitId: _commitId, ...rest } = doc;
  return { ...rest, taskId: _id, expireAt: expireAt ? expireAt.toISOString() : null, timerDueAt: timerDueAt ? timerDueAt.toISOString() : null };
}

export function toEventDocument(taskId: string, event: RunEvent, writer: string, expireAt: string | null | undefined): EventDocument {
  return { ...event, taskId, writer, expireAt: toDate(expireAt) };
}

export function toEvent(doc: EventDocument): RunEvent {
  const { _id, taskId: _taskId, writer: _writer, expireAt: _expireAt, ...event } = doc;
  return event;
}

export function headUpdate(taskId: string, expectedVersion: number, changes: TaskRecordChanges, version: number, commitId: string): AnyBulkWriteOperation<TaskDocument> {
  return { updateOne: headMove(taskId, expectedVersion, changes, version, commitId) };
}

/** The head's move: matched only while the head is still at the version the commit was computed from. */
export function headMove(taskId: string, expectedVersion: number, changes: TaskRecordChanges, version: number, commitId: string): { filter: Filter<TaskDocument>; update: UpdateFilter<TaskDocument> } {
  return {
    filter: { _id: taskId, version: expectedVersion },
    update: {
      $set: {
        status: changes.status,
        a2a: changes.a2a,
        snapshot: changes.snapshot,
        updatedAt: changes.updatedAt,
        expireAt: toDate(changes.expireAt),
        timerDueAt: toDate(changes.timerDueAt),
        version,
        commitId,
      },
    },
  };
}

/** Which unique index an E11000 came from: the idempotency key's, or the primary key's. */
export function isIdempotencyKeyViolation(err: { keyPattern?: Record<string, unknown>; errmsg?: string; message?: string }): boolean {
  if (err.keyPattern) return "idempotencyKey" in err.keyPattern;
  return /idempotency_key|idempotencyKey/.test(err.errmsg ?? err.message ?? "");
}
