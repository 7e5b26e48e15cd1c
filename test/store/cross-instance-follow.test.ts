// A follower on one instance, the writer on another (two clients, one database): what the commit feed
// tells the follower is read through the store, so an event the head does not cover (an orphan of a
// commit that died between its two writes) never reaches it, and the commit that replaces it does.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { TaskObserver } from "../../src/engine/task-observer.js";
import { TransitionHook } from "../../src/engine/transition-hook.js";
import { CommitBus } from "../../src/store/commit-bus.js";
import { createLogger } from "../../src/observability/logger.js";
import { openMongoCommitFeed } from "../../src/store/change-stream-commit-feed.js";
import type { CommitFeed } from "../../src/store/commit-feed.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import { testDbName } from "../support/mongo.js";
import { record } from "../support/task-records.js";

const at = () => new Date().toISOString();
const event = (taskId: string, sequence: number, type = "node.started"): RunEvent => ({
  eventId: `${taskId}:${sequence}`,
  runId: taskId,
  type,
  payload: { n: sequence },
  timestamp: at(),
  sequence,
});

for (const mode of ["change-stream", "poll"] as const) {
  describe(`following a task another instance writes (${mode})`, () => {
    const dbName = testDbName("follow");
    let writerClient: MongoClient;
    let readerClient: MongoClient;
    let writer: MongoTaskStore;
    let reader: MongoTaskStore;
    let feed: CommitFeed;
    let observer: TaskObserver;

    beforeAll(async () => {
      writerClient = await MongoClient.connect(inject("mongoUri"));
      readerClient = await MongoClient.connect(inject("mongoUri"));
      writer = new MongoTaskStore(writerClient, writerClient.db(dbName));
      reader = new MongoTaskStore(readerClient, readerClient.db(dbName));
      await writer.init();
      feed = await openMongoCommitFeed(readerClient.db(dbName), { mode, pollMs: 10 }, (err) => {
        throw err;
      });
      const reads = {
        get: async (taskId: string) =>
          (await reader.get(taskId)) ?? Promise.reject(new DomainError("task-not-found", taskId)),
        readEvents: (taskId: string, from: number, limit?: number) => reader.readEvents(taskId, from, limit),
      };
      // The reader's own hook never hears the writer: only the feed does.
      observer = new TaskObserver({
        reads,
        commits: new CommitBus(new TransitionHook(createLogger("silent")), feed),
        maxBuffered: 16,
      });
    });
    afterAll(async () => {
      await feed?.close();
      await writerClient?.db(dbName).dropDatabase();
      await Promise.all([writerClient?.close(), readerClient?.close()]);
    });

    it("yields the writer's commits in order, never an uncovered orphan, then the commit that replaces it", async () => {
      const taskId = randomUUID();
      await writer.create(record(taskId), [event(taskId, 0, "run.created")]);
      const abort = new AbortController();
      const follower = observer.follow({ taskId, status: "pending" }, 0, { onOverflow: "drop", signal: abort.signal });
      try {
        expect((await follower.next()).value).toMatchObject({ sequence: 0, type: "run.created" });
        // What a commit that died after its events write leaves: an event above the head.
        await writerClient
          .db(dbName)
          .collection("task_events")
          .insertOne({ ...event(taskId, 1, "orphan"), taskId });
        let early: unknown;
        const next = follower.next().then((r) => (early ??= r.value));
        await new Promise((r) => setTimeout(r, 150));
        expect(early).toBeUndefined();
        const { snapshot, a2a, expireAt, timerDueAt } = record(taskId);
        await writer.commit(taskId, 0, { status: "running", a2a, snapshot, updatedAt: at(), expireAt, timerDueAt }, [
          event(taskId, 1),
          event(taskId, 2),
        ]);
        expect(await next).toMatchObject({ sequence: 1, type: "node.started" });
        expect((await follower.next()).value).toMatchObject({ sequence: 2, type: "node.started" });
        await writer.commit(taskId, 2, { status: "completed", a2a, snapshot, updatedAt: at(), expireAt, timerDueAt }, [
          event(taskId, 3, "run.completed"),
        ]);
        expect((await follower.next()).value).toMatchObject({ sequence: 3, type: "run.completed" });
        expect((await follower.next()).done).toBe(true);
      } finally {
        abort.abort();
      }
    }, 20_000);

    it("a wait on the reader ends with the writer's commit that satisfies it", async () => {
      const taskId = randomUUID();
      await writer.create(record(taskId), [event(taskId, 0, "run.created")]);
      const { snapshot, a2a, expireAt, timerDueAt } = record(taskId);
      await writer.commit(taskId, 0, { status: "running", a2a, snapshot, updatedAt: at(), expireAt, timerDueAt }, [
        event(taskId, 1),
      ]);
      // Far longer than the test's timeout: only the feed can end this wait in time.
      const waiting = observer.waitUntil({
        taskId,
        tenant: "t1",
        until: (r) => r.status === "completed",
        timeoutMs: 600_000,
      });
      await new Promise((r) => setTimeout(r, 100)); // its first read (running) is done
      await writer.commit(taskId, 1, { status: "completed", a2a, snapshot, updatedAt: at(), expireAt, timerDueAt }, [
        event(taskId, 2, "run.completed"),
      ]);
      expect(await waiting).toMatchObject({ status: "completed", version: 2 });
    }, 20_000);
  });
}
