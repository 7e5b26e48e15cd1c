import {
  MongoClientBulkWriteError,
  type ClientBulkWriteModel,
  type ClientBulkWriteResult,
  type Db,
  type MongoClient,
} from "mongodb";
import type { PendingWrite } from "./group-commit.js";
import {
  DUPLICATE_KEY,
  headMove,
  type EventDocument,
  type TaskDocument,
  isIdempotencyKeyViolation,
  toDate,
  toEventDocument,
  toTaskDocument,
} from "./mongo-task-documents.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import {
  DuplicateIdempotencyKeyError,
  DuplicateTaskError,
  StaleWriteError,
  type LeaseFence,
  type TaskRecordChanges,
} from "./task-store.js";

/** A create or commit waiting for its group commit. */
export interface StoreWrite extends PendingWrite {
  taskId: string;
  events: RunEvent[];
  create?: TaskRecord;
  commit?: { expectedVersion: number; changes: TaskRecordChanges; fence?: LeaseFence };
  /** The head's `commitId` after this write: `<writer>:<uuid>` (see MongoTaskStore.newCommitId). */
  commitId: string;
  /** The head's expiry after this write: set once the task has ended. */
  expireAt: string | null | undefined;
  /** Set when the write's events met existing keys: its head carries them (redo), the log gets them after. */
  redo?: boolean;
}

/** The two-command path's steps, for the writes of a batch whose ops the server did not run. */
export interface TwoCommandSteps {
  /** Events, then heads (two commands), for writes none of whose ops ran. */
  writeBatch(writes: StoreWrite[]): Promise<void>;
  /** Heads and the log's expiry, for writes whose events stand; settles them. */
  writeHeads(writes: StoreWrite[]): Promise<void>;
  /** A write whose events met existing keys: its head moves carrying them, then the log gets them; settles it. */
  resolveConflict(write: StoreWrite): Promise<void>;
  /** Log expiry stamps and refused creates' cleanup, for writes whose heads were settled here. */
  afterHeads(writes: StoreWrite[], errors: Map<StoreWrite, Error>): Promise<void>;
}

type Stage = "events" | "head" | "expiry";

/** An op on either collection (the driver's model type takes one schema per namespace name). */
type Model = ClientBulkWriteModel<Record<string, TaskDocument>> | ClientBulkWriteModel<Record<string, EventDocument>>;

/** Which write (and which step of it) each op of the command belongs to. */
interface Plan {
  models: Model[];
  owners: Array<{ write: StoreWrite; stage: Stage }>;
  /** Index of each write's head op (every write has one). */
  heads: Map<StoreWrite, number>;
}

/**
 * MongoDB 8.0's client-level bulkWrite: a whole group-commit batch in ONE ordered command across both
 * collections — every write's events, then every head (each with its version filter), then the log expiry
 * stamps of the tasks that ended. Ordered keeps "events before head": a head only moves after all the
 * batch's events are stored. The command is still not atomic (mongod may stop part-way; the driver splits
 * a batch over 48 MB into several commands), so readers keep trusting only events up to the head.
 *
 * An ordered command stops at its first failing op: a duplicate key on an events insert (orphans of a dead
 * writer, or a stale writer whose sequences are taken) or on a create's head (a repeated idempotency key).
 * The ops it did not run go through the two-command path; no other task of the batch fails with it.
 */
