// Change streams: an `aggregate` whose first stage is `$changeStream` opens a cursor over the
// server's change log (inserts, replacements and updates of every collection), filtered by the
// collection and by the stages after it ($match, $project...). `getMore` on it waits
// (awaitData) until a new change arrives or `maxTimeMS` (default 1 s) passes, and every reply
// carries a `postBatchResumeToken`; `resumeAfter`/`startAfter` continue after a change's `_id`.
// Dropping the collection (or its database) sends `drop` (through the pipeline's stages) then
// `invalidate` (past them, as mongod does), and closes the cursor; only `startAfter` may continue
// after an invalidate.

import { BSON } from "mongodb";
import { bsonTypeName, cloneDocument, isDocument, type Doc } from "./bson-values.js";
import { compilePipeline } from "./aggregation.js";
import { invalidateEvent, parseToken, token, type Change, type ChangeLog } from "./change-log.js";
import { cursorBatchSize, optionalNonNegativeInteger, type CommandContext } from "./command-context.js";
import { newCursorId } from "./cursors.js";
import { ErrorCode, fail } from "./errors.js";

/** mongod's wait of an awaitData getMore without maxTimeMS. */
const DEFAULT_AWAIT_MS = 1000;

interface StreamCursor {
  readonly id: BSON.Long;
  readonly ns: string;
  readonly db: string;
  readonly coll: string;
  readonly run: (docs: Doc[]) => Doc[];
  position: number;
  /** Set once the stream has returned its invalidate: the cursor is then closed. */
  invalidated: boolean;
  /** Resumed with resumeAfter from the drop itself: the invalidate comes first. */
  pendingInvalidate?: Change;
}

export class ChangeStreamCursors {
  private readonly open = new Map<string, StreamCursor>();
  private closed = false;

  constructor(
    private readonly log: ChangeLog,
    private readonly enabled: boolean,
  ) {}

  owns(id: unknown): boolean {
    return id instanceof BSON.Long && this.open.has(id.toString());
  }

  /** aggregate {pipeline: [{$changeStream: {...}}, ...]} on `coll`: opens the cursor and answers the first batch. */
  aggregate(command: Doc, context: CommandContext, coll: string): Doc {
    if (!this.enabled) fail(40573, "The $changeStream stage is only supported on replica sets");
    const [first, ...rest] = command.pipeline as unknown[];
    const spec = isDocument(first) ? first.$changeStream : undefined;
    if (!isDocument(spec))
      fail(ErrorCode.TypeMismatch, `the $changeStream stage must be an object, not ${bsonTypeName(spec)}`);
    for (const stage of rest) {
      const name = isDocument(stage) ? Object.keys(stage)[0] : undefined;
      if (name === "$changeStream")
        fail(ErrorCode.BadValue, "$changeStream is only valid as the first stage in a pipeline");
    }
    if (spec.resumeAfter !== undefined && spec.startAfter !== undefined)
      fail(ErrorCode.BadValue, "Only one type of resume option is allowed, but multiple were found");
    const resume = spec.resumeAfter ?? spec.startAfter;
    const resumeField = spec.resumeAfter !== undefined ? "resumeAfter" : "startAfter";
    const from =
      resume === undefined ? { position: this.log.position, kind: "event" } : parseToken(resume, resumeField);
    if (from.kind === "invalidate" && resumeField === "resumeAfter") {
      fail(
        ErrorCode.InvalidResumeToken,
        "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.",
      );
    }
    this.log.after(from.position); // refuses a resume point the log no longer holds
    const cursor: StreamCursor = {
      id: newCursorId(),
      ns: `${context.db}.${coll}`,
      db: context.db,
      coll,
      run: compilePipeline(rest),
      position: from.position,
      invalidated: false,
    };
    // Resuming from the drop event itself (not from past its invalidate) meets the invalidate first.
    const resumedAt = resume === undefined || from.kind !== "event" ? undefined : this.log.at(from.position);
    if (resumedAt && this.invalidates(cursor, resumedAt)) cursor.pendingInvalidate = resumedAt;
    this.open.set(cursor.id.toString(), cursor);
    const batch = this.take(cursor, cursorBatchSize(command, "aggregate"));
    if (cursor.invalidated) this.open.delete(cursor.id.toString());
    return {
      cursor: {
        firstBatch: batch,
        postBatchResumeToken: this.resumeToken(cursor),
        id: cursor.invalidated ? BSON.Long.ZERO : cursor.id,
        ns: cursor.ns,
      },
      ok: 1,
    };
  }

