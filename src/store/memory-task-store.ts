import type { Message } from "../domain/a2a-types.js";
import { MemoryTenantUsageStore } from "./tenant-usage-store.js";
import { isTerminalRunStatus, RUNNABLE_RUN_STATUSES, type A2ATaskStateValue } from "../domain/run-status.js";
import { historyMessagesOf } from "./history-events.js";
import { assertWriteSize, DEFAULT_TASK_SIZE_LIMITS, type TaskSizeLimits } from "./task-size-limits.js";
import type { RunEvent, TaskRecord, TaskLease } from "../domain/task-record.js";
import {
  DuplicateIdempotencyKeyError,
  DuplicateTaskError,
  LeaseLostError,
  StaleWriteError,
  type AcquiredLease,
  type LeaseFence,
  type TaskListPage,
  type TaskListQuery,
  type TaskRecordChanges,
  type TaskStore,
} from "./task-store.js";
import { MemoryWorkflowVersionStore } from "./workflow-version-store.js";

interface Entry {
  record: TaskRecord;
  events: RunEvent[];
  /** Last epoch handed out; it outlives a released lease, as `leaseEpoch` does in MongoDB. */
  leaseEpoch: number;
  /**
   * When the task is dropped (epoch ms): the earlier of its `expireAt` and its first terminal commit plus the
   * store's retention. Unset while the task has no `expireAt` (not terminal).
   */
  evictAt?: number;
  /** Its first terminal commit plus the retention: set once, so a later commit cannot extend it. */
  retainUntil?: number;
}

/** How often a store with a retention sweeps expired tasks, besides the sweep every create runs. */
const SWEEP_INTERVAL_MS = 1_000;

/**
 * In-process store: fast tests, and the fallback when no MongoDB is reachable. Nothing survives a restart.
 * What it holds is deeply frozen when written and handed to readers as it is: no copy per write or read
 * (structuredClone was a tenth of the request path), and still nobody can change a stored task but the store,
 * which replaces a record rather than editing it.
 * Like the MongoDB adapter it keeps each task's head and its event log apart, refuses the same oversized
 * writes, and drops the log together with an expired head.
 * Terminal tasks are dropped (head, log, idempotency key, indexes) at their `expireAt` or `terminalRetentionMs`
 * after they ended, whichever comes first (MEMORY_STORE_RETENTION_MS), and the oldest first once more than
 * `maxTerminalTasks` have ended (MEMORY_STORE_MAX_TERMINAL_TASKS): a sweep of a queue in the order tasks
 * ended, run by every create and (with a bound) once a second, so the store holds at most that many tasks
 * that ended within the retention, besides the tasks still going. A dropped task reads as not found.
 */
