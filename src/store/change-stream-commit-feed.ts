import {
  MongoExpiredSessionError,
  MongoNotConnectedError,
  MongoServerError,
  MongoTopologyClosedError,
  type ChangeStream,
  type Db,
  type Document,
  type ResumeToken,
} from "mongodb";
import { KeyedListeners } from "../domain/keyed-listeners.js";
import {
  PollingCommitFeed,
  type CommitFeed,
  type CommitFeedSettings,
  type CommitNotice,
  type CommitNoticeListener,
} from "./commit-feed.js";

/** The heads: one change per commit (the events of a commit are not watched; the head move says it stands). */
const HEADS = "tasks";
const RESTART_DELAY_MS = 200;

/**
 * The changes of `tasks` that are commits, projected to what fan-out needs, filtered on the server:
 *   - a head inserted (a create), or replaced (no writer of ours replaces a head; a pipeline update or an
 *     operator's replaceOne is logged as one, and reads as a commit at the version it carries);
 *   - a head update that moved `version`. mongod reports a `$set` of a top-level field as a top-level key of
 *     `updateDescription.updatedFields` and leaves out a field the update did not change, so lease
 *     acquisitions, renewals and releases, timer claims, the redo cleanup (`$unset redo.*`) and expiry stamps
 *     never reach the client; a commit without events (same version) neither: there is nothing new to read.
 *   - not this instance's own commit (`writer`): every head write sets `commitId` to `<writer>:<uuid>`, a new
 *     value each time, so it is always among an update's fields; the hook already handed this instance's
 *     commits over. Rolling upgrade: a writer of the version before this one sets a bare uuid, or none on a
 *     create: no writer prefix, so its commits pass and are heard; its own feed watches `task_events`,
 *     which writers of this version still fill, so it hears theirs.
 * The `_id` (resume token) must stay; documentKey carries the task id, fullDocument / updatedFields the version.
 */
export function headChangesPipeline(writer?: string): Document[] {
  const commits: Document = {
    $or: [
      { operationType: { $in: ["insert", "replace"] } },
      { operationType: "update", "updateDescription.updatedFields.version": { $exists: true } },
    ],
  };
  // A UUID holds only hex digits and dashes: nothing to escape in the anchored prefix.
  const own = writer === undefined ? undefined : { $not: new RegExp(`^${writer}:`) };
  const match = own
    ? { $and: [commits, { "fullDocument.commitId": own }, { "updateDescription.updatedFields.commitId": own }] }
    : commits;
  return [
    { $match: match },
    {
      $project: {
        _id: 1,
        operationType: 1,
        "documentKey._id": 1,
        "fullDocument.version": 1,
        "updateDescription.updatedFields.version": 1,
      },
    },
  ];
}

interface HeadChange {
  _id: ResumeToken;
  operationType?: string;
  documentKey?: { _id?: unknown };
  fullDocument?: { version?: unknown };
  updateDescription?: { updatedFields?: { version?: unknown } };
}

/**
 * One change stream per instance on the heads (`tasks`): one change per commit of another instance, fanned out
 * to the followers by task id with the head's version as the notice's sequence (a head moves only when its
 * commit stands, so every event up to it is readable). It keeps the
 * last resume token, so a watcher restarted after an error (the driver already resumes across elections
 * and dropped connections) continues after the last change it handed over: nothing is missed.
 * A drop of the collection (or its database) ends the stream with an `invalidate`, which no `$match`
 * filters; MongoDB refuses `resumeAfter` an invalidate, so the next stream starts with `startAfter` it.
 */
export class ChangeStreamCommitFeed implements CommitFeed {
  readonly mode = "change-stream" as const;
  private readonly fanout = new KeyedListeners<CommitNotice>();
  private stream: ChangeStream<Document, HeadChange> | undefined;
  private closed = false;
  /** The token is an invalidate's (or a later one no change has followed yet): continue with `startAfter`. */
  private afterInvalidate = false;
  private readonly running: Promise<void>;
  private readonly pipeline: Document[];

  /** `writer`: the store whose own commits are left out on the server (unset: every commit is heard). */
  constructor(
    private readonly db: Db,
    private resumeToken: ResumeToken,
    private readonly onError: (err: unknown) => void,
    writer?: string,
  ) {
    this.pipeline = headChangesPipeline(writer);
    this.running = this.run();
  }

  onTask(taskId: string, listener: CommitNoticeListener): () => void {
    return this.fanout.add(taskId, listener);
  }

  announce(notice: CommitNotice): void {
    for (const listener of this.fanout.of(notice.taskId)) listener(notice);
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const from = this.afterInvalidate ? { startAfter: this.resumeToken } : { resumeAfter: this.resumeToken };
      const stream = this.db
        .collection(HEADS)
        .watch<Document, HeadChange>(this.pipeline, { ...from, maxAwaitTimeMS: 1000 });
      this.stream = stream;
      let invalidated = false;
      try {
        for await (const change of stream) {
          this.resumeToken = change._id;
          this.afterInvalidate = change.operationType === "invalidate";
          if (this.afterInvalidate) {
            invalidated = true; // the server closed the cursor: start the next one after the invalidate
            break;
          }
          const taskId = change.documentKey?._id;
          const sequence = change.fullDocument?.version ?? change.updateDescription?.updatedFields?.version;
          if (typeof taskId === "string" && typeof sequence === "number") this.announce({ taskId, sequence });
        }
      } catch (err) {
        // The store's client was closed under the feed: nothing left to watch.
        if (
          err instanceof MongoTopologyClosedError ||
          err instanceof MongoNotConnectedError ||
          err instanceof MongoExpiredSessionError
        )
          this.closed = true;
        if (!this.closed) {
          this.onError(err);
          await new Promise((r) => setTimeout(r, RESTART_DELAY_MS).unref());
        }
      } finally {
        // After an invalidate the token to start after is that invalidate's, already kept. Otherwise the
        // stream's latest token; until a stream started after an invalidate has handed over a change,
        // it still continues with startAfter (as the driver's own resume does), which accepts any token.
        if (!invalidated && stream.resumeToken) this.resumeToken = stream.resumeToken;
        await stream.close().catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stream?.close().catch(() => undefined);
    await this.running;
  }
}

/**
 * The feed for a MongoDB store: a change stream when the server opens one (a replica set, even of one
 * node); with `mode: "auto"` a server that refuses `$changeStream` (a standalone mongod) gets polling.
 * `writer`: the store's writer id, whose own commits the stream leaves out.
 */
export async function openMongoCommitFeed(
  db: Db,
  settings: CommitFeedSettings,
  onError: (err: unknown) => void,
  writer?: string,
): Promise<CommitFeed> {
  if (settings.mode === "poll") return new PollingCommitFeed(settings.pollMs);
  let token: ResumeToken;
  try {
    // Opening (and closing) one cursor tells whether change streams work, and gives the point to start from.
    const reply = await db.command({ aggregate: HEADS, pipeline: [{ $changeStream: {} }], cursor: {} });
    const cursor = reply["cursor"] as { id: unknown; postBatchResumeToken?: ResumeToken };
    token = cursor.postBatchResumeToken;
    if (cursor.id && String(cursor.id) !== "0")
      await db.command({ killCursors: HEADS, cursors: [cursor.id] }).catch(() => undefined);
    if (token === undefined)
      throw new MongoServerError({ message: "the server returned no resume token for $changeStream" });
  } catch (err) {
    if (settings.mode === "auto" && err instanceof MongoServerError) return new PollingCommitFeed(settings.pollMs);
    throw err;
  }
  return new ChangeStreamCommitFeed(db, token, onError, writer);
}
