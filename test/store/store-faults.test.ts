// Store faults the way MongoDB's own drivers test them: two host instances in this process, each with its
// own MongoDB client (appName host-a / host-b), on one database of a wire-protocol test server of their own
// (a one-node replica set with the `failCommand` and `onPrimaryTransactionalWrite` fail points; its own, so
// no other test file meets the faults). Instance A drives tasks, a subscriber on B follows them through B's
// commit feed (a change stream on the task heads, `tasks`). Through every fault the stored log of each task stays
// gap-free and without duplicates, and B's subscriber sees exactly A's commits.
import { randomBytes, randomUUID } from "node:crypto";
import { copyFile, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { MongoClient, type Db, type Document, type ResumeToken } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeStreamCommitFeed } from "../../src/store/change-stream-commit-feed.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { testDbName } from "../support/mongo.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";
import { PushReceiver, waitFor, type PushHit } from "../support/push-receiver.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
/** slow-stream (30 chunks, 30 ms apart) and slow-approval (a durable timer of 400 ms, then an approval gate). */
const WORKFLOW_FILES = [
  new URL("../fixtures/fanout-workflows/slow-stream.yaml", import.meta.url),
  new URL("../fixtures/workflows/slow-approval.yaml", import.meta.url),
];
const TEXT = Array.from({ length: 30 }, (_, i) => `w${String(i).padStart(2, "0")}`).join("");
/** Short heartbeats: after a NotWritablePrimary the driver waits for the next one before it retries. */
const CLIENT_OPTIONS = { heartbeatFrequencyMS: 500, serverSelectionTimeoutMS: 10_000 };

let server: MongoWireServer;
let admin: MongoClient;

beforeAll(async () => {
  server = await startMongoWireServer({ port: 0, log: () => {} });
  admin = await MongoClient.connect(server.uri, CLIENT_OPTIONS);
});
afterAll(async () => {
  await admin?.close();
  await server?.close();
});

async function failPoint(
  name: "failCommand" | "onPrimaryTransactionalWrite",
  mode: unknown,
  data: Document = {},
): Promise<number> {
  return (await admin.db("admin").command({ configureFailPoint: name, mode, data }))["count"] as number;
}
/** Waits until the fail point has fired `times` times in all (mongod's waitForFailPoint). */
async function firedTimes(name: string, times: number): Promise<void> {
  await admin.db("admin").command({ waitForFailPoint: name, timesEntered: times, maxTimeMS: 20_000 });
}

