import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type WriteError } from "mongodb";
import { headError, type StoreWrite as Write, type TwoCommandSteps } from "./mongo-one-command.js";
import {
  DUPLICATE_KEY,
  headUpdate,
  redoKey,
  toDate,
  toEventDocument,
  toTaskDocument,
  type EventDocument,
  type TaskDocument,
} from "./mongo-task-documents.js";
import { DuplicateIdempotencyKeyError, StaleWriteError } from "./task-store.js";

/**
 * The two-command write path of MongoTaskStore (see its class comment): all the batch's events in one unordered
 * insert, then all its heads in one unordered bulk, each with its version (and lease) filter; a write whose events
 * met existing keys takes the redo path. Servers before MongoDB 8.0 write this way, and the one-command batch
 * (mongo-one-command.ts) falls back to these steps for what its command did not run.
 */
export class TwoCommandWrites implements TwoCommandSteps {
  constructor(
    private readonly tasks: Collection<TaskDocument>,
    private readonly events: Collection<EventDocument>,
    /** Marks the events this instance wrote (diagnostics of orphans). */
    private readonly writer: string,
    /** Tests: die after this batch's events are written, before its heads. */
    private readonly killAsked: (batch: Write[]) => boolean,
  ) {}

  /** Events of the whole batch, then the heads; writes whose events met existing keys take the slow path. */
  async writeBatch(batch: Write[]): Promise<void> {
    const owners: Write[] = [];
    const inserts: AnyBulkWriteOperation<EventDocument>[] = [];
    for (const write of batch) {
      for (const event of write.events) {
        owners.push(write);
        inserts.push({ insertOne: { document: toEventDocument(write.taskId, event, this.writer, write.expireAt) } });
      }
    }
    const conflicted = new Set<Write>();
    const failed = new Map<Write, unknown>();
    if (inserts.length > 0) {
      try {
        await this.events.bulkWrite(inserts, { ordered: false });
      } catch (err) {
        if (!(err instanceof MongoBulkWriteError)) throw err;
        for (const error of writeErrorsOf(err)) {
          const owner = owners[error.index] as Write;
          if (error.code === DUPLICATE_KEY) conflicted.add(owner);
          else failed.set(owner, err);
        }
      }
    }
    if (this.killAsked(batch)) process.kill(process.pid, "SIGKILL");
    for (const [write, err] of failed) write.reject(err);
    const clean = batch.filter((w) => !conflicted.has(w) && !failed.has(w));
    await Promise.all([
      this.writeHeads(clean),
      ...[...conflicted].filter((w) => !failed.has(w)).map((w) => this.resolveConflict(w)),
    ]);
  }

  /** Events that met existing keys: the head moves first and carries them (redo, see the class comment). */
  resolveConflict(write: Write): Promise<void> {
    write.redo = true;
    return this.writeHeads([write]);
  }

  /** The redo events of a write whose head moved, copied into the log, then dropped from the head. */
  private async applyRedo(write: Write): Promise<void> {
    const docs = write.events.map((event) => toEventDocument(write.taskId, event, this.writer, write.expireAt));
    await this.events.bulkWrite(
      docs.map((doc) => ({
        replaceOne: { filter: { taskId: write.taskId, sequence: doc.sequence }, replacement: doc, upsert: true },
      })),
      { ordered: false },
    );
    // Unset by key: a later commit's redo entries (other sequences) stay.
    await this.tasks.updateOne(
      { _id: write.taskId },
      { $unset: Object.fromEntries(docs.map((doc) => [`redo.${redoKey(doc.sequence)}`, ""])) },
    );
  }

  /** Moves the heads (inserts for creates, version-filtered updates for commits) and settles every write. */
  async writeHeads(writes: Write[]): Promise<void> {
    if (writes.length === 0) return;
    const ops: AnyBulkWriteOperation<TaskDocument>[] = writes.map((w) =>
      w.create
        ? {
            insertOne: {
              document: {
                ...toTaskDocument(w.create, w.commitId),
                ...(w.redo ? { redo: redoOf(w, this.writer) } : {}),
              },
            },
          }
        : headUpdate(
            w.taskId,
            w.commit!.expectedVersion,
            w.commit!.changes,
            w.events.at(-1)?.sequence ?? w.commit!.expectedVersion,
            w.commitId,
            w.commit!.fence,
            w.redo ? Object.values(redoOf(w, this.writer)) : undefined,
          ),
    );
    const errors = new Map<Write, Error>();
    let matched: number;
    try {
      matched = (await this.tasks.bulkWrite(ops, { ordered: false })).matchedCount;
    } catch (err) {
      if (!(err instanceof MongoBulkWriteError)) {
        writes.forEach((w) => w.reject(err));
        return;
      }
      matched = err.result.matchedCount;
      for (const error of writeErrorsOf(err)) {
        const write = writes[error.index] as Write;
        errors.set(write, headError(write, { code: error.code, ...(error.err as object) }, err));
      }
    }
    const commits = writes.filter((w) => w.commit && !errors.has(w));
    if (matched < commits.length) {
      // An unordered bulk reports only how many updates matched: the commit id on each head tells which.
      const heads = await this.tasks
        .find({ _id: { $in: commits.map((w) => w.taskId) } }, { projection: { commitId: 1 } })
        .toArray();
      const current = new Map(heads.map((h) => [h._id, h.commitId]));
      for (const w of commits)
        if (current.get(w.taskId) !== w.commitId)
          errors.set(w, new StaleWriteError(w.taskId, w.commit!.expectedVersion));
    }
    await this.afterHeads(writes, errors);
    for (const w of writes) {
      const error = errors.get(w);
      if (error) w.reject(error);
      else w.resolve();
    }
  }

  /** A task that ended stamps its earlier events with its expiry; a refused create drops the events it wrote. */
  async afterHeads(writes: Write[], errors: Map<Write, Error>): Promise<void> {
    // The commit stands once its head moved: a failed copy leaves its events in the head, where readers find them.
    await Promise.all(
      writes.filter((w) => w.redo && !errors.has(w)).map((w) => this.applyRedo(w).catch(() => undefined)),
    );
    const cleanup: AnyBulkWriteOperation<EventDocument>[] = [];
    for (const w of writes) {
      const error = errors.get(w);
      if (w.create && error instanceof DuplicateIdempotencyKeyError)
        cleanup.push({ deleteMany: { filter: { taskId: w.taskId } } });
      if (w.commit && !error && w.expireAt)
        cleanup.push({
          updateMany: {
            filter: { taskId: w.taskId, expireAt: null },
            update: { $set: { expireAt: toDate(w.expireAt) } },
          },
        });
    }
    // The commits already stand: a failure here only delays the log's removal, it must not fail them.
    if (cleanup.length > 0) await this.events.bulkWrite(cleanup, { ordered: false }).catch(() => undefined);
  }
}

/** A conflicted write's events as the head's redo holds them. */
function redoOf(write: Write, writer: string): Record<string, EventDocument> {
  return Object.fromEntries(
    write.events.map((event) => [
      redoKey(event.sequence),
      toEventDocument(write.taskId, event, writer, write.expireAt),
    ]),
  );
}

function writeErrorsOf(err: MongoBulkWriteError): WriteError[] {
  return [err.writeErrors].flat();
}
