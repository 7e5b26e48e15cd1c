import type { AnyBulkWriteOperation, Filter, IndexDescription, ObjectId, UpdateFilter } from "mongodb";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { LeaseFence, TaskRecordChanges } from "./task-store.js";

/**
 * The head of a task (`tasks`): the record fields only, no event log, so a transition rewrites a document
 * whose size does not depend on how many events the task has. `commitId` names the last write that moved
 * the head (`<writer>:<uuid>`), so a batch can tell its own update from a concurrent writer's when the version
 * filter missed, and a commit feed can leave its own store's commits out on the server.
 */
export interface TaskDocument extends Omit<TaskRecord, "taskId" | "expireAt" | "timerDueAt" | "lease"> {
  _id: string;
  expireAt?: Date | null;
  timerDueAt?: Date | null;
  commitId?: string;
  /** The execution lease, flat so one filter fences a commit; `leaseEpoch` outlives a release. */
  leaseOwner?: string | null;
  leaseEpoch?: number;
  leaseExpiresAt?: Date | null;
  /**
   * The events of a commit that met existing keys (`s<sequence>` → event), written with its head move and
   * removed once they are copied into the log: readers take them over the log's documents, so the log's
   * copies of these sequences may be rewritten after the head moved (see MongoTaskStore, "redo").
   */
  redo?: Record<string, EventDocument>;
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
  // Failover: runnable tasks whose lease is free or expired.
  { key: { status: 1, leaseExpiresAt: 1 }, name: "status_lease" },
  // TTL: MongoDB deletes a terminal task once its retention has passed.
  { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
  { key: { tenant: 1, contextId: 1, updatedAt: -1, _id: -1 }, name: "tenant_context_updated" },
  // ListTasks without a context filter: a tenant's tasks, newest first.
  { key: { tenant: 1, updatedAt: -1, _id: -1 }, name: "tenant_updated" },
  // The operator console's skill filter: a tenant's tasks of one workflow, newest first.
  { key: { tenant: 1, workflowId: 1, updatedAt: -1, _id: -1 }, name: "tenant_workflow_updated" },
  // The runs of a workflow version (a version none of them uses any more is removed: workflow-version-store.ts).
  { key: { workflowId: 1, workflowVersion: 1 }, name: "workflow_version" },
  // The running-task limit (TENANT_LIMITS runningTasks): a tenant's tasks that have not ended, counted.
  { key: { tenant: 1, status: 1 }, name: "tenant_status" },
  // A2A message.messageId idempotency: one live task per (tenant, principal, messageId) digest; the create fails on a repeat.
  {
    key: { idempotencyKey: 1 },
    name: "idempotency_key",
    unique: true,
    partialFilterExpression: { idempotencyKey: { $type: "string" } },
  },
];

export const EVENT_INDEXES: IndexDescription[] = [
  { key: { taskId: 1, sequence: 1 }, name: "task_sequence", unique: true },
  // A task's A2A history: only the events that carry messages, by the history index after their last one.
  {
    key: { taskId: 1, historyEnd: 1 },
    name: "task_history",
    partialFilterExpression: { historyEnd: { $exists: true } },
  },
  // A caller's retry of a message, however long ago it was sent (messageId idempotency of replies).
  {
    key: { taskId: 1, "history.messageId": 1 },
    name: "task_history_message",
    partialFilterExpression: { historyEnd: { $exists: true } },
  },
  // The log of an ended task goes with it (its events are stamped with the head's expiry).
  { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
];

export function toDate(value: string | null | undefined): Date | null {
  return value ? new Date(value) : null;
}

export function toTaskDocument(record: TaskRecord, commitId: string): TaskDocument {
  const { taskId, expireAt, timerDueAt, lease, ...rest } = record;
  const leaseFields = lease
    ? { leaseOwner: lease.owner, leaseEpoch: lease.epoch, leaseExpiresAt: new Date(lease.expiresAt) }
    : { leaseOwner: null, leaseEpoch: 0, leaseExpiresAt: null };
  return { ...rest, _id: taskId, expireAt: toDate(expireAt), timerDueAt: toDate(timerDueAt), ...leaseFields, commitId };
}

export function toRecord(doc: TaskDocument): TaskRecord {
  const {
    _id,
    expireAt,
    timerDueAt,
    commitId: _commitId,
    leaseOwner,
    leaseEpoch,
    leaseExpiresAt,
    redo: _redo,
    ...rest
  } = doc;
  const lease =
    leaseOwner && leaseExpiresAt
      ? { lease: { owner: leaseOwner, epoch: leaseEpoch ?? 0, expiresAt: leaseExpiresAt.toISOString() } }
      : {};
  return {
    ...rest,
    taskId: _id,
    expireAt: expireAt ? expireAt.toISOString() : null,
    timerDueAt: timerDueAt ? timerDueAt.toISOString() : null,
    ...lease,
  };
}

export function toEventDocument(
  taskId: string,
  event: RunEvent,
  writer: string,
  expireAt: string | null | undefined,
): EventDocument {
  return { ...event, taskId, writer, expireAt: toDate(expireAt) };
}

export function toEvent(doc: EventDocument): RunEvent {
  const { _id, taskId: _taskId, writer: _writer, expireAt: _expireAt, ...event } = doc;
  return event;
}

export function headUpdate(
  taskId: string,
  expectedVersion: number,
  changes: TaskRecordChanges,
  version: number,
  commitId: string,
  fence?: LeaseFence,
  redo?: EventDocument[],
): AnyBulkWriteOperation<TaskDocument> {
  const move = headMove(taskId, expectedVersion, changes, version, commitId, fence);
  if (redo) Object.assign(move.update.$set as object, redoFields(redo));
  return { updateOne: move };
}

/** The head document's key of one redo event. */
export function redoKey(sequence: number): string {
  return `s${sequence}`;
}

/** `$set` fields that add these events to the head's redo (next to any a still unapplied commit left). */
function redoFields(events: EventDocument[]): Record<string, EventDocument> {
  return Object.fromEntries(events.map((e) => [`redo.${redoKey(e.sequence)}`, e]));
}

/**
 * The committed events from `fromSequence` (at most `limit`): the log's documents up to the head's version,
 * with the head's redo events in place of the log's documents of those sequences.
 */
export function committedEvents(
  head: Pick<TaskDocument, "version" | "redo">,
  docs: EventDocument[],
  fromSequence: number,
  limit: number,
): EventDocument[] {
  const committed = docs.filter((doc) => doc.sequence <= head.version);
  const redo = Object.values(head.redo ?? {}).filter(
    (doc) => doc.sequence >= fromSequence && doc.sequence <= head.version,
  );
  if (redo.length === 0) return committed;
  const bySequence = new Map(committed.map((doc) => [doc.sequence, doc]));
  for (const doc of redo) bySequence.set(doc.sequence, doc);
  return [...bySequence.values()].sort((a, b) => a.sequence - b.sequence).slice(0, limit);
}

/** The committed events up to `upToVersion` among `docs` (any subset of the log), with the head's redo in place. */
export function committedUpTo(
  head: Pick<TaskDocument, "version" | "redo">,
  docs: EventDocument[],
  upToVersion: number,
): EventDocument[] {
  const version = Math.min(upToVersion, head.version);
  return committedEvents({ version, redo: head.redo }, docs, 0, Number.MAX_SAFE_INTEGER);
}

/** The head's move: matched only while the head is still at the version the commit was computed from. */
export function headMove(
  taskId: string,
  expectedVersion: number,
  changes: TaskRecordChanges,
  version: number,
  commitId: string,
  fence?: LeaseFence,
): { filter: Filter<TaskDocument>; update: UpdateFilter<TaskDocument> } {
  // A fenced (driver's) commit also needs the lease it was computed under, and renews or releases it.
  const fenced = fence ? { leaseOwner: fence.owner, leaseEpoch: fence.epoch } : {};
  const lease = fence
    ? fence.expiresAt
      ? { leaseExpiresAt: new Date(fence.expiresAt) }
      : { leaseOwner: null, leaseExpiresAt: null }
    : {};
  return {
    filter: { _id: taskId, version: expectedVersion, ...fenced },
    update: {
      $set: {
        status: changes.status,
        a2a: changes.a2a,
        snapshot: changes.snapshot,
        updatedAt: changes.updatedAt,
        expireAt: toDate(changes.expireAt),
        timerDueAt: toDate(changes.timerDueAt),
        ...(changes.generation !== undefined ? { generation: changes.generation } : {}),
        ...(changes.workflowVersion !== undefined ? { workflowVersion: changes.workflowVersion } : {}),
        version,
        commitId,
        ...lease,
      },
    },
  };
}

/** Which unique index an E11000 came from: the idempotency key's, or the primary key's. */
export function isIdempotencyKeyViolation(err: {
  keyPattern?: Record<string, unknown>;
  errmsg?: string;
  message?: string;
}): boolean {
  if (err.keyPattern) return "idempotencyKey" in err.keyPattern;
  return /idempotency_key|idempotencyKey/.test(err.errmsg ?? err.message ?? "");
}
