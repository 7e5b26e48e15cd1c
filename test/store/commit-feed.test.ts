// The commit feed of the MongoDB store: which kind a server gets, and what a change stream on the task heads
// hands to the followers of a task (through the real driver, on the wire-protocol test server or MONGODB_URI).
import { randomUUID } from "node:crypto";
import { MongoClient, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ChangeStreamCommitFeed, openMongoCommitFeed } from "../../src/store/change-stream-commit-feed.js";
import type { CommitNotice } from "../../src/store/commit-feed.js";
import { testDbName } from "../support/mongo.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";

const noError = (err: unknown) => {
  throw err;
};

describe("the MongoDB commit feed", () => {
  let standalone: MongoWireServer;
  let client: MongoClient;
  let standaloneClient: MongoClient;
  const dbName = testDbName("feed");

  beforeAll(async () => {
    standalone = await startMongoWireServer({ port: 0, changeStreams: false });
    client = await MongoClient.connect(inject("mongoUri"));
    standaloneClient = await MongoClient.connect(standalone.uri);
  });
  afterAll(async () => {
    await client?.db(dbName).dropDatabase();
    await Promise.all([client?.close(), standaloneClient?.close()]);
    await standalone?.close();
  });

  it("uses a change stream where the server opens one, and polling where it refuses $changeStream", async () => {
    const streamed = await openMongoCommitFeed(client.db(dbName), { mode: "auto", pollMs: 50 }, noError);
    const polled = await openMongoCommitFeed(standaloneClient.db(dbName), { mode: "auto", pollMs: 50 }, noError);
    expect(streamed.mode).toBe("change-stream");
    expect(polled.mode).toBe("poll");
    await Promise.all([streamed.close(), polled.close()]);
  });

  it("refuses to start when a change stream is required and the server has none", async () => {
    await expect(
      openMongoCommitFeed(standaloneClient.db(dbName), { mode: "change-stream", pollMs: 50 }, noError),
    ).rejects.toThrow(/only supported on replica sets/);
  });

  it("hands each task's followers the version of every head move (insert, replace, an update of `version`), in order, and nothing of other tasks", async () => {
    const feed = await openMongoCommitFeed(client.db(dbName), { mode: "change-stream", pollMs: 50 }, noError);
    const seen: CommitNotice[] = [];
    const done = new Promise<void>((resolve) => {
      feed.onTask("t1", (notice) => {
        seen.push(notice);
        if (notice.sequence === 4) resolve();
      });
    });
    const heads = client.db(dbName).collection<{ _id: string; version: number }>("tasks");
    await heads.insertOne({ _id: "t1", version: 0 });
    await heads.insertOne({ _id: "t2", version: 0 });
    await heads.updateOne({ _id: "t2" }, { $set: { version: 1 } });
    await heads.updateOne({ _id: "t1" }, { $set: { version: 2, status: "running" } });
    // Head writes that do not move the version (a lease, a timer claim, a redo cleanup, the same version set again): not sent.
    await heads.updateOne(
      { _id: "t1" },
      { $set: { leaseOwner: "a", leaseExpiresAt: new Date() }, $inc: { leaseEpoch: 1 } },
    );
    await heads.updateOne({ _id: "t1" }, { $set: { timerDueAt: new Date() } });
    await heads.updateOne({ _id: "t1" }, { $unset: { "redo.s2": "" } });
    await heads.updateOne({ _id: "t1" }, { $set: { version: 2, status: "working" } });
    await heads.replaceOne({ _id: "t1" }, { version: 3 });
    await heads.updateOne({ _id: "t1" }, { $set: { version: 4 } });
    await done;
    expect(seen).toEqual([0, 2, 3, 4].map((sequence) => ({ taskId: "t1", sequence })));
    await feed.close();
  });

  it("leaves out on the server the commits of its own writer (commitId `<writer>:…`), and hears every other", async () => {
    const db = client.db(dbName);
    const writer = randomUUID();
    const feed = await openMongoCommitFeed(db, { mode: "change-stream", pollMs: 50 }, noError, writer);
    const seen: number[] = [];
    const done = new Promise<void>((resolve) => {
      feed.onTask("t5", ({ sequence }) => {
        seen.push(sequence ?? -1);
        if (sequence === 5) resolve();
      });
    });
    const heads = db.collection<{ _id: string; version: number; commitId?: string }>("tasks");
    await heads.insertOne({ _id: "t5", version: 0, commitId: `${writer}:${randomUUID()}` });
    await heads.updateOne({ _id: "t5" }, { $set: { version: 1, commitId: `${randomUUID()}:${randomUUID()}` } });
    await heads.updateOne({ _id: "t5" }, { $set: { version: 2, commitId: `${writer}:${randomUUID()}` } });
    // A writer of the version before (a rolling upgrade): a bare uuid, no writer prefix.
    await heads.updateOne({ _id: "t5" }, { $set: { version: 3, commitId: randomUUID() } });
    // The prefix is anchored: the writer id elsewhere in the value is someone else's.
    await heads.updateOne({ _id: "t5" }, { $set: { version: 4, commitId: `x${writer}:${randomUUID()}` } });
    await heads.replaceOne({ _id: "t5" }, { version: 5 });
    await done;
    expect(seen).toEqual([1, 3, 4, 5]);
    await feed.close();
  });

  it("a watcher (re)started from a resume token hands over every change after it, none before", async () => {
    const db = client.db(dbName);
    const heads = db.collection<{ _id: string; version: number }>("tasks");
    await heads.insertOne({ _id: "t4", version: 0 });
    const opened = await db.command({ aggregate: "tasks", pipeline: [{ $changeStream: {} }], cursor: {} });
    const cursor = opened["cursor"] as { id: unknown; postBatchResumeToken: Document };
    await db.command({ killCursors: "tasks", cursors: [cursor.id] });
    // Committed while no watcher runs (what a restarting watcher's gap looks like).
    for (const version of [1, 2]) await heads.updateOne({ _id: "t4" }, { $set: { version } });
    const feed = new ChangeStreamCommitFeed(db, cursor.postBatchResumeToken, noError);
    const seen: number[] = [];
    await new Promise<void>((resolve) => {
      feed.onTask("t4", ({ sequence }) => {
        seen.push(sequence ?? -1);
        if (sequence === 3) resolve();
      });
      void heads.updateOne({ _id: "t4" }, { $set: { version: 3 } });
    });
    expect(seen).toEqual([1, 2, 3]);
    await feed.close();
  });

  it("a polling feed wakes the followers of a task while they are open, and stops when the last leaves", async () => {
    const feed = await openMongoCommitFeed(client.db(dbName), { mode: "poll", pollMs: 10 }, noError);
    let wakes = 0;
    await new Promise<void>((resolve) => {
      const leave = feed.onTask("t3", (notice) => {
        expect(notice).toEqual({ taskId: "t3" });
        if (++wakes === 3) {
          leave();
          resolve();
        }
      });
    });
    const after = wakes;
    await new Promise((r) => setTimeout(r, 50));
    expect(wakes).toBe(after);
    await feed.close();
  });
});

describe("the change stream feed when its client goes away", () => {
  it("stops watching (no restart loop) when the store's client is closed under it", async () => {
    const client = await MongoClient.connect(inject("mongoUri"));
    const errors: unknown[] = [];
    const feed = await openMongoCommitFeed(
      client.db(testDbName("closed")),
      { mode: "change-stream", pollMs: 50 },
      (err) => errors.push(err),
    );
    await client.close();
    await new Promise((r) => setTimeout(r, 500));
    // The loop ended on its own: the feed's close does not reopen anything, and the client stays closed.
    await feed.close();
    await expect(client.db("admin").command({ ping: 1 }, { timeoutMS: 200 })).rejects.toThrow();
    expect(errors).toEqual([]);
  });
});
