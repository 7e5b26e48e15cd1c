import type { CommitFeed, CommitFeedSettings } from "./commit-feed.js";
import type { Message } from "../domain/a2a-types.js";
import type { A2ATaskStateValue } from "../domain/run-status.js";
import type { RunEvent, TaskLease, TaskRecord } from "../domain/task-record.js";
import type { TaskSizeLimits } from "./task-size-limits.js";
import type { WorkflowVersionStore } from "./workflow-version-store.js";
import type { TenantUsageStore } from "./tenant-usage-store.js";

/**
 * What a driver's commit carries: the head must still be leased to (owner, epoch), else LeaseLostError.
 * `expiresAt` renews the lease with the commit; null releases it (the task waits or ended).
 */
export interface LeaseFence {
  owner: string;
  epoch: number;
  expiresAt: string | null;
}

/**
 * A lease `acquireLease` handed out. `unreleased`: it was taken from a holder that never gave it back (the
 * lease expired, or it was this owner id's own from before a restart): that holder died or stalled, so a
 * node it had started did not end (poison work is counted on this, docs/operating.md "Poison work").
 * False or absent: the task held no lease (new, released on SIGTERM, or after a wait).
 */
export interface AcquiredLease extends TaskLease {
  unreleased?: boolean;
}

/** A fenced commit by an instance whose lease was taken over (or released): it must stop driving the task. */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(
    readonly taskId: string,
    readonly owner: string,
    readonly epoch: number,
  ) {
    super(`task ${taskId} is no longer leased to ${owner} (epoch ${epoch})`);
  }
}

/** The fields a transition rewrites. */
export type TaskRecordChanges = Pick<
  TaskRecord,
  "status" | "a2a" | "snapshot" | "updatedAt" | "expireAt" | "timerDueAt" | "generation" | "workflowVersion"
>;

/** A writer whose expected version is no longer current lost the race; it must reload and retry. */
export class StaleWriteError extends Error {
  override readonly name = "StaleWriteError";
  constructor(
    readonly taskId: string,
    readonly expectedVersion: number,
  ) {
    super(`task ${taskId} moved past version ${expectedVersion}`);
  }
}

export class DuplicateTaskError extends Error {
  override readonly name = "DuplicateTaskError";
  constructor(readonly taskId: string) {
    super(`task ${taskId} already exists`);
  }
}

/** Another live task was already created with the same idempotency key. */
export class DuplicateIdempotencyKeyError extends Error {
  override readonly name = "DuplicateIdempotencyKeyError";
  constructor(readonly idempotencyKey: string) {
    super(`a task with idempotency key ${idempotencyKey} already exists`);
  }
}

/** ListTasks: the caller's tenant, optional filters, newest first (updatedAt, then taskId, descending). */
export interface TaskListQuery {
  tenant: string;
  contextId?: string;
  /** Stored A2A state (lowercase-hyphen form). */
  state?: A2ATaskStateValue;
  /** Only tasks whose status timestamp (`updatedAt`) is at or after this ISO instant. */
  updatedAtOrAfter?: string;
  /** Only tasks whose `updatedAt` is before this ISO instant (the operator console's time range). */
  updatedBefore?: string;
  /** Only tasks created at or after / before these ISO instants (the operator console's time range). */
  createdAtOrAfter?: string;
  createdBefore?: string;
  /** Only tasks of this workflow (skill). */
  workflowId?: string;
  /** Only tasks whose id starts with this (the console's search). */
  idPrefix?: string;
  /** Keyset cursor: only tasks strictly after this position in the sort order. */
  after?: { updatedAt: string; taskId: string };
  limit: number;
  /** Also count the matching tasks per A2A state (`state` ignored for the counts). */
  countStates?: boolean;
  /** `false`: leave `total` uncounted (-1), e.g. for the next page of a list whose first page counted it. */
  countTotal?: boolean;
}

export interface TaskListPage {
  records: TaskRecord[];
  /** How many live tasks match the filters (ignoring `after` and `limit`); -1 with `countTotal: false`. */
  total: number;
  /** With `countStates`: live tasks matching every filter but `state`, per A2A state (states with none left out). */
  states?: Partial<Record<A2ATaskStateValue, number>>;
}

