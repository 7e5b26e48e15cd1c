// The change stream commit feed watches the task heads and leaves out, on the server, the commits of the store
// that opened it: an instance is handed only other instances' commits (one change per commit, the head's
// version as its sequence), never lease or timer writes, and never decodes its own commits again. Its own
// writes of unknown outcome (the reply lost) are announced to its followers by the store itself. Counted
// with driver command monitoring: the documents the server hands the feed's change stream.
import { randomUUID } from "node:crypto";
import { MongoClient, type CommandStartedEvent, type CommandSucceededEvent, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { TaskObserver } from "../../src/engine/task-observer.js";
import { TransitionHook } from "../../src/engine/transition-hook.js";
import { createLogger } from "../../src/observability/logger.js";
import { CommitBus } from "../../src/store/commit-bus.js";
import type { CommitFeed, CommitNotice } from "../../src/store/commit-feed.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { isStoreUnavailable } from "../../src/store/store-call-budget.js";
import { testDbName } from "../support/mongo.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { changes, events, record } from "../support/task-records.js";

const FEED = { mode: "change-stream", pollMs: 50 } as const;
const noError = (err: unknown) => {
  throw err;
};

/** What the server hands a client's change streams on `tasks`: getMore commands, and the change documents of every batch. */
interface StreamCounts {
  getMores: number;
  docs: number;
  reset(): void;
}

function countStreams(client: MongoClient): StreamCounts {
  const counts: StreamCounts = {
    getMores: 0,
    docs: 0,
    reset() {
      counts.getMores = 0;
      counts.docs = 0;
    },
  };
  const streamRequests = new Set<number>();
  client.on("commandStarted", (e: CommandStartedEvent) => {
    const opensStream =
      e.commandName === "aggregate" &&
      (e.command["pipeline"] as Document[] | undefined)?.[0]?.["$changeStream"] !== undefined;
    const streamMore = e.commandName === "getMore" && e.command["collection"] === "tasks";
    if (e.command[e.commandName] === "tasks" || streamMore) {
      if (opensStream || streamMore) streamRequests.add(e.requestId);
      if (streamMore) counts.getMores++;
    }
  });
  client.on("commandSucceeded", (e: CommandSucceededEvent) => {
    if (!streamRequests.delete(e.requestId)) return;
    const cursor = (e.reply as Document)["cursor"] as { firstBatch?: unknown[]; nextBatch?: unknown[] };
    counts.docs += (cursor.firstBatch ?? cursor.nextBatch ?? []).length;
  });
  return counts;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error(`timed out waiting for ${what}`);
}

/** Collects the notices a feed gives one task. */
function heard(feed: CommitFeed, taskId: string): CommitNotice[] {
  const notices: CommitNotice[] = [];
  feed.onTask(taskId, (notice) => notices.push(notice));
  return notices;
}

describe("two stores on one database, each with its change stream commit feed", () => {
  const dbName = testDbName("own_feed");
  const clients: MongoClient[] = [];
  let a: MongoTaskStore;
  let b: MongoTaskStore;
  let feedA: CommitFeed;
  let feedB: CommitFeed;
  let streamsA: StreamCounts;
  let streamsB: StreamCounts;

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) clients.push(await MongoClient.connect(inject("mongoUri"), { monitorCommands: true }));
    [streamsA, streamsB] = clients.map(countStreams) as [StreamCounts, StreamCounts];
    a = new MongoTaskStore(clients[0]!, clients[0]!.db(dbName));
    b = new MongoTaskStore(clients[1]!, clients[1]!.db(dbName));
    await Promise.all([a.init(), b.init()]);
    feedA = await a.openCommitFeed(FEED, noError);
    feedB = await b.openCommitFeed(FEED, noError);
    expect([feedA.mode, feedB.mode]).toEqual(["change-stream", "change-stream"]);
  });
  afterAll(async () => {
    await Promise.all([feedA?.close(), feedB?.close()]);
    await clients[0]?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
  });

  it("A's own commits reach no change-stream document of A's, while B hears each of them once, with the head's version", async () => {
    streamsA.reset();
    const taskId = randomUUID();
    const onA = heard(feedA, taskId);
    const onB = heard(feedB, taskId);
    await a.create(record(taskId), events(taskId, 0, 1));
    await a.commit(taskId, 0, changes("running"), events(taskId, 1, 2));
    await a.commit(taskId, 2, changes("running"), events(taskId, 3, 1));
    await until(() => onB.length === 3, "A's three head moves on B");
    expect(onB).toEqual([0, 2, 3].map((sequence) => ({ taskId, sequence })));

    // A commit of B's, made after A's: A's stream passes A's own commits on the server before it reaches
    // this one, so when A hears it, whatever A's stream would hand over of A's own has been handed over.
    const other = randomUUID();
    const otherOnA = heard(feedA, other);
    await b.create(record(other), events(other, 0, 1));
    await until(() => otherOnA.length === 1, "B's create on A");
    expect(otherOnA).toEqual([{ taskId: other, sequence: 0 }]);
    expect(onA).toEqual([]);
    expect(streamsA.docs).toBe(1);
  });

  it("lease acquisitions, renewals and releases and timer claims reach no change-stream document; the commit after them does", async () => {
    const taskId = randomUUID();
    const onB = heard(feedB, taskId);
    await a.create(record(taskId, { timerDueAt: new Date(Date.now() - 1000).toISOString() }), events(taskId, 0, 1));
    await until(() => onB.length === 1, "the create on B");
    streamsB.reset();
    const now = new Date();
    const lease = await a.acquireLease(taskId, "owner-a", now, new Date(now.getTime() + 60_000));
    expect(lease).not.toBeNull();
    expect(await a.renewLeases("owner-a", [taskId], new Date(now.getTime() + 120_000))).toBe(1);
    expect(await a.claimTimer(taskId, new Date(), new Date(now.getTime() + 60_000))).toBe(true);
    await a.releaseLease(taskId, "owner-a", lease!.epoch);
    expect((await a.get(taskId))?.lease).toBeUndefined();
    // The commit after them: when B hears it, B's stream has passed the lease and timer writes.
    await a.commit(taskId, 0, changes("running"), events(taskId, 1, 1));
    await until(() => onB.length === 2, "the commit on B");
    expect(onB).toEqual([0, 1].map((sequence) => ({ taskId, sequence })));
    expect(streamsB.docs).toBe(1);
  });
});