export class MemoryTaskStore implements TaskStore {
  readonly kind = "memory" as const;
  readonly limits: TaskSizeLimits;
  readonly tenantUsage: MemoryTenantUsageStore;
  private readonly tasks = new Map<string, Entry>();
  /** A version's runs are the tasks held here (running, or ended and retained) that record it. */
  readonly workflowVersions = new MemoryWorkflowVersionStore((workflowId, version) => {
    const runs = { live: 0, ended: 0 };
    for (const { record } of this.tasks.values())
      if (record.workflowId === workflowId && record.workflowVersion === version)
        runs[isTerminalRunStatus(record.status) ? "ended" : "live"]++;
    return runs;
  });
  /** Idempotency key → task id (the unique index of the MongoDB adapter). */
  private readonly byIdempotencyKey = new Map<string, string>();
  /**
   * Ids of the tasks in a runnable status, and of those with a timer: what the lease and timer polls scan
   * (as the MongoDB adapter's indexes serve them), instead of every task the store holds.
   */
  private readonly runnable = new Set<string>();
  private readonly timed = new Set<string>();
  /** Ids of the terminal tasks, in the order they ended (so, as retention is fixed, in `evictAt` order); from `head` on. */
  private ending: string[] = [];
  private endingHead = 0;
  /** Terminal tasks held (queued in `ending` and not dropped yet). */
  private terminalHeld = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly now: () => Date = () => new Date(),
    limits: TaskSizeLimits = DEFAULT_TASK_SIZE_LIMITS,
    /** How long a terminal task is kept at most (its `expireAt` may come sooner); Infinity: until `expireAt`. */
    private readonly terminalRetentionMs = Number.POSITIVE_INFINITY,
    /** How many terminal tasks are kept at most: past it, those that ended first are dropped first. */
    private readonly maxTerminalTasks = Number.POSITIVE_INFINITY,
  ) {
    this.limits = limits;
    this.tenantUsage = new MemoryTenantUsageStore((tenant) => this.activeTasksOf(tenant), now);
  }

  /** A tenant's tasks that have not ended (the running-task limit's count). */
  private activeTasksOf(tenant: string): number {
    let active = 0;
    for (const entry of this.tasks.values())
      if (entry.record.tenant === tenant && !isTerminalRunStatus(entry.record.status)) active++;
    return active;
  }

  async init(): Promise<void> {}

  /** Tasks held (live or expired but not yet swept); for tests and diagnostics. */
  get size(): number {
    return this.tasks.size;
  }

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
    const entry: Entry = {
      record: deepFrozen({ ...record }),
      events: events.map(deepFrozen),
      leaseEpoch: record.lease?.epoch ?? 0,
    };
    this.tasks.set(record.taskId, entry);
    this.reindex(entry);
    this.sweep(this.now().getTime());
    // With a retention, a sweep each second too: what ended is freed even when no more tasks come.
    if (
      this.sweeper === undefined &&
      (Number.isFinite(this.terminalRetentionMs) || Number.isFinite(this.maxTerminalTasks))
    ) {
      this.sweeper = setInterval(() => this.sweep(this.now().getTime()), SWEEP_INTERVAL_MS).unref();
    }
  }

  async commit(
    taskId: string,
    expectedVersion: number,
    changes: TaskRecordChanges,
    events: RunEvent[],
    fence?: LeaseFence,
  ): Promise<void> {
    assertWriteSize({ taskId, snapshot: changes.snapshot, a2a: changes.a2a }, events, this.limits);
    const entry = this.tasks.get(taskId);
    if (fence && entry && !fenceHolds(entry.record.lease, fence))
      throw new LeaseLostError(taskId, fence.owner, fence.epoch);
    if (!entry || entry.record.version !== expectedVersion) throw new StaleWriteError(taskId, expectedVersion);
    const last = events.at(-1);
    const { lease: held, ...rest } = entry.record;
    const lease = fence
      ? fence.expiresAt
        ? { owner: fence.owner, epoch: fence.epoch, expiresAt: fence.expiresAt }
        : undefined
      : held;
    entry.record = deepFrozen({
      ...rest,
      ...changes,
      version: last ? last.sequence : entry.record.version,
      ...(lease ? { lease } : {}),
    });
    this.reindex(entry);
    for (const event of events) entry.events.push(deepFrozen(event));
  }

  async claimTimer(taskId: string, now: Date, retryAt: Date): Promise<boolean> {
    const entry = this.live(taskId);
    const dueAt = entry?.record.timerDueAt;
    if (!entry || !dueAt || Date.parse(dueAt) > now.getTime()) return false;
    entry.record = Object.freeze({ ...entry.record, timerDueAt: retryAt.toISOString() });
    return true;
  }

  async acquireLease(taskId: string, owner: string, now: Date, expiresAt: Date): Promise<AcquiredLease | null> {
    const entry = this.live(taskId);
    if (!entry || !RUNNABLE_RUN_STATUSES.has(entry.record.status) || !leaseFree(entry.record.lease, now, owner))
      return null;
    const unreleased = !!entry.record.lease;
    entry.leaseEpoch += 1;
    const lease = { owner, epoch: entry.leaseEpoch, expiresAt: expiresAt.toISOString() };
    entry.record = Object.freeze({ ...entry.record, lease: Object.freeze(lease) });
    return { ...lease, unreleased };
  }

  async renewLeases(owner: string, taskIds: string[], expiresAt: Date): Promise<number> {
    let renewed = 0;
    for (const taskId of taskIds) {
      const entry = this.tasks.get(taskId);
      const lease = entry?.record.lease;
      if (!entry || lease?.owner !== owner) continue;
      entry.record = Object.freeze({
        ...entry.record,
        lease: Object.freeze({ ...lease, expiresAt: expiresAt.toISOString() }),
      });
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
      .filter(
        (r) =>
          RUNNABLE_RUN_STATUSES.has(r.status) &&
          leaseFree(r.lease, now, owner) &&
          (!r.timerDueAt || Date.parse(r.timerDueAt) <= now.getTime()),
      )
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
    const anyState = [...this.tasks.keys()]
      .map((id) => this.live(id)?.record)
      .filter((r): r is TaskRecord => r !== undefined)
      .filter(
        (r) =>
          r.tenant === query.tenant &&
          (query.contextId === undefined || r.contextId === query.contextId) &&
          (query.workflowId === undefined || r.workflowId === query.workflowId) &&
          (query.idPrefix === undefined || r.taskId.startsWith(query.idPrefix)) &&
          (query.updatedAtOrAfter === undefined || r.updatedAt >= query.updatedAtOrAfter) &&
          (query.updatedBefore === undefined || r.updatedAt < query.updatedBefore) &&
          (query.createdAtOrAfter === undefined || r.createdAt >= query.createdAtOrAfter) &&
          (query.createdBefore === undefined || r.createdAt < query.createdBefore),
      );
    const matching = anyState.filter((r) => query.state === undefined || r.a2a.state === query.state).sort(newestFirst);
    const after = query.after;
    const page = after
      ? matching.filter((r) => newestFirst(r, { updatedAt: after.updatedAt, taskId: after.taskId }) > 0)
      : matching;
    const states: Partial<Record<A2ATaskStateValue, number>> = {};
    if (query.countStates) for (const r of anyState) states[r.a2a.state] = (states[r.a2a.state] ?? 0) + 1;
    return {
      records: page.slice(0, query.limit),
      total: query.countTotal === false ? -1 : matching.length,
      ...(query.countStates ? { states } : {}),
    };
  }

  async listActive(): Promise<TaskRecord[]> {
    return [...this.tasks.values()].filter((e) => !isTerminalRunStatus(e.record.status)).map((e) => e.record);
  }

  async dueTimers(now: Date, limit: number): Promise<string[]> {
    return [...this.timed]
      .map((id) => this.tasks.get(id)!)
      .filter((e) => e.record.timerDueAt && Date.parse(e.record.timerDueAt) <= now.getTime())
      .sort((a, b) => Date.parse(a.record.timerDueAt ?? "") - Date.parse(b.record.timerDueAt ?? ""))
      .slice(0, limit)
      .map((e) => e.record.taskId);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private reindex(entry: Entry): void {
    const record = entry.record;
    if (RUNNABLE_RUN_STATUSES.has(record.status)) this.runnable.add(record.taskId);
    else this.runnable.delete(record.taskId);
    if (record.timerDueAt) this.timed.add(record.taskId);
    else this.timed.delete(record.taskId);
    if (!record.expireAt) {
      entry.evictAt = undefined;
      return;
    }
    if (entry.retainUntil === undefined) {
      entry.retainUntil = this.now().getTime() + this.terminalRetentionMs;
      this.ending.push(record.taskId);
      this.terminalHeld++;
    }
    const expiry = Date.parse(record.expireAt);
    entry.evictAt = Number.isNaN(expiry) ? entry.retainUntil : Math.min(expiry, entry.retainUntil);
  }

  /**
   * Drops the tasks at the front of the ending queue whose time has come, and those over the count; stops at
   * the first that is neither (those behind it ended later). A task read after its time but before a sweep
   * is dropped by `live`.
   */
  private sweep(nowMs: number): void {
    while (this.endingHead < this.ending.length) {
      const taskId = this.ending[this.endingHead]!;
      const entry = this.tasks.get(taskId);
      if (entry?.evictAt !== undefined && entry.evictAt > nowMs && this.terminalHeld <= this.maxTerminalTasks) break;
      if (entry?.evictAt !== undefined) this.drop(taskId, entry);
      else if (entry?.retainUntil !== undefined) {
        // No longer terminal: out of the queue (it is queued again if it ends again).
        entry.retainUntil = undefined;
        this.terminalHeld--;
      }
      this.endingHead++;
    }
    // Compact once the swept front is most of the array (amortised O(1) per task).
    if (this.endingHead > 1024 && this.endingHead * 2 > this.ending.length) {
      this.ending = this.ending.slice(this.endingHead);
      this.endingHead = 0;
    }
  }

  /** Expired tasks read as not found and are dropped, as the TTL index does in MongoDB. */
  private live(taskId: string): Entry | undefined {
    const entry = this.tasks.get(taskId);
    if (entry?.evictAt !== undefined && entry.evictAt <= this.now().getTime()) {
      this.drop(taskId, entry);
      return undefined;
    }
    return entry;
  }

  private drop(taskId: string, entry: Entry): void {
    if (entry.retainUntil !== undefined) this.terminalHeld--;
    this.tasks.delete(taskId);
    this.runnable.delete(taskId);
    this.timed.delete(taskId);
    const key = entry.record.idempotencyKey;
    if (key && this.byIdempotencyKey.get(key) === taskId) this.byIdempotencyKey.delete(key);
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

/**
 * Freezes `value` and everything in it (plain JSON data: objects, arrays, scalars); answers it. A frozen
 * object is taken as frozen all through: this store freezes bottom-up, and a commit mostly re-stores parts of
 * the previous head (and of the snapshot copy, see `persisted-task-snapshot.ts`), which need no second walk.
 */
function deepFrozen<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  // for...in over own keys: no entries array per object (this walk runs on every write).
  for (const key in value) {
    if (Object.hasOwn(value, key)) deepFrozen((value as Record<string, unknown>)[key]);
  }
  return Object.freeze(value);
}
