import type { Message } from "../domain/a2a-types.js";
import { isTerminalRunStatus, RUNNABLE_RUN_STATUSES } from "../domain/run-status.js";
import { historyMessagesOf } from "./history-events.js";
import { assertWriteSize, DEFAULT_TASK_SIZE_LIMITS, type TaskSizeLimits } from "./task-size-limits.js";
import {
  DuplicateIdempotencyKeyError,
  DuplicateTaskError,
  LeaseLostError,
  StaleWriteError,
  type LeaseFence,
  type RunEvent,
  type TaskListPage,
  type TaskListQuery,
  type TaskRecord,
  type TaskRecordChanges,
  type TaskLease,
  type TaskStore,
} from "./task-store.js";

interface Entry {
  record: TaskRecord;
  events: RunEvent[];
  /** Last epoch handed out; it outlives a released lease, as `leaseEpoch` does in MongoDB. */
  leaseEpoch: number;
}

/**
 * In-process store: fast tests, and the fallback when no MongoDB is reachable. Nothing survives a restart.
 * What it holds is deeply frozen when written and handed to readers as it is: no copy per write or read
 * (structuredClone was a tenth of the request path), and still nobody can change a stored task but the store,
 * which replaces a record rather than editing it.
 * Like the MongoDB adapter it keeps each task's head and its event log apart, refuses the same oversized
 * writes, and drops the log together with an expired head.
 */
export class MemoryTaskStore implements TaskStore {
  readonly kind = "memory" as const;
  readonly limits: TaskSizeLimits;
  private readonly tasks = new Map<string, Entry>();
  /** Idempotency key → task id (the unique index of the MongoDB adapter). */
  private readonly byIdempotencyKey = new Map<string, string>();
  /**
   * Ids of the tasks in a runnable status, and of those with a timer: what the lease and timer polls scan
   * (as the MongoDB adapter's indexes serve them), instead of every task the store holds.
   */
  private readonly runnable = new Set<string>();
  private readonly timed = new Set<string>();

  constructor(
    private readonly now: () => Date = () => new Date(),
    limits: TaskSizeLimits = DEFAULT_TASK_SIZE_LIMITS,
  ) {
    this.limits = limits;
  }

  async init(): Promise<void> {}

  /** Memory is always there. */
  async ping(): Promise<void> {}