export class OneCommandBatch {
  private readonly tasksNs: string;
  private readonly eventsNs: string;

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly writer: string,
    private readonly steps: TwoCommandSteps,
    private readonly onEventsOnly: (batch: StoreWrite[]) => boolean,
  ) {
    this.tasksNs = `${db.databaseName}.tasks`;
    this.eventsNs = `${db.databaseName}.task_events`;
  }

  async write(batch: StoreWrite[]): Promise<void> {
    const plan = this.plan(batch);
    if (this.onEventsOnly(batch)) {
      // Test-only crash seam: what a command cut short after its events leaves behind (see the durability test).
      await this.client.bulkWrite(untyped(plan.models.filter((_, i) => plan.owners[i]?.stage === "events")), {
        ordered: true,
      });
      process.kill(process.pid, "SIGKILL");
    }
    let result: ClientBulkWriteResult;
    try {
      // Per-op results say which commit's version filter matched; a batch of creates needs only the errors (a
      // reply without per-op results, which the driver need not page through and merge).
      result = await this.client.bulkWrite(untyped(plan.models), {
        ordered: true,
        verboseResults: batch.some((w) => w.commit !== undefined),
      });
    } catch (err) {
      if (!(err instanceof MongoClientBulkWriteError) || err.writeErrors.size !== 1 || !err.partialResult) throw err;
      const [[index, error]] = [...err.writeErrors] as [[number, { code: number; message: string }]];
      await this.afterStop(batch, plan, err.partialResult, index, error, err);
      return;
    }
    await this.settle(batch, plan, result, undefined);
  }

  private plan(batch: StoreWrite[]): Plan {
    const plan: Plan = { models: [], owners: [], heads: new Map() };
    const add = (write: StoreWrite, stage: Stage, model: Model) => {
      plan.owners.push({ write, stage });
      plan.models.push(model);
    };
    for (const w of batch) {
      for (const event of w.events)
        add(w, "events", {
          namespace: this.eventsNs,
          name: "insertOne",
          document: toEventDocument(w.taskId, event, this.writer, w.expireAt),
        });
    }
    for (const w of batch) {
      plan.heads.set(w, plan.models.length);
      if (w.create)
        add(w, "head", { namespace: this.tasksNs, name: "insertOne", document: toTaskDocument(w.create, w.commitId) });
      else {
        const { expectedVersion, changes, fence } = w.commit!;
        add(w, "head", {
          namespace: this.tasksNs,
          name: "updateOne",
          ...headMove(
            w.taskId,
            expectedVersion,
            changes,
            w.events.at(-1)?.sequence ?? expectedVersion,
            w.commitId,
            fence,
          ),
        });
      }
    }
    for (const w of batch) {
      if (w.commit && w.expireAt)
        add(w, "expiry", {
          namespace: this.eventsNs,
          name: "updateMany",
          filter: { taskId: w.taskId, expireAt: null },
          update: { $set: { expireAt: toDate(w.expireAt) } },
        });
    }
    return plan;
  }

  /** The command stopped at op `index`: settle what ran, hand the rest to the two-command path. */
  private async afterStop(
    batch: StoreWrite[],
    plan: Plan,
    partial: ClientBulkWriteResult,
    index: number,
    error: { code: number; message: string },
    cause: Error,
  ): Promise<void> {
    const failed = plan.owners[index]!;
    if (failed.stage === "events") {
      const eventsDone = batch.filter((w) => w !== failed.write && lastEventIndex(plan, w) < index);
      const notRun = batch.filter((w) => w !== failed.write && !eventsDone.includes(w));
      const conflict =
        error.code === DUPLICATE_KEY
          ? this.steps.resolveConflict(failed.write)
          : Promise.resolve(failed.write.reject(cause));
      await Promise.all([
        conflict,
        this.steps.writeHeads(eventsDone),
        notRun.length > 0 ? this.steps.writeBatch(notRun) : undefined,
      ]);
      return;
    }
    if (failed.stage === "expiry") {
      // The commits stand: a failed stamp only delays the log's removal, as on the two-command path.
      await this.settle(batch, plan, partial, index);
      return;
    }
    const headsNotRun = batch.filter((w) => plan.heads.get(w)! > index);
    const errors = new Map<StoreWrite, Error>([[failed.write, headError(failed.write, error, cause)]]);
    await Promise.all([
      this.settle(
        batch.filter((w) => plan.heads.get(w)! <= index),
        plan,
        partial,
        index,
        errors,
      ),
      this.steps.writeHeads(headsNotRun),
    ]);
  }

  /** Settles the writes whose head op ran; `stoppedAt` is where an ordered command stopped (later expiry stamps did not run). */
  private async settle(
    writes: StoreWrite[],
    plan: Plan,
    result: ClientBulkWriteResult,
    stoppedAt: number | undefined,
    errors = new Map<StoreWrite, Error>(),
  ): Promise<void> {
    const staleStamped: StoreWrite[] = [];
    for (const w of writes) {
      if (!w.commit || errors.has(w)) continue;
      if (result.updateResults?.get(plan.heads.get(w)!)?.matchedCount === 1) continue;
      errors.set(w, new StaleWriteError(w.taskId, w.commit.expectedVersion));
      if (w.expireAt && (stoppedAt === undefined || expiryIndex(plan, w) < stoppedAt)) staleStamped.push(w);
    }
    const unstamped =
      stoppedAt === undefined
        ? writes.filter((w) => errors.has(w))
        : writes.filter((w) => !(expiryIndex(plan, w) < stoppedAt));
    await Promise.all([this.steps.afterHeads(unstamped, errors), ...staleStamped.map((w) => this.restoreExpiry(w))]);
    for (const w of writes) {
      const error = errors.get(w);
      if (error) w.reject(error);
      else w.resolve();
    }
  }

  /**
   * A stale commit that ended its task ran its expiry stamp in the same command although its head did not
   * move: give the log back the expiry of the head that stands (rare: a stale writer's first event usually
   * meets the winner's key and stops the command before its head).
   */
  private async restoreExpiry(write: StoreWrite): Promise<void> {
    const head = await this.db
      .collection<{ _id: string; expireAt?: Date | null }>("tasks")
      .findOne({ _id: write.taskId }, { projection: { expireAt: 1 } })
      .catch(() => null);
    await this.db
      .collection("task_events")
      .updateMany(
        { taskId: write.taskId, expireAt: toDate(write.expireAt) },
        { $set: { expireAt: head?.expireAt ?? null } },
      )
      .catch(() => undefined);
  }
}

/** Each model is typed by its collection's document above; the driver's call takes one schema for all. */
function untyped(models: Model[]): ClientBulkWriteModel[] {
  return models as ClientBulkWriteModel[];
}

function lastEventIndex(plan: Plan, write: StoreWrite): number {
  return plan.owners.findLastIndex((o) => o.write === write && o.stage === "events");
}

function expiryIndex(plan: Plan, write: StoreWrite): number {
  const index = plan.owners.findIndex((o) => o.write === write && o.stage === "expiry");
  return index === -1 ? Number.POSITIVE_INFINITY : index;
}

/** What a failed head write means for its caller: a duplicate task or idempotency key, else the driver's error. */
export function headError(
  write: StoreWrite,
  error: { code?: number; keyPattern?: Record<string, unknown>; errmsg?: string; message?: string },
  cause: unknown,
): Error {
  if (write.create && error.code === DUPLICATE_KEY) {
    const key = write.create.idempotencyKey;
    return key && isIdempotencyKeyViolation(error)
      ? new DuplicateIdempotencyKeyError(key)
      : new DuplicateTaskError(write.taskId);
  }
  return cause instanceof Error ? cause : new Error(String(cause));
}
