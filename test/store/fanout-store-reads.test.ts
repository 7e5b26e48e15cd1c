// Many followers of one task cost the store what one follower costs: they share the task's channel
// (engine/commit-fanout.ts), so a commit another instance makes is read once for all of them, a gap is read
// once for all followers at the same place, and every follower still gets every event once, in order.
// Counted with driver command monitoring (a count, not a time).
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { MongoClient, type CommandStartedEvent, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { TaskObserver } from "../../src/engine/task-observer.js";
import { TransitionHook } from "../../src/engine/transition-hook.js";
import { CommitBus } from "../../src/store/commit-bus.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import { createLogger } from "../../src/observability/logger.js";
import { openMongoCommitFeed } from "../../src/store/change-stream-commit-feed.js";
import type { CommitFeed } from "../../src/store/commit-feed.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import { testDbName } from "../support/mongo.js";
import { changes, events, record } from "../support/task-records.js";

const FOLLOWERS = 40;

interface Fixture {
  writer: MongoTaskStore;
  reader: MongoTaskStore;
  readerDb: Db;
  /** `find task_events` commands the reader's client sent. */
  eventReads: () => number;
  close(): Promise<void>;
}

async function fixture(dbName: string): Promise<Fixture> {
  const writerClient = await MongoClient.connect(inject("mongoUri"));
  const readerClient = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
  let reads = 0;
  readerClient.on("commandStarted", (e: CommandStartedEvent) => {
    if (e.commandName === "find" && e.command["find"] === "task_events") reads++;
  });
  const writer = new MongoTaskStore(writerClient, writerClient.db(dbName));
  await writer.init();
  return {
    writer,
    reader: new MongoTaskStore(readerClient, readerClient.db(dbName)),
    readerDb: readerClient.db(dbName),
    eventReads: () => reads,
    close: async () => {
      await writerClient.db(dbName).dropDatabase();
      await Promise.all([writerClient.close(), readerClient.close()]);
    },
  };
}

function observerOn(reader: MongoTaskStore, hook: TransitionHook, feed?: CommitFeed): TaskObserver {
  const reads = {
    get: async (taskId: string) =>
      (await reader.get(taskId)) ?? Promise.reject(new DomainError("task-not-found", taskId)),
    readEvents: (taskId: string, from: number, limit?: number) => reader.readEvents(taskId, from, limit),
  };
  return new TaskObserver({ reads, commits: new CommitBus(hook, feed), maxBuffered: 16 });
}

/** `count` followers from `from`, each collecting what it receives until its iterator ends. */
function follow(observer: TaskObserver, taskId: string, from: number, count: number, signal: AbortSignal) {
  setMaxListeners(count + 1, signal);
  return Array.from({ length: count }, () => {
    const seen: number[] = [];
    const iterator = observer.follow({ taskId, status: "running" }, from, { onOverflow: "drop", signal });
    const done = (async () => {
      for await (const event of iterator) seen.push(event.sequence);
    })();
    return { seen, done };
  });
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error(`timed out waiting for ${what}`);
}

const terminal = (taskId: string, sequence: number): RunEvent => ({
  ...events(taskId, sequence, 1)[0]!,
  type: "run.completed",
});

for (const mode of ["change-stream", "poll"] as const) {
  describe(`${FOLLOWERS} followers of a task another instance writes (${mode})`, () => {
    const dbName = testDbName("fanout");
    let f: Fixture;
    let feed: CommitFeed;
    let observer: TaskObserver;

    beforeAll(async () => {
      f = await fixture(dbName);
      feed = await openMongoCommitFeed(f.readerDb, { mode, pollMs: 20 }, (err) => {
        throw err;
      });
      observer = observerOn(f.reader, new TransitionHook(createLogger("silent")), feed);
    });
    afterAll(async () => {
      await feed?.close();
      await f?.close();
    });

    it("read the store once per noticed commit for all of them, and each gets every event once, in order", async () => {
      const taskId = randomUUID();
      await f.writer.create(record(taskId), events(taskId, 0, 1));
      // Notices the feed gives this task (each poll period, or each event the change stream sees).
      let notices = 0;
      const unfeed = feed.onTask(taskId, () => notices++);
      const abort = new AbortController();
      const followers = follow(observer, taskId, 0, FOLLOWERS, abort.signal);
      try {
        await until(() => followers.every((x) => x.seen.length === 1), "every follower's first event");
        const readsBefore = f.eventReads();
        const noticesBefore = notices;
        await f.writer.commit(taskId, 0, changes("running"), events(taskId, 1, 2));
        await until(() => followers.every((x) => x.seen.length === 3), "the first commit at every follower");
        await f.writer.commit(taskId, 2, changes("completed"), [terminal(taskId, 3)]);
        await Promise.all(followers.map((x) => x.done));
        for (const x of followers) expect(x.seen).toEqual([0, 1, 2, 3]);
        const reads = f.eventReads() - readsBefore;
        const noticed = notices - noticesBefore;
        if (mode === "change-stream") {
          // One read per commit: the notice is the head's move, which covers the commit's events (a read per
          // follower would be at least 2 × FOLLOWERS).
          expect(reads).toBe(2);
        } else {
          // At most one read per poll period (plus one already under way), whatever the number of followers.
          expect(reads).toBeGreaterThanOrEqual(2);
          expect(reads).toBeLessThanOrEqual(noticed + 1);
        }
        expect(observer.followedTasks).toBe(0);
      } finally {
        unfeed();
        abort.abort();
      }
    }, 30_000);

    it("a follower that joins from an earlier sequence than the task's other followers still gets what the feed notices", async () => {
      const taskId = randomUUID();
      await f.writer.create(record(taskId), events(taskId, 0, 1));
      const abort = new AbortController();
      // The first follower waits for sequence 3 on; the second from 1, below where the shared channel started.
      const [ahead] = follow(observer, taskId, 3, 1, abort.signal);
      const [behind] = follow(observer, taskId, 1, 1, abort.signal);
      try {
        await new Promise((r) => setTimeout(r, 100)); // both have done their first read (nothing yet)
        await f.writer.commit(taskId, 0, changes("running"), events(taskId, 1, 2));
        await until(() => behind!.seen.length === 2, "the commit at the follower from 1");
        await f.writer.commit(taskId, 2, changes("completed"), [terminal(taskId, 3)]);
        await Promise.all([ahead!.done, behind!.done]);
        expect(behind!.seen).toEqual([1, 2, 3]);
        expect(ahead!.seen).toEqual([3]);
      } finally {
        abort.abort();
      }
    }, 30_000);
  });
}

describe(`${FOLLOWERS} followers of a task committed on this instance`, () => {
  const dbName = testDbName("fanout-local");
  let f: Fixture;
  let hook: TransitionHook;
  let observer: TaskObserver;

  beforeAll(async () => {
    f = await fixture(dbName);
    hook = new TransitionHook(createLogger("silent"));
    // No feed: what another instance commits reaches these followers only as a gap before a local commit.
    observer = observerOn(f.reader, hook);
  });
  afterAll(() => f?.close());

  /** What the repository does after a commit: the committed events to the hook. */
  const publish = async (taskId: string, committed: RunEvent[]) => {
    const head = (await f.reader.get(taskId))!;
    hook.publish({ record: head, context: (head.snapshot as { context: TaskContext }).context, events: committed });
  };

  it("share their first read, get the hook's events with no read, and read a gap once for all", async () => {
    const taskId = randomUUID();
    await f.writer.create(record(taskId, { version: 1 }), events(taskId, 0, 2));
    const readsBefore = f.eventReads();
    const abort = new AbortController();
    const followers = follow(observer, taskId, 1, FOLLOWERS, abort.signal);
    try {
      await until(() => followers.every((x) => x.seen.length === 1), "every follower's first event");
      expect(f.eventReads() - readsBefore).toBe(1);

      // A local commit: its events reach every follower from the hook, with no store read.
      const local = events(taskId, 2, 2);
      await f.writer.commit(taskId, 1, changes("running"), local);
      await publish(taskId, local);
      await until(() => followers.every((x) => x.seen.length === 3), "the local commit at every follower");
      expect(f.eventReads() - readsBefore).toBe(1);

      // Another instance commits 4 and 5 (unheard here), then a local commit publishes 6: every follower
      // sees the gap before 6 and reads 4..5, one read for all of them.
      await f.writer.commit(taskId, 3, changes("running"), events(taskId, 4, 2));
      const last = [terminal(taskId, 6)];
      await f.writer.commit(taskId, 5, changes("completed"), last);
      await publish(taskId, last);
      await Promise.all(followers.map((x) => x.done));
      for (const x of followers) expect(x.seen).toEqual([1, 2, 3, 4, 5, 6]);
      expect(f.eventReads() - readsBefore).toBe(2);
      expect(observer.followedTasks).toBe(0);
    } finally {
      abort.abort();
    }
  }, 30_000);
});