  async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    assertWriteSize(record, events, this.limits);
    if (this.tasks.has(record.taskId)) throw new DuplicateTaskError(record.taskId);
    const key = record.idempotencyKey;
    if (key) {
      const holder = this.byIdempotencyKey.get(key);
      if (holder !== undefined && this.live(holder)) throw new DuplicateIdempotencyKeyError(key);
      this.byIdempotencyKey.set(key, record.taskId);
    }
    this.tasks.set(record.taskId, { record: deepFrozen({ ...record }), events: events.map(deepFrozen), leaseEpoch: record.lease?.epoch ?? 0 });
    this.reindex(record);
  }

  async commit(taskId: string, expectedVersion: number, changes: TaskRecordChanges, events: RunEvent[], fence?: LeaseFence): Promise<void> {
    assertWriteSize({ taskId, snapshot: changes.snapshot, a2a: changes.a2a }, events, this.limits);
    const entry = this.tasks.get(taskId);
    if (fence && entry && !fenceHolds(entry.record.lease, fence)) throw new LeaseLostError(taskId, fence.owner, fence.epoch);
    if (!entry || entry.record.version !== expectedVersion) throw new StaleWriteError(taskId, expectedVersion);
    const last = events.at(-1);
    const { lease: held, ...rest } = entry.record;
    const lease = fence ? (fence.expiresAt ? { owner: fence.owner, epoch: fence.epoch, expiresAt: fence.expiresAt } : undefined) : held;
    entry.record = deepFrozen({ ...rest, ...changes, version: last ? last.sequence : entry.record.version, ...(lease ? { lease } : {}) });
    this.reindex(entry.record);
    for (const event of events) entry.events.push(deepFrozen(event));
  }

  async claimTimer(taskId: string, now: Date, retryAt: Date): Promise<boolean> {
    const entry = this.live(taskId);
    const dueAt = entry?.record.timerDueAt;
    if (!entry || !dueAt || Date.parse(dueAt) > now.getTime()) return false;
    entry.record = Object.freeze({ ...entry.record, timerDueAt: retryAt.toISOString() });
    return true;
  }

  async acquireLease(taskId: string, owner: string, now: Date, expiresAt: Date): Promise<TaskLease | null> {
    const entry = this.live(taskId);
    if (!entry || !RUNNABLE_RUN_STATUSES.has(entry.record.status) || !leaseFree(entry.record.lease, now, owner)) return null;
    entry.leaseEpoch += 1;
    const lease = { owner, epoch: entry.leaseEpoch, expiresAt: expiresAt.toISOString() };
    entry.record = Object.freeze({ ...entry.record, lease: Object.freeze(lease) });
    return { ...lease };
  }

  async renewLeases(owner: string, taskIds: string[], expiresAt: Date): Promise<number> {
    let renewed = 0;
    for (const taskId of taskIds) {
      const entry = this.tasks.get(taskId);
      const lease = entry?.record.lease;
      if (!entry || lease?.owner !== owner) continue;
      entry.record = Object.freeze({ ...entry.record, lease: Object.freeze({ ...lease, expiresAt: expiresAt.toISOString() }) });
      renewed++;
    }
    return renewed;
  }

  async releaseLease(taskId: string, owner: string, epoch: number): Promise<void> {
    const entry = this.tasks.get(taskId);
    if (entry?.record.lease?.owner !== owner || entry.record.lease.epoch !== epoch) return;
    const { lease: _released, ...record } = entry.record;
    entry.record = Object.freeze(record);
  }

  async cancellingTaskIds(taskIds: string[]): Promise<string[]> {
    return taskIds.filter((id) => this.live(id)?.record.status === "cancelling");
  }

  async leaseableTaskIds(now: Date, owner: string, limit: number): Promise<string[]> {
    return [...this.runnable]
      .map((id) => this.tasks.get(id)!.record)
      .filter((r) => RUNNABLE_RUN_STATUSES.has(r.status) && leaseFree(r.lease, now, owner) && (!r.timerDueAt || Date.parse(r.timerDueAt) <= now.getTime()))
      .slice(0, limit)
      .map((r) => r.taskId);
  }

  async get(taskId: string): Promise<TaskRecord | null> {
    const entry = this.live(taskId);
    return entry ? entry.record : null;
  }

  async readEvents(taskId: string, fromSequence: number, limit = Number.MAX_SAFE_INTEGER): Promise<RunEvent[]> {
    const entry = this.live(taskId);
    if (!entry) return [];
    return entry.events.slice(fromSequence, fromSequence + limit);
  }

  async readHistory(taskId: string, fromIndex: number, upToVersion: number): Promise<Message[]> {
    const events = this.live(taskId)?.events ?? [];
    return structuredClone(historyMessagesOf(events.slice(0, upToVersion + 1), fromIndex));
  }

  async findHistoryMessage(taskId: string, messageId: string, upToVersion: number): Promise<Message | null> {
    const events = this.live(taskId)?.events ?? [];
    const found = historyMessagesOf(events.slice(0, upToVersion + 1), 0).find((m) => m.messageId === messageId);
    return found ? structuredClone(found) : null;
  }

  async findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null> {
    const taskId = this.byIdempotencyKey.get(idempotencyKey);
    const entry = taskId === undefined ? undefined : this.live(taskId);
    return entry?.record.idempotencyKey === idempotencyKey ? entry.record : null;
  }

  async list(query: TaskListQuery): Promise<TaskListPage> {
    const matching = [...this.tasks.keys()]
      .map((id) => this.live(id)?.record)
      .filter((r): r is TaskRecord => r !== undefined)
      .filter(
        (r) =>
          r.tenant === query.tenant &&
          (query.contextId === undefined || r.contextId === query.contextId) &&
          (query.state === undefined || r.a2a.state === query.state) &&
          (query.updatedAtOrAfter === undefined || r.updatedAt >= query.updatedAtOrAfter),
      )
      .sort(newestFirst);
    const after = query.after;
    const page = after ? matching.filter((r) => newestFirst(r, { updatedAt: after.updatedAt, taskId: after.taskId }) > 0) : matching;
    return { records: page.slice(0, query.limit), total: matching.length };
  }

  async listActive(): Promise<TaskRecord[]> {
    return [...this.tasks.values()]
      .filter((e) => !isTerminalRunStatus(e.record.status))
      .map((e) => e.record);
  }

  async dueTimers(now: Date, limit: number): Promise<string[]> {
    return [...this.timed]
      .map((id) => this.tasks.get(id)!)
      .filter((e) => e.record.timerDueAt && Date.parse(e.record.timerDueAt) <= now.getTime())
      .sort((a, b) => Date.parse(a.record.timerDueAt ?? "") - Date.parse(b.record.timerDueAt ?? ""))
      .slice(0, limit)
      .map((e) => e.record.taskId);
  }

  async close(): Promise<void> {}

  private reindex(record: TaskRecord): void {
    if (RUNNABLE_RUN_STATUSES.has(record.status)) this.runnable.add(record.taskId);
    else this.runnable.delete(record.taskId);
    if (record.timerDueAt) this.timed.add(record.taskId);
    else this.timed.delete(record.taskId);
  }

  /** Expired tasks read as not found and are dropped, as the TTL index does in MongoDB. */
  private live(taskId: string): Entry | undefined {
    const entry = this.tasks.get(taskId);
    if (entry?.record.expireAt && Date.parse(entry.record.expireAt) <= this.now().getTime()) {
      this.tasks.delete(taskId);
      this.runnable.delete(taskId);
      this.timed.delete(taskId);
      const key = entry.record.idempotencyKey;
      if (key && this.byIdempotencyKey.get(key) === taskId) this.byIdempotencyKey.delete(key);
      return undefined;
    }
    return entry;
  }
}

/** As in MongoDB: none, expired, or one of this owner id's that its process no longer holds (a restart). */
function leaseFree(lease: TaskLease | null | undefined, now: Date, owner: string): boolean {
  return !lease || Date.parse(lease.expiresAt) <= now.getTime() || lease.owner === owner;
}

function fenceHolds(lease: TaskLease | null | undefined, fence: LeaseFence): boolean {
  return lease?.owner === fence.owner && lease.epoch === fence.epoch;
}

/** ListTasks order: updatedAt descending, then taskId descending (ISO timestamps compare as strings). */
function newestFirst(a: Pick<TaskRecord, "updatedAt" | "taskId">, b: Pick<TaskRecord, "updatedAt" | "taskId">): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? 1 : -1;
  return a.taskId === b.taskId ? 0 : a.taskId < b.taskId ? 1 : -1;
}

/** Freezes `value` and everything in it (plain JSON data: objects, arrays, scalars); answers it. */
function deepFrozen<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  // for...in over own keys: no entries array per object (this walk runs on every write).
  for (const key in value) {
    if (Object.hasOwn(value, key)) deepFrozen((value as Record<string, unknown>)[key]);
  }
  return Object.isFrozen(value) ? value : Object.freeze(value);
}