describe("two host instances through store faults", () => {
  const dbName = testDbName("store_faults");
  const clients: MongoClient[] = [];
  let a: TestApp;
  let b: TestApp;
  let workflowsDir: string;

  async function host(appName: string): Promise<TestApp> {
    const client = await MongoClient.connect(server.uri, { ...CLIENT_OPTIONS, appName });
    clients.push(client);
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    // Short leases: a timer claimed by an instance that then cannot run the task is retried when the claim's lease expires.
    return startTestApp(
      { WORKFLOWS_DIR: workflowsDir, COMMIT_FEED: "change-stream", LEASE_TTL_MS: "1500", LEASE_HEARTBEAT_MS: "300" },
      store,
    );
  }

  beforeAll(async () => {
    workflowsDir = await mkdtemp(join(tmpdir(), "store-faults-"));
    for (const file of WORKFLOW_FILES) await copyFile(file, join(workflowsDir, basename(file.pathname)));
    a = await host("host-a");
    b = await host("host-b");
  });
  afterAll(async () => {
    await failPoint("failCommand", "off");
    await failPoint("onPrimaryTransactionalWrite", "off");
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all(clients.map((c) => c.close()));
  });

  const rpc = async (on: TestApp, method: string, params: unknown): Promise<Obj> => {
    const res = await fetch(`${on.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
    });
    return (await res.json()) as Obj;
  };
  const subscribe = (on: TestApp, taskId: string): Promise<Obj[]> =>
    fetch(`${on.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/resubscribe", params: { id: taskId } }),
    })
      .then((res) => readSse(res))
      .then((frames) => frames.map((f) => (f.data as Obj)["result"] as Obj));
  const message = (text: string, extra: Obj = {}) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text }],
    ...extra,
  });
  const textOf = (artifact: Obj | undefined): string =>
    ((artifact?.["parts"] ?? []) as Obj[]).map((p) => p["text"] as string).join("");

  /** A task A drives (30 chunks of a streamed artifact, 30 ms apart), created without waiting for it. */
  async function runningTask(): Promise<string> {
    const created = await rpc(a, "message/send", {
      message: message(TEXT, { metadata: { skillId: "slow-stream" } }),
      configuration: { blocking: false },
    });
    expect(created["error"]).toBeUndefined();
    return created["result"]["id"] as string;
  }

  /** The stored log: sequences 0..n-1 (no gap, no duplicate), one event per event id, 30 chunks, completed. */
  async function expectExactLog(taskId: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while ((await a.store.get(taskId))?.status !== "completed" && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const log = await a.store.readEvents(taskId, 0);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    expect(new Set(log.map((e) => e.eventId)).size).toBe(log.length);
    expect(log.filter((e) => e.a2a?.artifact?.artifactId === "stream.stream")).toHaveLength(30);
    expect(log.at(-1)?.type).toBe("run.completed");
    // The raw collection agrees: nothing stored twice under another sequence.
    const raw = await admin.db(dbName).collection("task_events").countDocuments({ taskId });
    expect(raw).toBe(log.length);
  }

  /** What B's subscriber saw: the artifact rebuilt (a lost or repeated chunk changes the text), ending completed. */
  function expectFollowed(frames: Obj[]): void {
    let text = textOf(((frames[0]?.["artifacts"] ?? []) as Obj[]).find((x) => x["artifactId"] === "stream.stream"));
    for (const frame of frames.slice(1)) {
      if (frame["kind"] !== "artifact-update" || frame["artifact"]["artifactId"] !== "stream.stream") continue;
      text = frame["append"] ? text + textOf(frame["artifact"]) : textOf(frame["artifact"]);
    }
    expect(text).toBe(TEXT);
    const last = frames.at(-1)!;
    expect(last["final"]).toBe(true);
    expect(last["status"]["state"]).toBe("completed");
  }

  /**
   * Arms the fault, starts a task on A with subscribers on A and B, waits for the fault to fire, and (with
   * `again`) arms it once more while the task runs: the driver retries a write once, so a fault that should be
   * retried fires once per write.
   */
  async function followThrough(
    arm: () => Promise<number>,
    name: "failCommand" | "onPrimaryTransactionalWrite",
    fires: number,
    again = false,
  ): Promise<void> {
    const before = await arm();
    const taskId = await runningTask();
    const followed = Promise.all([subscribe(b, taskId), subscribe(a, taskId)]);
    await firedTimes(name, before + fires);
    if (again) await firedTimes(name, (await arm()) + fires);
    const [onB, onA] = await followed;
    await failPoint(name, "off");
    expectFollowed(onB);
    expectFollowed(onA);
    await expectExactLog(taskId);
  }

  // B's change stream getMore fails; the driver resumes from its last token (network error, CursorNotFound,
  // and NotWritablePrimary, which the server labels ResumableChangeStreamError).
  it.each([
    ["a closed connection", { closeConnection: true }],
    ["CursorNotFound (43)", { errorCode: 43 }],
    ["NotWritablePrimary (10107)", { errorCode: 10107 }],
  ])(
    "B's commit feed carries on through %s on its change stream's getMore: nothing lost, nothing repeated",
    async (_name, fault) => {
      await followThrough(
        () => failPoint("failCommand", { times: 2 }, { failCommands: ["getMore"], appName: "host-b", ...fault }),
        "failCommand",
        2,
      );
    },
    60_000,
  );

  it("B's commit feed carries on when its change stream cannot be reopened at once (aggregate fails after a getMore fault)", async () => {
    // The getMore fails, then the driver's resume (an aggregate) too: the feed restarts the stream itself.
    const before = await failPoint(
      "failCommand",
      { times: 2 },
      { failCommands: ["getMore", "aggregate"], appName: "host-b", closeConnection: true },
    );
    const taskId = await runningTask();
    const onB = await subscribe(b, taskId);
    await firedTimes("failCommand", before + 2);
    expectFollowed(onB);
    await expectExactLog(taskId);
  }, 60_000);

  // A's commits fail in ways the driver retries (a retryable write: same lsid + txnNumber): each lands once.
  it("a commit that fails with NotWritablePrimary (RetryableWriteError) is retried once by the driver and lands exactly once", async () => {
    await followThrough(
      () =>
        failPoint(
          "failCommand",
          { times: 1 },
          { failCommands: ["bulkWrite", "insert", "update", "findAndModify"], appName: "host-a", errorCode: 10107 },
        ),
      "failCommand",
      1,
      true,
    );
  }, 60_000);

  it("a commit whose connection closes before it runs is retried and lands exactly once", async () => {
    await followThrough(
      () =>
        failPoint(
          "failCommand",
          { times: 1 },
          {
            failCommands: ["bulkWrite", "insert", "update", "findAndModify"],
            appName: "host-a",
            closeConnection: true,
          },
        ),
      "failCommand",
      1,
      true,
    );
  }, 60_000);

  it("a commit applied whose reply is lost (onPrimaryTransactionalWrite) is answered from the session on retry, not applied twice", async () => {
    await followThrough(
      () => failPoint("onPrimaryTransactionalWrite", { times: 1 }, { closeConnection: true }),
      "onPrimaryTransactionalWrite",
      1,
      true,
    );
  }, 60_000);

  it("a commit held by the server (blockConnection) makes the writer wait; nothing is lost", async () => {
    await followThrough(
      () =>
        failPoint(
          "failCommand",
          { times: 2 },
          { failCommands: ["bulkWrite"], appName: "host-a", blockConnection: true, blockTimeMS: 400 },
        ),
      "failCommand",
      2,
      true,
    );
  }, 60_000);

  it("a durable timer and the task leases carry on through faults on their writes (timer claim, lease acquisition): the timer fires once, the reply on B lands once", async () => {
    // Every update / findAndModify of either instance: the timer's claim (updateOne) and the leases (findOneAndUpdate).
    const leaseAndTimerWrites = { failCommands: ["update", "findAndModify"] };
    let before = await failPoint("failCommand", { times: 1 }, { ...leaseAndTimerWrites, closeConnection: true });
    const created = await rpc(a, "message/send", {
      message: message("go", { metadata: { skillId: "slow-approval" } }),
      configuration: { blocking: false },
    });
    expect(created["error"]).toBeUndefined();
    const taskId = created["result"]["id"] as string;
    await firedTimes("failCommand", before + 1);
    const waiting = Date.now() + 30_000;
    while ((await a.store.get(taskId))?.status !== "waiting-approval" && Date.now() < waiting)
      await new Promise((r) => setTimeout(r, 50));
    expect((await a.store.get(taskId))?.status).toBe("waiting-approval");

    // The reply arrives at B, which must take the task's lease to run it and commit: a write of B's fails with
    // NotWritablePrimary (labelled RetryableWriteError), the driver retries it.
    before = await failPoint(
      "failCommand",
      { times: 1 },
      { failCommands: ["findAndModify", "update", "bulkWrite"], appName: "host-b", errorCode: 10107 },
    );
    const accepted = await rpc(b, "message/send", {
      message: message("ok", { taskId, parts: [{ kind: "data", data: { action: "accept" } }] }),
    });
    expect(accepted["error"]).toBeUndefined();
    expect(accepted["result"]["status"]["state"]).toBe("completed");
    await firedTimes("failCommand", before + 1);
    await failPoint("failCommand", "off");

    const log = await a.store.readEvents(taskId, 0);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    expect(new Set(log.map((e) => e.eventId)).size).toBe(log.length);
    expect(await admin.db(dbName).collection("task_events").countDocuments({ taskId })).toBe(log.length);
    const nodeEvents = log
      .filter((e) => e.type.startsWith("node."))
      .map((e) => `${e.type}:${String((e.payload as Obj)["nodeId"] ?? "")}`);
    // Each node started and completed once: the timer (warmup) fired once, the reply ran the rest once.
    expect(new Set(nodeEvents).size).toBe(nodeEvents.length);
    for (const node of ["warmup", "prepare", "finalize"]) expect(nodeEvents).toContain(`node.completed:${node}`);
    expect(log.filter((e) => e.type === "run.completed")).toHaveLength(1);
  }, 60_000);

  it("after tasks (the heads B's feed watches) is dropped (invalidate), B's feed restarts with startAfter and follows the commits made after it", async () => {
    const first = await runningTask();
    expectFollowed(await subscribe(b, first));
    await admin.db(dbName).collection("tasks").drop();
    // The commits of a task started after the drop recreate the collection; B still hears them.
    const taskId = await runningTask();
    expectFollowed(await subscribe(b, taskId));
    await expectExactLog(taskId);
  }, 60_000);
});