describe("one instance alone, running echo tasks", () => {
  const dbName = testDbName("own_feed_app");
  const TASKS = 10;
  let client: MongoClient;
  let other: MongoClient;
  let t: TestApp;
  let streams: StreamCounts;

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
    other = await MongoClient.connect(inject("mongoUri"));
    streams = countStreams(client);
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    t = await startTestApp({ COMMIT_FEED: "change-stream" }, store);
  });
  afterAll(async () => {
    await t?.close();
    await client?.db(dbName).dropDatabase();
    await Promise.all([client?.close(), other?.close()]);
  });

  const send = async (): Promise<{ id: string; state: string }> => {
    const response = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "go" }],
            metadata: { skillId: "echo" },
          },
        },
      }),
    });
    const { result } = (await response.json()) as { result: { id: string; status: { state: string } } };
    return { id: result.id, state: result.status.state };
  };

  it("its change stream hands over no document for its own commits; another writer's commit still arrives", async () => {
    streams.reset();
    const started = Date.now();
    for (let i = 0; i < TASKS; i++) expect((await send()).state).toBe("completed");
    const elapsed = Date.now() - started;
    const own = { getMores: streams.getMores, docs: streams.docs };
    // Another writer (a store of its own, as another instance) creates a task: this instance's stream is live
    // and hands over that one change, after every commit of its own the server passed over.
    const otherStore = new MongoTaskStore(other, other.db(dbName));
    const taskId = randomUUID();
    await otherStore.create(record(taskId), events(taskId, 0, 1));
    await until(() => streams.docs > 0, "the other writer's create on this instance's stream");
    console.log(
      `change stream per echo task (${TASKS} tasks in ${elapsed} ms, one instance): ${(own.getMores / TASKS).toFixed(2)} getMore, ${(own.docs / TASKS).toFixed(2)} documents`,
    );
    expect(own.docs).toBe(0);
    expect(streams.docs).toBe(1);
  });
});

