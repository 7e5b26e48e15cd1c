// Change streams on the wire-protocol test server, through the real driver: `$changeStream`
// aggregate, awaitData getMore, resume tokens. Runs against a server started here and against the
// run's backend (with MONGODB_URI pointing at a replica set, that shows mongod behaves the same).
import type { Long } from "mongodb";
import {
  MongoClient,
  type ChangeStreamDocument,
  type ChangeStreamInsertDocument,
  type Db,
  type Document,
} from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { headChangesPipeline } from "../../src/store/change-stream-commit-feed.js";
import { testDbName } from "./mongo.js";
import { startMongoWireServer, type MongoWireServer } from "./mongo-wire-server/server.js";

let local: MongoWireServer;
beforeAll(async () => {
  local = await startMongoWireServer({ port: 0 });
});
afterAll(async () => {
  await local?.close();
});

const backends: [string, () => string][] = [
  ["a wire-protocol test server started here", () => local.uri],
  ["the run's MongoDB backend", () => inject("mongoUri")],
];

describe.each(backends)("change streams on %s", (_name, uri) => {
  let client: MongoClient;
  let db: Db;
  beforeAll(async () => {
    client = await MongoClient.connect(uri());
    db = client.db(testDbName("changes"));
  });
  afterAll(async () => {
    await db?.dropDatabase();
    await client?.close();
  });

  it("sees an insert, with its resume token and the full document", async () => {
    const coll = db.collection("seen");
    const stream = coll.watch([], { maxAwaitTimeMS: 50 });
    try {
      expect(await stream.tryNext()).toBeNull(); // opened: nothing happened since
      const next = stream.next();
      await coll.insertOne({ _id: "a" as unknown as Document["_id"], n: 1 });
      const change = (await next) as ChangeStreamInsertDocument<Document>;
      expect(change.operationType).toBe("insert");
      expect(change.ns).toEqual({ db: db.databaseName, coll: "seen" });
      expect(change.documentKey).toEqual({ _id: "a" });
      expect(change.fullDocument).toEqual({ _id: "a", n: 1 });
      expect(change._id).toBeTypeOf("object");
    } finally {
      await stream.close();
    }
  }, 20_000);

  it("resumes after a token: the changes after it, none before, in order", async () => {
    const coll = db.collection("resumed");
    const first = coll.watch([], { maxAwaitTimeMS: 50 });
    expect(await first.tryNext()).toBeNull();
    await coll.insertMany([{ n: 1 }, { n: 2 }]);
    const one = await first.next();
    await first.close();
    await coll.insertOne({ n: 3 });
    const resumed = coll.watch([], { resumeAfter: one._id, maxAwaitTimeMS: 50 });
    try {
      const seen = [await resumed.next(), await resumed.next()] as (ChangeStreamDocument<Document> & {
        fullDocument: Document;
      })[];
      expect(seen.map((c) => c.fullDocument["n"])).toEqual([2, 3]);
    } finally {
      await resumed.close();
    }
  }, 20_000);

  it("filters with $match after the stage, names updates and replacements, and ignores other collections", async () => {
    const coll = db.collection("filtered");
    await coll.insertOne({ _id: "x" as unknown as Document["_id"], v: 0 });
    const stream = coll.watch([{ $match: { operationType: { $in: ["update", "replace"] } } }], { maxAwaitTimeMS: 50 });
    try {
      expect(await stream.tryNext()).toBeNull();
      await coll.insertOne({ v: 1 });
      await db
        .collection("elsewhere")
        .updateOne({ _id: "x" as unknown as Document["_id"] }, { $set: { v: 9 } }, { upsert: true });
      await coll.updateOne({ _id: "x" as unknown as Document["_id"] }, { $set: { v: 2 } });
      await coll.replaceOne({ _id: "x" as unknown as Document["_id"] }, { v: 3 });
      const update = (await stream.next()) as Document;
      const replace = (await stream.next()) as Document;
      expect(update["operationType"]).toBe("update");
      expect(update["updateDescription"]["updatedFields"]).toEqual({ v: 2 });
      expect(replace["operationType"]).toBe("replace");
      expect(replace["fullDocument"]).toEqual({ _id: "x", v: 3 });
    } finally {
      await stream.close();
    }
  }, 20_000);

  it("reports an update's changed top-level fields as top-level keys of updatedFields, and leaves out a value set again unchanged", async () => {
    const coll = db.collection<{ _id: string; [key: string]: unknown }>("described");
    await coll.insertOne({ _id: "h", version: 1, status: "running", lease: null });
    const stream = coll.watch([{ $match: { operationType: "update" } }], { maxAwaitTimeMS: 50 });
    try {
      expect(await stream.tryNext()).toBeNull();
      await coll.updateOne({ _id: "h" }, { $set: { version: 1, status: "working" }, $inc: { epoch: 1 } } as Document);
      await coll.updateOne({ _id: "h" }, { $set: { version: 2, status: "working" } });
      const unchangedVersion = (await stream.next()) as Document;
      const moved = (await stream.next()) as Document;
      expect(unchangedVersion["updateDescription"]["updatedFields"]).toEqual({ status: "working", epoch: 1 });
      expect(moved["updateDescription"]["updatedFields"]).toEqual({ version: 2 });
    } finally {
      await stream.close();
    }
  }, 20_000);

  it("runs the commit feed's pipeline on the server: head moves of other writers only, projected to the task id and version", async () => {
    const coll = db.collection<{ _id: string; [key: string]: unknown }>("heads");
    const writer = "0b0e3a52-5c1e-4c0f-9a57-2f4f7c1d9e11";
    const stream = coll.watch(headChangesPipeline(writer), { maxAwaitTimeMS: 50 });
    try {
      expect(await stream.tryNext()).toBeNull();
      await coll.insertOne({ _id: "own", version: 0, commitId: `${writer}:1` });
      await coll.insertOne({ _id: "other", version: 0, commitId: "w2:1", tenant: "t" });
      await coll.updateOne({ _id: "other" }, { $set: { version: 1, commitId: `${writer}:2` } });
      await coll.updateOne({ _id: "other" }, {
        $set: { leaseOwner: "a", leaseExpiresAt: new Date() },
        $inc: { leaseEpoch: 1 },
      } as Document);
      await coll.updateOne({ _id: "other" }, { $set: { "redo.s1": { sequence: 1 } } });
      await coll.updateOne({ _id: "other" }, { $unset: { "redo.s1": "" } });
      await coll.updateOne({ _id: "other" }, { $set: { version: 2, commitId: "w2:2", status: "running" } });
      await coll.updateOne({ _id: "other" }, { $set: { version: 3, commitId: "old-uuid" } });
      const changes = [
        (await stream.next()) as Document,
        (await stream.next()) as Document,
        (await stream.next()) as Document,
      ];
      expect(await stream.tryNext()).toBeNull();
      expect(changes.map(({ _id, ...rest }) => [typeof _id, rest])).toEqual([
        ["object", { operationType: "insert", documentKey: { _id: "other" }, fullDocument: { version: 0 } }],
        [
          "object",
          {
            operationType: "update",
            documentKey: { _id: "other" },
            updateDescription: { updatedFields: { version: 2 } },
          },
        ],
        [
          "object",
          {
            operationType: "update",
            documentKey: { _id: "other" },
            updateDescription: { updatedFields: { version: 3 } },
          },
        ],
      ]);
    } finally {
      await stream.close();
    }
  }, 20_000);

  it("an awaitData getMore waits for the next insert and answers with it", async () => {
    const coll = db.collection("awaited");
    const opened = await db.command({ aggregate: "awaited", pipeline: [{ $changeStream: {} }], cursor: {} });
    const cursor = opened["cursor"] as { id: Long; firstBatch: Document[]; postBatchResumeToken: Document };
    expect(cursor.firstBatch).toEqual([]);
    expect(cursor.postBatchResumeToken).toBeTypeOf("object");
    // Far longer than the test's own timeout: only the insert can end this wait in time.
    const waiting = db.command({ getMore: cursor.id, collection: "awaited", maxTimeMS: 600_000 });
    await new Promise((r) => setTimeout(r, 50));
    await coll.insertOne({ n: 7 });
    const more = (await waiting)["cursor"] as { id: Long; nextBatch: Document[]; postBatchResumeToken: Document };
    expect(more.nextBatch.map((c) => c["fullDocument"]["n"])).toEqual([7]);
    expect(more.postBatchResumeToken).toEqual(more.nextBatch[0]!["_id"]);
    expect(more.id.toString()).toBe(cursor.id.toString());
    // Nothing new: an empty batch once maxTimeMS passes, the cursor still open.
    const idle = (await db.command({ getMore: cursor.id, collection: "awaited", maxTimeMS: 20 }))["cursor"] as {
      id: Long;
      nextBatch: Document[];
    };
    expect(idle.nextBatch).toEqual([]);
    expect(idle.id.toString()).toBe(cursor.id.toString());
    await db.command({ killCursors: "awaited", cursors: [cursor.id] });
  }, 10_000);

  it("a dropped collection ends its streams: drop, then invalidate (which no $match filters), then the cursor is closed", async () => {
    const coll = db.collection("dropped");
    await coll.insertOne({ n: 0 });
    const all = coll.watch([], { maxAwaitTimeMS: 50 });
    const insertsOnly = coll.watch([{ $match: { operationType: "insert" } }], { maxAwaitTimeMS: 50 });
    try {
      expect(await all.tryNext()).toBeNull();
      expect(await insertsOnly.tryNext()).toBeNull();
      await coll.insertOne({ n: 1 });
      await coll.drop();
      const seen = [await all.next(), await all.next(), await all.next()];
      expect(seen.map((c) => c.operationType)).toEqual(["insert", "drop", "invalidate"]);
      expect(seen[1]).toMatchObject({ ns: { db: db.databaseName, coll: "dropped" } });
      expect(Object.keys(seen[2]!).sort()).toEqual(["_id", "clusterTime", "operationType", "wallTime"].sort());
      const filtered = [await insertsOnly.next(), await insertsOnly.next()];
      expect(filtered.map((c) => c.operationType)).toEqual(["insert", "invalidate"]);
      expect(filtered[1]!._id).toEqual(seen[2]!._id);
      // The server closed the cursor with the invalidate: the stream has nothing more.
      await expect(all.next()).rejects.toThrow();

      // Resuming after the drop itself meets the invalidate again.
      const afterDrop = coll.watch([], { resumeAfter: seen[1]!._id, maxAwaitTimeMS: 50 });
      try {
        expect((await afterDrop.next()).operationType).toBe("invalidate");
      } finally {
        await afterDrop.close();
      }
    } finally {
      await all.close();
      await insertsOnly.close();
    }
  }, 20_000);

  it("after an invalidate, resumeAfter its token is refused (InvalidResumeToken) and startAfter continues with the changes after it", async () => {
    const coll = db.collection("restarted");
    await coll.insertOne({ n: 0 });
    const stream = coll.watch([], { maxAwaitTimeMS: 50 });
    let invalidate: Document;
    try {
      expect(await stream.tryNext()).toBeNull();
      await coll.drop();
      expect((await stream.next()).operationType).toBe("drop");
      invalidate = await stream.next();
      expect(invalidate["operationType"]).toBe("invalidate");
    } finally {
      await stream.close();
    }
    await coll.insertOne({ n: 1 }); // recreates the collection

    const refused = coll.watch([], { resumeAfter: invalidate["_id"], maxAwaitTimeMS: 50 });
    try {
      const error = await refused.tryNext().then(
        () => undefined,
        (e: unknown) => e as { code?: number },
      );
      expect(error?.code).toBe(260);
    } finally {
      await refused.close();
    }

    const restarted = coll.watch([], { startAfter: invalidate["_id"], maxAwaitTimeMS: 50 });
    try {
      const first = (await restarted.next()) as ChangeStreamInsertDocument<Document>;
      expect(first.operationType).toBe("insert");
      expect(first.fullDocument["n"]).toBe(1);
      await coll.insertOne({ n: 2 });
      expect(((await restarted.next()) as ChangeStreamInsertDocument<Document>).fullDocument["n"]).toBe(2);
    } finally {
      await restarted.close();
    }
  }, 20_000);

  it("dropDatabase ends the streams on its collections: drop, then invalidate", async () => {
    const other = client.db(testDbName("dropped_db"));
    const coll = other.collection("inside");
    await coll.insertOne({ n: 0 });
    const stream = coll.watch([], { maxAwaitTimeMS: 50 });
    try {
      expect(await stream.tryNext()).toBeNull();
      await other.dropDatabase();
      const seen = [await stream.next(), await stream.next()];
      expect(seen.map((c) => c.operationType)).toEqual(["drop", "invalidate"]);
    } finally {
      await stream.close();
    }
  }, 20_000);
});