describe("the change stream commit feed across an invalidate", () => {
  it("restarts with startAfter the invalidate (resumeAfter is refused) and hands over every later commit, without an error", async () => {
    const client = await MongoClient.connect(server.uri, CLIENT_OPTIONS);
    const db: Db = client.db(testDbName("feed_invalidate"));
    const heads = db.collection<{ _id: string; version: number }>("tasks");
    const errors: unknown[] = [];
    try {
      await heads.insertOne({ _id: "t", version: 0 });
      const opened = await db.command({ aggregate: "tasks", pipeline: [{ $changeStream: {} }], cursor: {} });
      const cursor = opened["cursor"] as { id: unknown; postBatchResumeToken: ResumeToken };
      await db.command({ killCursors: "tasks", cursors: [cursor.id] });
      const feed = new ChangeStreamCommitFeed(db, cursor.postBatchResumeToken, (err) => errors.push(err));
      const seen: number[] = [];
      const upTo = (n: number) =>
        new Promise<void>((resolve) => {
          const leave = feed.onTask("t", ({ sequence }) => {
            seen.push(sequence ?? -1);
            if (sequence === n) {
              leave();
              resolve();
            }
          });
        });
      const move = (version: number) => heads.updateOne({ _id: "t" }, { $set: { version } });
      try {
        const first = upTo(1);
        await move(1);
        await first;
        await heads.drop();
        const later = upTo(4);
        // Written after the drop (the collection is recreated): the feed hands each over once.
        await heads.insertOne({ _id: "t", version: 2 });
        await move(3);
        await new Promise((r) => setTimeout(r, 300));
        await move(4);
        await later;
        // A second drop and more commits: the feed keeps going.
        await heads.drop();
        const last = upTo(5);
        await heads.insertOne({ _id: "t", version: 5 });
        await last;
        // And the whole database dropped (drop, then dropDatabase: two invalidates in a row).
        await db.dropDatabase();
        const afterDatabase = upTo(6);
        await heads.insertOne({ _id: "t", version: 6 });
        await afterDatabase;
        expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
        expect(errors).toEqual([]);
      } finally {
        await feed.close();
      }
    } finally {
      await db.dropDatabase();
      await client.close();
    }
  }, 30_000);
});