describe("a commit of unknown outcome (applied, its reply lost)", () => {
  const dbName = testDbName("own_feed_unknown");
  const APP = "unknown-outcome";
  let server: MongoWireServer;
  let admin: MongoClient;
  let client: MongoClient;
  let store: MongoTaskStore;
  let feed: CommitFeed;
  let observer: TaskObserver;

  beforeAll(async () => {
    // A server of its own: its fail points are the whole server's.
    server = await startMongoWireServer({ port: 0, log: () => {} });
    admin = await MongoClient.connect(server.uri);
    client = await MongoClient.connect(server.uri, { appName: APP, heartbeatFrequencyMS: 500 });
    store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    feed = await store.openCommitFeed(FEED, noError);
    const reads = {
      get: async (taskId: string) =>
        (await store.get(taskId)) ?? Promise.reject(new DomainError("task-not-found", taskId)),
      readEvents: (taskId: string, from: number, limit?: number) => store.readEvents(taskId, from, limit),
    };
    // Nobody publishes to this hook: as for the engine, a commit that threw is never published.
    observer = new TaskObserver({
      reads,
      commits: new CommitBus(new TransitionHook(createLogger("silent")), feed),
      maxBuffered: 16,
    });
  });
  afterAll(async () => {
    await admin?.db("admin").command({ configureFailPoint: "failCommand", mode: "off" });
    await feed?.close();
    await Promise.all([client?.close(), admin?.close()]);
    await server?.close();
  });

  it("still reaches a wait on the same instance: the store announces it to its own feed", async () => {
    const taskId = randomUUID();
    await store.create(record(taskId), events(taskId, 0, 1));
    // Far longer than the commit takes, far shorter than the test's timeout: only a notice ends it in time.
    const waiting = observer.waitUntil({ taskId, tenant: "t1", until: (r) => r.version === 1, timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 100)); // its first read (version 0) is done
    // The commit is applied and its connection closed before the reply; the driver's retry meets a closed
    // connection too: the store call fails although the head moved.
    await admin.db("admin").command({
      configureFailPoint: "onPrimaryTransactionalWrite",
      mode: { times: 1 },
      data: { closeConnection: true },
    });
    await admin.db("admin").command({
      configureFailPoint: "failCommand",
      mode: { skip: 1 },
      data: { failCommands: ["bulkWrite", "insert", "update"], appName: APP, closeConnection: true },
    });
    let failure: unknown;
    await store.commit(taskId, 0, changes("running"), events(taskId, 1, 1)).catch((err: unknown) => (failure = err));
    await admin.db("admin").command({ configureFailPoint: "failCommand", mode: "off" });
    expect(isStoreUnavailable(failure)).toBe(true);
    expect((await store.get(taskId))?.version).toBe(1);
    expect((await waiting).version).toBe(1);
  }, 20_000);

  it("is announced (no sequence) at once and once more a little later, when the server may still apply it", async () => {
    const taskId = randomUUID();
    await store.create(record(taskId), events(taskId, 0, 1));
    const notices = heard(feed, taskId);
    // Both attempts (the driver retries once) lose their connection before they run.
    await admin.db("admin").command({
      configureFailPoint: "failCommand",
      mode: { times: 2 },
      data: { failCommands: ["bulkWrite", "insert", "update"], appName: APP, closeConnection: true },
    });
    const failure = await store
      .commit(taskId, 0, changes("running"), events(taskId, 1, 1))
      .catch((err: unknown) => err);
    expect(isStoreUnavailable(failure)).toBe(true);
    expect(notices).toEqual([{ taskId }]);
    await until(() => notices.length === 2, "the second announcement");
    expect(notices).toEqual([{ taskId }, { taskId }]);
  }, 20_000);
});
