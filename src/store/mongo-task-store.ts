import { MongoServerError, type Collection, type Db, type Filter, type MongoClient } from "mongodb";
import { TERMINAL_RUN_STATUSES } from "../domain/run-status.js";
import {
  DuplicateIdempotencyKeyError,
  DuplicateTaskError,
  StaleWriteError,
  type RunEvent,
  type TaskListPage,
  type TaskListQuery,
  type TaskRecord,
  type TaskRecordChanges,
  type TaskStore,
} from "./task-store.js";

/**
 * One document per task: the record fields, plus the whole event log in `events`. Keeping the log inside the
 * task document makes every transition a single atomic `updateOne` (one round trip): the version filter is
 * the optimistic-concurrency check, `$push` appends the events, and there is no second write that a crash
 * could separate from the first. Reads project `events` out, or slice the part they need.
 */
interface TaskDocument extends Omit<TaskRecord, "taskId" | "expireAt" | "timerDueAt"> {
  _id: string;
  expireAt?: Date | null;
  timerDueAt?: Date | null;
  events: RunEvent[];
}

const DUPLICATE_KEY = 11000;
const WITHOUT_EVENTS = { events: 0 } as const;

export class MongoTaskStore implements TaskStore {
  readonly kind = "mongodb" as const;
  private readonly tasks: Collection<TaskDocument>;

  constructor(
    private readonly client: MongoClient,
    db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.tasks = db.collection<TaskDocument>("tasks");
  }

  /** One round trip to the server (readiness); rejects when MongoDB cannot be reached. */
  async ping(): Promise<void> {
    await this.client.db("admin").command({ ping: 1 });
  }

