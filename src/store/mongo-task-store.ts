import type { CommitFeed, CommitFeedSettings } from "./commit-feed.js";
import { openMongoCommitFeed } from "./change-stream-commit-feed.js";
import { randomUUID } from "node:crypto";
import type { Collection, Db, Filter, MongoClient } from "mongodb";
import type { Message } from "../domain/a2a-types.js";
import { MongoTenantUsageStore } from "./mongo-tenant-usage-store.js";
import { TERMINAL_RUN_STATUSES, type A2ATaskStateValue } from "../domain/run-status.js";
import { historyMessagesOf } from "./history-events.js";
import { GroupCommit } from "./group-commit.js";
import { OneCommandBatch, type StoreWrite as Write } from "./mongo-one-command.js";
import { TwoCommandWrites } from "./mongo-two-command-writes.js";
import { isStoreUnavailable, readTimeout } from "./store-call-budget.js";
import { migrateTaskLayout } from "./mongo-layout-migration.js";
import { fenceHolds, MongoTaskLeases } from "./mongo-task-leases.js";
import { MongoWorkflowVersionStore } from "./mongo-workflow-version-store.js";
import {
  EVENT_INDEXES,
  TASK_INDEXES,
  committedEvents,
  committedUpTo,
  toEvent,
  toRecord,
  type EventDocument,
  type TaskDocument,
} from "./mongo-task-documents.js";
import { assertWriteSize, DEFAULT_TASK_SIZE_LIMITS, type TaskSizeLimits } from "./task-size-limits.js";
import type { RunEvent, TaskRecord, TaskLease } from "../domain/task-record.js";
import {
  DuplicateIdempotencyKeyError,
  LeaseLostError,
  StaleWriteError,
  type LeaseFence,
  type TaskListPage,
  type TaskListQuery,
  type TaskRecordChanges,
  type TaskStore,
} from "./task-store.js";

export interface MongoTaskStoreOptions {
  now?: () => Date;
  limits?: TaskSizeLimits;
  /** Test-only fault seam (StoreSettings.killAfterEventsWriteOf). */
  killAfterEventsWriteOf?: string;
  /**
   * One command per write (MongoDB 8.0's client bulkWrite) when the server offers it; `false` forces the
   * two-command path of older servers (tests of that path).
   */
  oneCommandWrites?: boolean;
}

/** Wire version of MongoDB 8.0, the first with the client-level bulkWrite command. */
const CLIENT_BULK_WRITE_WIRE_VERSION = 25;

/** A write of unknown outcome is announced to this store's feeds at once and again after this long (see submit). */
const UNKNOWN_OUTCOME_REANNOUNCE_MS = 2_000;

const HEAD_ONLY = { _id: 1, version: 1, expireAt: 1, leaseOwner: 1, leaseEpoch: 1 } as const;
const HEAD_AND_REDO = { ...HEAD_ONLY, redo: 1 } as const;
const HISTORY_ONLY = { _id: 0, sequence: 1, history: 1, historyEnd: 1 } as const;

/**
 * Two collections: `tasks` holds each task's head (record, snapshot, version), `task_events` its event log.
 * There are no multi-document transactions, so a write is ordered to be crash-safe instead: the events are
 * inserted first (unique (taskId, sequence)), then the head moves with its version check (and, for the
 * driver, its lease). Readers read the head, then trust only events up to its version, so events of a writer
 * that died (or lost) between the two writes are invisible. Writes from concurrent callers go out together
 * (group commit), each head with its own version filter: on MongoDB >= 8.0 in ONE ordered client bulkWrite
 * command across both collections (OneCommandBatch), on older servers as one unordered insert of all their
 * events, then one unordered bulk of all their heads (this class's two-command path, also the fallback for a
 * stopped bulkWrite).
 *
 * Redo: a write whose events meet existing keys (orphans of a dead writer, the events of a live writer that
 * has not moved its head yet, or a stale writer's) never touches the log first. Its head moves first, with
 * the same version and lease filter, carrying the events (`redo`); only a writer whose head moved copies
 * them into the log (replacing whatever held those sequences), then drops them from the head. Readers take
 * the head's redo events over the log's. So no one rewrites a committed event (only the writer that
 * committed a sequence rewrites it, with what it committed), and a head never stands over another writer's
 * events; without this, a writer paused between a head check and its replacement (a fenced-out owner, a
 * version-checked reply on another instance) overwrote the winner's committed events.
 */