describe("push delivery across two host processes through store faults", () => {
  const dbName = testDbName("push_faults");
  const TTL_MS = 1_500;
  const AFTER_FIRST_GATE = ["working", "input-required", "working", "completed"];
  const servers: ServerProcess[] = [];
  let hook: PushReceiver;
  let workflowsDir: string;
  const keys = {
    PUSH_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
  };

  beforeAll(async () => {
    workflowsDir = await mkdtemp(join(tmpdir(), "push-faults-"));
    await writeFile(
      join(workflowsDir, "two-gates.yaml"),
      "id: two-gates\nname: Two gates\ndescription: two approvals in a row\nnodes:\n  - { kind: approval, id: first, title: First }\n  - { kind: approval, id: second, title: Second }\n",
    );
    hook = await new PushReceiver().start();
  });
  afterAll(async () => {
    await failPoint("failCommand", "off");
    await failPoint("onPrimaryTransactionalWrite", "off");
    for (const s of servers.splice(0)) await s.kill();
    await hook?.stop();
    await admin.db(dbName).dropDatabase();
  });

  const start = async (instanceId: string): Promise<ServerProcess> => {
    const started = await startServerProcess({
      // Short heartbeats: after a NotWritablePrimary the driver retries once it has seen the primary again.
      MONGODB_URI: `${server.uri}/?heartbeatFrequencyMS=500`,
      MONGODB_DB: dbName,
      NODE_ENV: "test",
      WORKFLOWS_DIR: workflowsDir,
      TIMER_POLL_MS: "100",
      INSTANCE_ID: instanceId,
      LEASE_TTL_MS: String(TTL_MS),
      LEASE_HEARTBEAT_MS: "300",
      ...keys,
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      PUSH_TRANSITIONS: "all",
      PUSH_RETRY_BASE_MS: "100",
      PUSH_RETRY_MAX_MS: "300",
      PUSH_MAX_ATTEMPTS: "1000",
      PUSH_SWEEP_INTERVAL_MS: "3600000",
    });
    servers.push(started);
    return started;
  };
  const rpc = async (on: ServerProcess, method: string, params: unknown): Promise<any> => {
    const res = await fetch(`${on.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: any; error?: { code: number; message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  };
  const startTask = async (on: ServerProcess): Promise<string> =>
    (
      await rpc(on, "message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "go" }],
          metadata: { skillId: "two-gates" },
        },
      })
    ).id as string;
  const accept = async (on: ServerProcess, taskId: string): Promise<string> =>
    (
      await rpc(on, "message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          taskId,
          parts: [{ kind: "data", data: { action: "accept" } }],
        },
      })
    ).status.state as string;
  const statesOf = (hits: PushHit[]) => hits.map((h) => h.json["status"].state as string);
  const eventIdsOf = (hits: PushHit[]) => hits.map((h) => h.headers["x-a2a-event-id"] as string);

  it("configs registered through B, tasks driven on A: through faults on the push configs' writes and on commits, every state arrives once, in order", async () => {
    const a = await start("faults-a");
    const b = await start("faults-b");
    const pushWrites = { failCommands: ["findAndModify", "update"], namespace: `${dbName}.pushConfigs` };
    const faults: Array<[string, () => Promise<number>]> = [
      ["failCommand", () => failPoint("failCommand", { times: 1 }, { ...pushWrites, closeConnection: true })],
      ["failCommand", () => failPoint("failCommand", { times: 1 }, { ...pushWrites, errorCode: 10107 })],
      [
        "onPrimaryTransactionalWrite",
        () => failPoint("onPrimaryTransactionalWrite", { times: 1 }, { closeConnection: true }),
      ],
      [
        "failCommand",
        () => failPoint("failCommand", { times: 1 }, { ...pushWrites, blockConnection: true, blockTimeMS: 300 }),
      ],
    ];
    const taskIds = [await startTask(a), await startTask(a)];
    for (const taskId of taskIds)
      await rpc(b, "tasks/pushNotificationConfig/set", {
        taskId,
        pushNotificationConfig: { url: hook.url("/hook"), token: `token-${taskId}` },
      });
    // Each fault is armed before a gate is answered, and has fired before the next is armed.
    const gates: Array<[string, string]> = [
      [taskIds[0]!, "input-required"],
      [taskIds[1]!, "input-required"],
      [taskIds[0]!, "completed"],
      [taskIds[1]!, "completed"],
    ];
    for (const [i, [taskId, state]] of gates.entries()) {
      const [name, arm] = faults[i]!;
      const before = await arm();
      expect(await accept(a, taskId)).toBe(state);
      await firedTimes(name, before + 1);
    }
    for (const taskId of taskIds)
      await waitFor(
        () => statesOf(hook.forTask(taskId)).includes("completed"),
        20_000,
        `the completed push of ${taskId}`,
      );
    // Late duplicates would come within a few lease heartbeats.
    await new Promise((r) => setTimeout(r, 2 * TTL_MS));
    for (const taskId of taskIds) {
      const hits = hook.forTask(taskId);
      expect(statesOf(hits)).toEqual(AFTER_FIRST_GATE);
      expect(new Set(eventIdsOf(hits)).size).toBe(hits.length);
    }
  }, 120_000);
});