  private resumeToken(cursor: StreamCursor): Doc {
    if (cursor.invalidated) return token(cursor.position, "invalidate");
    const at = cursor.pendingInvalidate ? undefined : this.log.at(cursor.position);
    return token(cursor.position, at && this.invalidates(cursor, at) ? "pastInvalidate" : "event");
  }

  /** Whether `change` ends a stream on the cursor's collection. */
  private invalidates(cursor: StreamCursor, change: Change): boolean {
    if (change.db !== cursor.db) return false;
    return (change.operationType === "drop" && change.coll === cursor.coll) || change.operationType === "dropDatabase";
  }

  /** getMore: the next changes, waiting up to maxTimeMS for one when there are none yet. */
  async getMore(command: Doc, context: CommandContext): Promise<Doc> {
    const id = command.getMore as BSON.Long;
    const cursor = this.open.get(id.toString()) as StreamCursor;
    const ns = `${context.db}.${String(command.collection)}`;
    if (cursor.ns !== ns)
      fail(
        ErrorCode.Unauthorized,
        `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`,
      );
    const batchSize = optionalNonNegativeInteger(command, "getMore", "batchSize");
    const waitMs = optionalNonNegativeInteger(command, "getMore", "maxTimeMS") ?? DEFAULT_AWAIT_MS;
    const deadline = Date.now() + waitMs;
    let batch = this.take(cursor, batchSize);
    while (batch.length === 0 && !this.closed && this.open.has(id.toString()) && Date.now() < deadline) {
      await this.log.waitForChange(deadline - Date.now());
      batch = this.take(cursor, batchSize);
    }
    if (!this.open.has(id.toString())) fail(ErrorCode.CursorNotFound, `cursor id ${id.toString()} not found`);
    if (cursor.invalidated) this.open.delete(id.toString());
    return {
      cursor: {
        nextBatch: batch,
        postBatchResumeToken: this.resumeToken(cursor),
        id: cursor.invalidated ? BSON.Long.ZERO : cursor.id,
        ns: cursor.ns,
      },
      ok: 1,
    };
  }

  kill(id: BSON.Long): boolean {
    const killed = this.open.delete(id.toString());
    // A getMore waiting on this cursor answers now (CursorNotFound), as mongod interrupts it.
    if (killed) this.log.wakeAll();
    return killed;
  }

  clear(): void {
    this.closed = true;
    this.open.clear();
    this.log.wakeAll();
  }

  /** Up to `batchSize` matching changes after the cursor's position; the position passes what was examined. */
  private take(cursor: StreamCursor, batchSize: number | undefined): Doc[] {
    const batch: Doc[] = [];
    const limit = batchSize === undefined || batchSize === 0 ? Number.POSITIVE_INFINITY : batchSize;
    if (cursor.invalidated) return batch;
    if (cursor.pendingInvalidate) {
      batch.push(invalidateEvent(cursor.pendingInvalidate.position, cursor.pendingInvalidate.event.clusterTime));
      cursor.invalidated = true;
      return batch;
    }
    for (const change of this.log.after(cursor.position)) {
      if (batch.length >= limit) break;
      if (this.invalidates(cursor, change)) {
        // A dropDatabase after the collection's own drop already ended the stream; otherwise it ends it now.
        if (change.operationType === "drop") batch.push(...cursor.run([cloneDocument(change.event)]));
        cursor.position = change.position;
        if (batch.length >= limit) {
          cursor.pendingInvalidate = change;
          break;
        }
        batch.push(invalidateEvent(change.position, change.event.clusterTime));
        cursor.invalidated = true;
        break;
      }
      if (change.db === cursor.db && change.coll === cursor.coll)
        batch.push(...cursor.run([cloneDocument(change.event)]));
      cursor.position = change.position;
    }
    return batch;
  }
}