export class MongoTaskStore implements TaskStore {
  readonly kind = "mongodb" as const;
  readonly limits: TaskSizeLimits;
  /** The workflow definitions runs are pinned to (`workflow_versions`), on the same database. */
  readonly workflowVersions: MongoWorkflowVersionStore;
  private readonly tasks: Collection<TaskDocument>;
  private readonly events: Collection<EventDocument>;
  private readonly leases: MongoTaskLeases;
  private readonly now: () => Date;
  /** Marks the events this instance wrote (diagnostics of orphans) and its head writes (`commitId`). */
  private readonly writer = randomUUID();
  /** The two-command write path (events, then heads): servers before 8.0, and the fallback of the one-command one. */
  private readonly twoCommands: TwoCommandWrites;
  private readonly group = new GroupCommit<Write>((batch) =>
    this.oneCommand ? this.oneCommand.write(batch) : this.twoCommands.writeBatch(batch),
  );
  /** Set by init() when the server runs the client-level bulkWrite command (MongoDB >= 8.0). */
  private oneCommand: OneCommandBatch | undefined;
  /** Commit feeds opened on this store's client, closed with it. */
  private readonly feeds = new Set<CommitFeed>();
  readonly tenantUsage: MongoTenantUsageStore;

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly options: MongoTaskStoreOptions = {},
  ) {
    this.tasks = db.collection<TaskDocument>("tasks");
    this.events = db.collection<EventDocument>("task_events");
    this.leases = new MongoTaskLeases(this.tasks);
    this.twoCommands = new TwoCommandWrites(this.tasks, this.events, this.writer, (batch) => this.killAsked(batch));
    this.now = options.now ?? (() => new Date());
    this.limits = options.limits ?? DEFAULT_TASK_SIZE_LIMITS;
    this.workflowVersions = new MongoWorkflowVersionStore(db);
    this.tenantUsage = new MongoTenantUsageStore(db, this.now);
  }

  /** One round trip to the server (readiness); rejects when MongoDB cannot be reached. */
  async ping(): Promise<void> {
    await this.client.db("admin").command({ ping: 1 });
  }

  async init(): Promise<void> {
    await Promise.all([
      this.tasks.createIndexes(TASK_INDEXES),
      this.events.createIndexes(EVENT_INDEXES),
      this.tenantUsage.init(),
    ]);
    await migrateTaskLayout(this.db, this.writer);
    if (this.options.oneCommandWrites === false) return;
    const hello = await this.db.admin().command({ hello: 1 });
    if (Number(hello["maxWireVersion"]) < CLIENT_BULK_WRITE_WIRE_VERSION) return;
    this.oneCommand = new OneCommandBatch(this.client, this.db, this.writer, this.twoCommands, (batch) =>
      this.killAsked(batch),
    );
  }

  /** How a write reaches MongoDB, for the start-up line. */
  get writePath(): string {
    return this.oneCommand
      ? "one bulkWrite command per commit (MongoDB >= 8.0)"
      : "two commands per commit (events, then head)";
  }

  async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    assertWriteSize(record, events, this.limits);
    const write = {
      key: record.taskId,
      taskId: record.taskId,
      events,
      create: record,
      commitId: this.newCommitId(),
      expireAt: record.expireAt,
    };
    try {
      await this.submit(write);
    } catch (err) {
      if (!(err instanceof DuplicateIdempotencyKeyError)) throw err;
      // The holder may be a task past its retention that the TTL monitor has not removed yet: it reads
      // as not found, so it must not block the key. Remove it and try once more.
      const purged = await this.tasks.deleteOne({
        idempotencyKey: { $eq: err.idempotencyKey, $type: "string" },
        expireAt: { $lte: this.now() },
      });
      if (purged.deletedCount === 0) throw err;
      await this.submit(write);
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
    try {
      await this.submit({
        key: taskId,
        taskId,
        events,
        commit: { expectedVersion, changes, ...(fence ? { fence } : {}) },
        commitId: this.newCommitId(),
        expireAt: changes.expireAt,
      });
    } catch (err) {
      // The head did not move: tell a lost lease (stop driving) from a lost version race (reload).
      if (!fence || !(err instanceof StaleWriteError)) throw err;
      const head = await this.tasks.findOne({ _id: taskId }, { projection: HEAD_ONLY });
      throw fenceHolds(head, fence) ? err : new LeaseLostError(taskId, fence.owner, fence.epoch);
    }
  }

  claimTimer(taskId: string, now: Date, retryAt: Date): Promise<boolean> {
    return this.leases.claimTimer(taskId, now, retryAt);
  }

  acquireLease(taskId: string, owner: string, now: Date, expiresAt: Date): Promise<TaskLease | null> {
    return this.leases.acquire(taskId, owner, now, expiresAt);
  }

  renewLeases(owner: string, taskIds: string[], expiresAt: Date): Promise<number> {
    return this.leases.renew(owner, taskIds, expiresAt);
  }

  releaseLease(taskId: string, owner: string, epoch: number): Promise<void> {
    return this.leases.release(taskId, owner, epoch);
  }

  cancellingTaskIds(taskIds: string[]): Promise<string[]> {
    return this.leases.cancelling(taskIds);
  }

  leaseableTaskIds(now: Date, owner: string, limit: number): Promise<string[]> {
    return this.leases.leaseable(now, owner, limit);
  }

  async findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null> {
    // The `$type` clause repeats the partial index's filter, so the planner can use that index.
    const doc = await this.tasks.findOne({ idempotencyKey: { $eq: idempotencyKey, $type: "string" } }, readTimeout());
    return doc && !this.expired(doc) ? toRecord(doc) : null;
  }

  async list(query: TaskListQuery): Promise<TaskListPage> {
    const live: Filter<TaskDocument> = { $or: [{ expireAt: null }, { expireAt: { $gt: this.now() } }] };
    const range = (from: string | undefined, before: string | undefined) =>
      from !== undefined || before !== undefined
        ? { ...(from !== undefined ? { $gte: from } : {}), ...(before !== undefined ? { $lt: before } : {}) }
        : undefined;
    const updated = range(query.updatedAtOrAfter, query.updatedBefore);
    const created = range(query.createdAtOrAfter, query.createdBefore);
    // Every filter but the state: the per-state counts take this one.
    const anyState: Filter<TaskDocument> = {
      tenant: query.tenant,
      ...(query.contextId !== undefined ? { contextId: query.contextId } : {}),
      ...(query.workflowId !== undefined ? { workflowId: query.workflowId } : {}),
      ...(query.idPrefix !== undefined ? { _id: { $gte: query.idPrefix, $lt: `${query.idPrefix}\uffff` } } : {}),
      ...(updated ? { updatedAt: updated } : {}),
      ...(created ? { createdAt: created } : {}),
      $and: [live],
    };
    const filter: Filter<TaskDocument> = {
      ...anyState,
      ...(query.state !== undefined ? { "a2a.state": query.state } : {}),
    };
    const after = query.after;
    const pageFilter: Filter<TaskDocument> = after
      ? {
          ...filter,
          $and: [
            live,
            {
              $or: [
                { updatedAt: { $lt: after.updatedAt } },
                { updatedAt: after.updatedAt, _id: { $lt: after.taskId } },
              ],
            },
          ],
        }
      : filter;
    // With the per-state counts asked for, the total is their sum (or the filtered state's count): one scan
    // of the tenant's tasks, not two (the console's first page asks for both).
    const [docs, counted, counts] = await Promise.all([
      this.tasks.find(pageFilter, readTimeout()).sort({ updatedAt: -1, _id: -1 }).limit(query.limit).toArray(),
      query.countTotal === false || query.countStates ? -1 : this.tasks.countDocuments(filter, readTimeout()),
      query.countStates
        ? this.tasks
            .aggregate<{ _id: A2ATaskStateValue; n: number }>(
              [{ $match: anyState }, { $group: { _id: "$a2a.state", n: { $sum: 1 } } }],
              readTimeout(),
            )
            .toArray()
        : undefined,
    ]);
    const states = counts ? Object.fromEntries(counts.map((c) => [c._id, c.n])) : undefined;
    let total = counted;
    if (states && query.countTotal !== false)
      total =
        query.state !== undefined ? (states[query.state] ?? 0) : Object.values(states).reduce((sum, n) => sum + n, 0);
    return { records: docs.map(toRecord), total, ...(states ? { states } : {}) };
  }

  async get(taskId: string): Promise<TaskRecord | null> {
    const doc = await this.tasks.findOne({ _id: taskId }, readTimeout());
    return doc && !this.expired(doc) ? toRecord(doc) : null;
  }

  async readEvents(taskId: string, fromSequence: number, limit = 10_000): Promise<RunEvent[]> {
    // The head first: events read after it are either committed as read, or rewritten by their committer
    // with what its redo (read with the head) holds. Events above the head (an unfinished write) sort last,
    // so dropping them after the limit never hides a committed event.
    const head = await this.liveHead(taskId);
    if (!head) return [];
    const docs = await this.events
      .find({ taskId, sequence: { $gte: fromSequence, $lte: head.version } }, readTimeout())
      .sort({ taskId: 1, sequence: 1 })
      .limit(limit)
      .toArray();
    return committedEvents(head, docs, fromSequence, limit).map(toEvent);
  }

  async readHistory(taskId: string, fromIndex: number, upToVersion: number): Promise<Message[]> {
    // The head first, for the same reason as readEvents: a log document of a committed sequence may still be
    // an orphan's until its committer copies the redo the head holds. The `$exists` clause repeats the
    // partial index's filter, so the planner can use that index.
    const head = await this.liveHead(taskId);
    if (!head) return [];
    const docs = await this.events
      .find({ taskId, historyEnd: { $exists: true, $gt: fromIndex } }, { projection: HISTORY_ONLY, ...readTimeout() })
      .sort({ taskId: 1, historyEnd: 1 })
      .toArray();
    return historyMessagesOf(committedUpTo(head, docs, upToVersion), fromIndex);
  }

  async findHistoryMessage(taskId: string, messageId: string, upToVersion: number): Promise<Message | null> {
    const head = await this.liveHead(taskId);
    if (!head) return null;
    const docs = await this.events
      .find(
        { taskId, historyEnd: { $exists: true }, "history.messageId": messageId },
        { projection: HISTORY_ONLY, ...readTimeout() },
      )
      .toArray();
    return historyMessagesOf(committedUpTo(head, docs, upToVersion), 0).find((m) => m.messageId === messageId) ?? null;
  }

  async listActive(): Promise<TaskRecord[]> {
    const docs = await this.tasks.find({ status: { $nin: [...TERMINAL_RUN_STATUSES] } }).toArray();
    return docs.map(toRecord);
  }

  async dueTimers(now: Date, limit: number): Promise<string[]> {
    const docs = await this.tasks
      .find({ timerDueAt: { $lte: now } }, { projection: { _id: 1 } })
      .sort({ timerDueAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  async openCommitFeed(settings: CommitFeedSettings, onError: (err: unknown) => void): Promise<CommitFeed> {
    // The change stream leaves this store's own commits out: the transition hook already hands them over.
    const feed = await openMongoCommitFeed(this.db, settings, onError, this.writer);
    this.feeds.add(feed);
    return feed;
  }

  async close(): Promise<void> {
    // A feed left open would reconnect the client it watches through.
    await Promise.all([...this.feeds].map((feed) => feed.close()));
    await this.client.close();
  }

  // ---------------------------------------------------------------- group commit

  /**
   * A write of this store, settled by its group commit. One whose outcome is unknown (the store could not be
   * reached, or did not answer: the server may have applied it, or may still) is announced to this store's
   * feeds. The transition hook publishes only writes that succeeded, and the change stream leaves this
   * store's own commits out, so without it a follower here of a commit that did land would never hear of it.
   * Announced at once and once more a little later (a write the server applies after the driver gave up);
   * with no sequence: followers re-read the head once each time, whatever happened.
   */
  private async submit(write: Omit<Write, "resolve" | "reject">): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) => this.group.submit({ ...write, resolve, reject }));
    } catch (err) {
      if (isStoreUnavailable(err)) this.announceUnknownOutcome(write.taskId);
      throw err;
    }
  }

  private announceUnknownOutcome(taskId: string): void {
    const announce = () => {
      for (const feed of this.feeds) feed.announce({ taskId });
    };
    announce();
    setTimeout(announce, UNKNOWN_OUTCOME_REANNOUNCE_MS).unref();
  }

  /** A head write's `commitId`: new on every write, prefixed with this store's writer id (the feed's filter). */
  private newCommitId(): string {
    return `${this.writer}:${randomUUID()}`;
  }

  /** Tests (killAfterEventsWriteOf): a batch whose events were just written should die here, before its heads. */
  private killAsked(batch: Write[]): boolean {
    const type = this.options.killAfterEventsWriteOf;
    return type !== undefined && batch.some((w) => w.events.some((e) => e.type === type));
  }

  /** The TTL monitor runs about once a minute; a task past its expiry already reads as not found. */
  /** The head's version and redo, read before the log by every log reader (see readEvents); null when gone or expired. */
  private async liveHead(taskId: string): Promise<Pick<TaskDocument, "version" | "redo" | "expireAt"> | null> {
    const head = await this.tasks.findOne({ _id: taskId }, { projection: HEAD_AND_REDO, ...readTimeout() });
    return head && !this.expired(head) ? head : null;
  }

  private expired(doc: Pick<TaskDocument, "expireAt">): boolean {
    return doc.expireAt instanceof Date && doc.expireAt.getTime() <= this.now().getTime();
  }
}