/**
 * The store port. Each call of `create`/`commit` is atomic as readers see it: snapshot, projections and the
 * new events become visible together or not at all (the MongoDB adapter writes the events first and then
 * moves the task head; readers trust only events up to the head's version). A create or commit over the
 * size limits is refused with DomainError("content-too-large") before anything is written.
 */
export interface TaskStore {
  readonly kind: "memory" | "mongodb";
  /** The size caps this store enforces (also for callers that check a message before creating a task). */
  readonly limits?: TaskSizeLimits;
  /** The workflow definitions runs are pinned to, beside the tasks (optional so test doubles need not care). */
  readonly workflowVersions?: WorkflowVersionStore;
  init(): Promise<void>;
  /** Running-task places and instance beats for tenant limits (src/limits/); optional so test doubles need not care. */
  readonly tenantUsage?: TenantUsageStore;
  /** Resolves when the store can serve commands now (readiness); optional so test doubles need not care. */
  ping?(): Promise<void>;
  /** Other instances' commits on the same database (MongoDB only; the memory store has the in-process hook only). */
  openCommitFeed?(settings: CommitFeedSettings, onError: (err: unknown) => void): Promise<CommitFeed>;
  /** Throws DuplicateTaskError (same task id) or DuplicateIdempotencyKeyError (same key as a live task). */
  create(record: TaskRecord, events: RunEvent[]): Promise<void>;
  /** With `fence`, also refused (LeaseLostError) unless the head is still leased to (owner, epoch). */
  commit(
    taskId: string,
    expectedVersion: number,
    changes: TaskRecordChanges,
    events: RunEvent[],
    fence?: LeaseFence,
  ): Promise<void>;
  /** null when unknown or expired. */
  get(taskId: string): Promise<TaskRecord | null>;
  /** Events with sequence >= fromSequence, in order, at most `limit`. */
  readEvents(taskId: string, fromSequence: number, limit?: number): Promise<RunEvent[]>;
  /**
   * The A2A history messages at indexes >= fromIndex, in order, from the log's events up to sequence
   * `upToVersion` (the version of the head the caller read: events above it are not committed).
   */
  readHistory(taskId: string, fromIndex: number, upToVersion: number): Promise<Message[]>;
  /** The history message with this messageId (from the log up to `upToVersion`), or null. */
  findHistoryMessage(taskId: string, messageId: string, upToVersion: number): Promise<Message | null>;
  /**
   * The live (not expired) task created with this idempotency key, or null. Not needed before a create: the
   * create itself fails with DuplicateIdempotencyKeyError; read the holder with this then.
   */
  findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null>;
  /** One page of a tenant's live tasks (ListTasks). */
  list(query: TaskListQuery): Promise<TaskListPage>;
  /** Every task that is not terminal. */
  listActive(): Promise<TaskRecord[]>;
  /** Task ids whose durable timer is due at `now`. */
  dueTimers(now: Date, limit: number): Promise<string[]>;
  /**
   * Claims a due timer once across instances: moves its due time to `retryAt` only if it is still due at
   * `now`. The claimer's commit clears or resets it; if the claimer dies, the timer is due again at `retryAt`.
   */
  claimTimer(taskId: string, now: Date, retryAt: Date): Promise<boolean>;
  /**
   * Atomically leases a runnable task to `owner` (epoch + 1) when it holds no lease, an expired one, or one
   * of `owner`'s own (a restarted process with the same INSTANCE_ID); null when another instance holds it
   * or the task is not runnable.
   */
  acquireLease(taskId: string, owner: string, now: Date, expiresAt: Date): Promise<AcquiredLease | null>;
  /** Heartbeat: moves the expiry of these tasks' leases still held by `owner`; answers how many. */
  renewLeases(owner: string, taskIds: string[], expiresAt: Date): Promise<number>;
  /** Gives the lease back if (owner, epoch) still holds it. */
  releaseLease(taskId: string, owner: string, epoch: number): Promise<void>;
  /** Of these tasks, the ones a caller asked to cancel (status cancelling): their owner aborts their node work. */
  cancellingTaskIds(taskIds: string[]): Promise<string[]>;
  /** Runnable tasks `acquireLease` would lease to `owner`, without a timer still to wait for (failover, start-up). */
  leaseableTaskIds(now: Date, owner: string, limit: number): Promise<string[]>;
  close(): Promise<void>;
}