  async init(): Promise<void> {
    await this.tasks.createIndexes([
      { key: { status: 1 }, name: "status" },
      { key: { timerDueAt: 1 }, name: "timer_due", sparse: true },
      // TTL: MongoDB deletes a terminal task once its retention has passed.
      { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
      { key: { tenant: 1, contextId: 1, updatedAt: -1 }, name: "tenant_context" },
      // ListTasks without a context filter: a tenant's tasks, newest first.
      { key: { tenant: 1, updatedAt: -1, _id: -1 }, name: "tenant_updated" },
      // A2A message.messageId idempotency: one live task per (tenant, principal, messageId) digest.
      { key: { idempotencyKey: 1 }, name: "idempotency_key", unique: true, partialFilterExpression: { idempotencyKey: { $type: "string" } } },
    ]);
  }

  async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.tasks.insertOne(toDocument(record, events));
        return;
      } catch (err) {
        if (!(err instanceof MongoServerError) || err.code !== DUPLICATE_KEY) throw err;
        const key = record.idempotencyKey;
        if (!key || !isIdempotencyKeyViolation(err)) throw new DuplicateTaskError(record.taskId);
        // The holder may be a task past its retention that the TTL monitor has not removed yet: it reads
        // as not found, so it must not block the key. Remove it and try once more.
        const purged = attempt === 0 ? await this.tasks.deleteOne({ idempotencyKey: key, expireAt: { $lte: this.now() } }) : { deletedCount: 0 };
        if (purged.deletedCount === 0) throw new DuplicateIdempotencyKeyError(key);
      }
    }
  }

  async findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null> {
    // The `$type` clause repeats the partial index's filter, so the planner can use that index.
    const doc = await this.tasks.findOne({ idempotencyKey: { $eq: idempotencyKey, $type: "string" } }, { projection: WITHOUT_EVENTS });
    return doc && !this.expired(doc) ? toRecord(doc) : null;
  }

  async list(query: TaskListQuery): Promise<TaskListPage> {
    const live: Filter<TaskDocument> = { $or: [{ expireAt: null }, { expireAt: { $gt: this.now() } }] };
    const filter: Filter<TaskDocument> = {
      tenant: query.tenant,
      ...(query.contextId !== undefined ? { contextId: query.contextId } : {}),
      ...(query.state !== undefined ? { "a2a.state": query.state } : {}),
      ...(query.updatedAtOrAfter !== undefined ? { updatedAt: { $gte: query.updatedAtOrAfter } } : {}),
      $and: [live],
    };
    const after = query.after;
    const pageFilter: Filter<TaskDocument> = after
      ? { ...filter, $and: [live, { $or: [{ updatedAt: { $lt: after.updatedAt } }, { updatedAt: after.updatedAt, _id: { $lt: after.taskId } }] }] }
      : filter;
    const [docs, total] = await Promise.all([
      this.tasks.find(pageFilter, { projection: WITHOUT_EVENTS }).sort({ updatedAt: -1, _id: -1 }).limit(query.limit).toArray(),
      this.tasks.countDocuments(filter),
    ]);
    return { records: docs.map(toRecord), total };
  }

  async commit(taskId: string, expectedVersion: number, changes: TaskRecordChanges, events: RunEvent[]): Promise<void> {
    const last = events.at(-1);
    const result = await this.tasks.updateOne(
      { _id: taskId, version: expectedVersion },
      {
        $set: {
          status: changes.status,
          a2a: changes.a2a,
          snapshot: changes.snapshot,
          updatedAt: changes.updatedAt,
          expireAt: toDate(changes.expireAt),
          timerDueAt: toDate(changes.timerDueAt),
          version: last ? last.sequence : expectedVersion,
        },
        $push: { events: { $each: events } },
      },
    );
    if (result.matchedCount === 0) throw new StaleWriteError(taskId, expectedVersion);
  }

  async get(taskId: string): Promise<TaskRecord | null> {
    const doc = await this.tasks.findOne({ _id: taskId }, { projection: WITHOUT_EVENTS });
    return doc && !this.expired(doc) ? toRecord(doc) : null;
  }

  async readEvents(taskId: string, fromSequence: number, limit = 10_000): Promise<RunEvent[]> {
    const doc = await this.tasks.findOne(
      { _id: taskId },
      { projection: { events: { $slice: [fromSequence, limit] }, expireAt: 1 } },
    );
    if (!doc || this.expired(doc)) return [];
    return doc.events ?? [];
  }

  async listActive(): Promise<TaskRecord[]> {
    const docs = await this.tasks
      .find({ status: { $nin: [...TERMINAL_RUN_STATUSES] } }, { projection: WITHOUT_EVENTS })
      .toArray();
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

  async close(): Promise<void> {
    await this.client.close();
  }

  /** The TTL monitor runs about once a minute; a task past its expiry already reads as not found. */
  private expired(doc: Pick<TaskDocument, "expireAt">): boolean {
    return doc.expireAt instanceof Date && doc.expireAt.getTime() <= this.now().getTime();
  }
}

/** Which unique index an E11000 came from: the idempotency key's, or the primary key's. */
function isIdempotencyKeyViolation(err: MongoServerError): boolean {
  const pattern = (err as { keyPattern?: Record<string, unknown> }).keyPattern;
  if (pattern) return "idempotencyKey" in pattern;
  return /idempotency_key|idempotencyKey/.test(err.message);
}

function toDate(value: string | null | undefined): Date | null {
  return value ? new Date(value) : null;
}

function toDocument(record: TaskRecord, events: RunEvent[]): TaskDocument {
  const { taskId, expireAt, timerDueAt, ...rest } = record;
  return { ...rest, _id: taskId, expireAt: toDate(expireAt), timerDueAt: toDate(timerDueAt), events };
}

function toRecord(doc: Omit<TaskDocument, "events"> & { events?: unknown }): TaskRecord {
  const { _id, expireAt, timerDueAt, events: _events, ...rest } = doc;
  return {
    ...rest,
    taskId: _id,
    expireAt: expireAt ? expireAt.toISOString() : null,
    timerDueAt: timerDueAt ? timerDueAt.toISOString() : null,
  };
}
