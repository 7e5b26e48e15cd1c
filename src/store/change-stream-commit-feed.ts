import { MongoExpiredSessionError, MongoNotConnectedError, MongoServerError, MongoTopologyClosedError, type ChangeStream, type Db, type Document, type ResumeToken } from "mongodb";
import { KeyedListeners } from "../domain/keyed-listeners.js";
import { PollingCommitFeed, type CommitFeed, type CommitFeedSettings, type CommitNotice, type CommitNoticeListener } from "./commit-feed.js";

const EVENTS = "task_events";
/** Inserted events, and the replacement of an orphan by the commit that reuses its sequence. */
const PIPELINE: Document[] = [
  { $match: { operationType: { $in: ["insert", "replace"] } } },
  { $project: { _id: 1, operationType: 1, "fullDocument.taskId": 1, "fullDocument.sequence": 1 } },
];
const RESTART_DELAY_MS = 200;

interface EventChange {
  _id: ResumeToken;
  operationType?: string;
  fullDocument?: { taskId?: unknown; sequence?: unknown };
}

/**
 * One change stream per instance on `task_events`, fanned out to the followers by task id. It keeps the
 * last resume token, so a watcher restarted after an error (the driver already resumes across elections
 * and dropped connections) continues after the last change it handed over: nothing is missed.
 * A drop of the collection (or its database) ends the stream with an `invalidate`, which no `$match`
 * filters; MongoDB refuses `resumeAfter` an invalidate, so the next stream starts with `startAfter` it.
 */
export class ChangeStreamCommitFeed implements CommitFeed {
  readonly mode = "change-stream" as const;
  private readonly fanout = new KeyedListeners<CommitNotice>();
  private stream: ChangeStream<Document, EventChange> | undefined;
  private closed = false;
  /** The token is an invalidate's (or a later one no change has followed yet): continue with `startAfter`. */
  private afterInvalidate = false;
  private readonly running: Promise<void>;

  constructor(
    private readonly db: Db,
    private resumeToken: ResumeToken,
    private readonly onError: (err: unknown) => void,
  ) {
    this.running = this.run();
  }

  onTask(taskId: string, listener: CommitNoticeListener): () => void {
    return this.fanout.add(taskId, listener);
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const from = this.afterInvalidate ? { startAfter: this.resumeToken } : { resumeAfter: this.resumeToken };
      const stream = this.db.collection(EVENTS).watch<Document, EventChange>(PIPELINE, { ...from, maxAwaitTimeMS: 1000 });
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
          const { taskId, sequence } = change.fullDocument ?? {};
          if (typeof taskId === "string" && typeof sequence === "number") for (const listener of this.fanout.of(taskId)) listener({ taskId, sequence });
        }
      } catch (err) {
        // The store's client was closed under the feed: nothing left to watch.
        if (err instanceof MongoTopologyClosedError || err instanceof MongoNotConnectedError || err instanceof MongoExpiredSessionError) this.closed = true;
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
 */
export async function openMongoCommitFeed(db: Db, settings: CommitFeedSettings, onError: (err: unknown) => void): Promise<CommitFeed> {
  if (settings.mode === "poll") return new PollingCommitFeed(settings.pollMs);
  let token: ResumeToken;
  try {
    // Opening (and closing) one cursor tells whether change streams work, and gives the point to start from.
    const reply = await db.command({ aggregate: EVENTS, pipeline: [{ $changeStream: {} }], cursor: {} });
    const cursor = reply["cursor"] as { id: unknown; postBatchResumeToken?: ResumeToken };
    token = cursor.postBatchResumeToken;
    if (cursor.id && String(cursor.id) !== "0") await db.command({ killCursors: EVENTS, cursors: [cursor.id] }).catch(() => undefined);
    if (token === undefined) throw new MongoServerError({ message: "the server returned no resume token for $changeStream" });
  } catch (err) {
    if (settings.mode === "auto" && err instanceof MongoServerError) return new PollingCommitFeed(settings.pollMs);
    throw err;
  }
  return new ChangeStreamCommitFeed(db, token, onError);
}
