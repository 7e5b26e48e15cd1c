import { randomUUID } from "node:crypto";
import { BSON, MongoClient, type Db, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoPushConfigStore } from "../../src/store/mongo-push-config-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { initialDelivery } from "../../src/store/push-config-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import "../support/mongo.js";

/**
 * Every query the MongoDB task store sends must be served by an index, so its cost does not grow with the
 * number of tasks. The test runs every store operation (fast and slow paths) against a database with many
 * other tasks, records each command the driver sends, and replays every filtering command as `explain`:
 * a COLLSCAN anywhere fails. It holds on a real MongoDB (MONGODB_URI) and on the wire-protocol test server,
 * whose planner walks the same indexes; there its serverStatus counters must also show no collection scan.
 */
const QUERY_COMMANDS = new Set([
  "find",
  "aggregate",
  "count",
  "distinct",
  "update",
  "delete",
  "findAndModify",
  "bulkWrite",
]);
/** Generic fields the driver adds; explain takes the command without them. */
const GENERIC_FIELDS = new Set([
  "lsid",
  "txnNumber",
  "$clusterTime",
  "$db",
  "$readPreference",
  "readConcern",
  "writeConcern",
  "apiVersion",
  "ordered",
  "bypassDocumentValidation",
]);

const at = (i: number) => new Date(Date.parse("2031-01-01T00:00:00.000Z") + i * 1000).toISOString();

function record(taskId: string, i: number, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId,
    tenant: i % 2 === 0 ? "tenant-a" : "tenant-b",
    contextId: `ctx-${i % 5}`,
    workflowId: "echo",
    version: 1,
    status: i % 3 === 0 ? "completed" : "running",
    a2a: { taskId, runId: taskId, state: i % 3 === 0 ? "completed" : "working", updatedAt: at(i) },
    snapshot: { value: "x" },
    createdAt: at(i),
    updatedAt: at(i),
    expireAt: null,
    timerDueAt: i % 4 === 0 ? at(i) : null,
    ...overrides,
  };
}

function events(taskId: string, from: number, count: number): RunEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    eventId: `${taskId}:${from + i}`,
    runId: taskId,
    type: "node.started",
    payload: {},
    timestamp: at(0),
    sequence: from + i,
  }));
}

const changes = (status: TaskRecord["status"], extra: Partial<TaskRecord> = {}) => ({
  status,
  a2a: { taskId: "x", runId: "x", state: "working" as const, updatedAt: at(99) },
  snapshot: { value: status },
  updatedAt: at(99),
  expireAt: null,
  timerDueAt: null,
  ...extra,
});

/** Every `stage` name in an explain answer (find, aggregate and write explains nest them differently). */
function stagesOf(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => stagesOf(v, found));
  else if (value && typeof value === "object" && !(value instanceof Date)) {
    for (const [key, v] of Object.entries(value)) {
      if (key === "stage" && typeof v === "string") found.push(v);
      else if (key !== "rejectedPlans") stagesOf(v, found);
    }
  }
  return found;
}

/** One explainable command per statement (explain takes one update or delete statement at a time). */
function explainable(command: Document): Document[] {
  const name = Object.keys(command)[0]!;
  if (name === "bulkWrite") return bulkWriteStatements(command);
  const base = Object.fromEntries(Object.entries(command).filter(([k]) => !GENERIC_FIELDS.has(k)));
  if (name === "update") return (command["updates"] as Document[]).map((u) => ({ ...base, updates: [u] }));
  if (name === "delete") return (command["deletes"] as Document[]).map((d) => ({ ...base, deletes: [d] }));
  return [base];
}

/** MongoDB 8.0's client bulkWrite: each update or delete op as the one-statement command explain takes. */
function bulkWriteStatements(command: Document): Document[] {
  const nsInfo = command["nsInfo"] as Document[];
  return (command["ops"] as Document[]).flatMap((op): Document[] => {
    const collection = (index: unknown) => String(nsInfo[Number(index)]!["ns"]).split(".").slice(1).join(".");
    if (op["update"] !== undefined)
      return [
        {
          update: collection(op["update"]),
          updates: [{ q: op["filter"], u: op["updateMods"], multi: op["multi"] === true }],
        },
      ];
    if (op["delete"] !== undefined)
      return [
        { delete: collection(op["delete"]), deletes: [{ q: op["filter"], limit: op["multi"] === true ? 0 : 1 }] },
      ];
    return [];
  });
}

/** A command as sent, with the driver's document sequences (bulkWrite's ops, nsInfo) as plain arrays. */
function asSent(command: Document): Document {
  const plain = Object.fromEntries(
    Object.entries(command).map(([k, v]) => [
      k,
      v && typeof v === "object" && "documents" in v && !Array.isArray(v)
        ? (v as { documents: Document[] }).documents
        : v,
    ]),
  );
  return BSON.deserialize(BSON.serialize(plain));
}

/** Each sent command replayed as `explain`: its text (shortened) and every plan stage. */
async function plansOf(db: Db, sent: Document[]): Promise<Array<{ command: string; stages: string[] }>> {
  const plans: Array<{ command: string; stages: string[] }> = [];
  for (const command of sent) {
    for (const one of explainable(command)) {
      const answer = await db.command({ explain: one, verbosity: "executionStats" });
      plans.push({ command: JSON.stringify(one).slice(0, 200), stages: stagesOf(answer) });
    }
  }
  return plans;
}

const scansCollection = (plan: { stages: string[] }): boolean =>
  plan.stages.includes("COLLSCAN") || !plan.stages.some((s) => /IXSCAN|IDHACK|COUNT_SCAN|DISTINCT_SCAN/.test(s));

describe(`every task-store query is served by an index (${inject("mongoBackend")})`, () => {
  const sent: Document[] = [];
  let client: MongoClient;
  let db: Db;
  let store: MongoTaskStore;

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
    db = client.db(`indexed_${randomUUID().slice(0, 8)}`);
    store = new MongoTaskStore(client, db);
    await store.init();
    client.on("commandStarted", (e) => {
      if (QUERY_COMMANDS.has(e.commandName)) sent.push(asSent(e.command));
    });
  });
  afterAll(async () => {
    await db.dropDatabase();
    await client.close();
  });

  it("runs every store operation, then finds no collection scan in any of their plans", async () => {
    const status = async () =>
      (await db.admin().command({ serverStatus: 1 })) as {
        metrics?: { queryExecutor?: { collectionScans?: { total?: unknown } } };
      };
    const scansBefore = Number((await status()).metrics?.queryExecutor?.collectionScans?.total ?? 0);

    // Many tasks, so a scan would be visible in the counters as well as in the plans.
    const ids = Array.from({ length: 60 }, () => randomUUID());
    await Promise.all(
      ids.map((id, i) => store.create(record(id, i, { idempotencyKey: `key-${id}` }), events(id, 0, 2))),
    );
    await Promise.all(ids.map((id) => store.commit(id, 1, changes("running"), events(id, 2, 2))));
    const [first, second, third] = ids as [string, string, string];

    // Reads.
    expect(await store.get(first)).not.toBeNull();
    expect((await store.readEvents(first, 1, 2)).map((e) => e.sequence)).toEqual([1, 2]);
    // A history longer than the head's window, and a retried message looked up by id.
    expect(await store.readHistory(first, 0, 3)).toEqual([]);
    expect(await store.findHistoryMessage(first, "m-1", 3)).toBeNull();
    expect((await store.findByIdempotencyKey(`key-${first}`))?.taskId).toBe(first);
    const page = await store.list({ tenant: "tenant-a", limit: 5 });
    expect(page.records).toHaveLength(5);
    const last = page.records.at(-1)!;
    await store.list({ tenant: "tenant-a", limit: 5, after: { updatedAt: last.updatedAt, taskId: last.taskId } });
    await store.list({ tenant: "tenant-a", contextId: "ctx-2", limit: 5 });
    // A handler's contextTasks pages the same list by context (HandlerContext.contextTasks).
    await store.list({
      tenant: "tenant-a",
      contextId: "ctx-2",
      limit: 2,
      after: { updatedAt: last.updatedAt, taskId: last.taskId },
    });
    await store.list({ tenant: "tenant-b", state: "working", updatedAtOrAfter: at(10), limit: 5 });
    // The operator console: a skill, an id prefix, time ranges, per-state counts, the next page.
    expect(
      (await store.list({ tenant: "tenant-a", workflowId: "echo", limit: 5, countStates: true })).states?.["working"],
    ).toBeGreaterThan(0);
    await store.list({ tenant: "tenant-a", idPrefix: first.slice(0, 4), limit: 5 });
    await store.list({
      tenant: "tenant-b",
      state: "working",
      createdAtOrAfter: at(1),
      createdBefore: at(40),
      updatedBefore: at(100),
      limit: 5,
      countStates: true,
    });
    expect(
      (
        await store.list({
          tenant: "tenant-a",
          workflowId: "echo",
          limit: 5,
          countTotal: false,
          after: { updatedAt: last.updatedAt, taskId: last.taskId },
        })
      ).total,
    ).toBe(-1);
    expect((await store.listActive()).length).toBeGreaterThan(0);
    await store.dueTimers(new Date(at(30)), 10);

    // Task execution leases and timer claims (several instances on one database).
    const lease = await store.acquireLease(first, "me", new Date(at(0)), new Date(at(10)));
    expect(lease?.owner).toBe("me");
    await store.renewLeases("me", [first, second], new Date(at(20)));
    await store.commit(first, 3, changes("running"), events(first, 4, 1), {
      owner: "me",
      epoch: lease!.epoch,
      expiresAt: at(30),
    });
    await expect(
      store.commit(first, 4, changes("running"), events(first, 5, 1), { owner: "other", epoch: 9, expiresAt: at(30) }),
    ).rejects.toThrow();
    await store.releaseLease(first, "me", lease!.epoch);
    expect((await store.leaseableTaskIds(new Date(at(30)), "me", 10)).length).toBeGreaterThan(0);
    await store.claimTimer(ids[4]!, new Date(at(30)), new Date(at(40)));

    // Slow paths: a duplicate create, a stale commit (events present / head moved), a repeated idempotency key
    // (its events are dropped, an expired holder is purged), orphans replaced, an ended task's log stamped.
    await expect(store.create(record(first, 0), events(first, 0, 2))).rejects.toThrow();
    await expect(store.commit(second, 1, changes("running"), events(second, 2, 1))).rejects.toThrow();
    await expect(store.commit(second, 7, changes("running"), events(second, 4, 1))).rejects.toThrow();
    await expect(
      store.create(record(randomUUID(), 1, { idempotencyKey: `key-${third}` }), events("dup", 0, 2)),
    ).rejects.toThrow();
    await store.commit(second, 3, changes("running"), events(second, 4, 1));
    await store.commit(
      third,
      3,
      changes("completed", { expireAt: new Date(Date.now() - 1).toISOString() }),
      events(third, 4, 1),
    );
    await store.create(record(randomUUID(), 1, { idempotencyKey: `key-${third}` }), events("reuse", 0, 2));

    const plans = await plansOf(db, sent);
    expect(plans.length).toBeGreaterThan(15);
    // The head moves and the log's expiry stamps (inside bulkWrite on MongoDB >= 8.0) are among the plans.
    expect(plans.some((p) => p.command.startsWith('{"update":"tasks"'))).toBe(true);
    expect(plans.some((p) => p.command.startsWith('{"update":"task_events"'))).toBe(true);
    const scans = plans.filter(scansCollection);
    expect(scans, "queries without an index").toEqual([]);

    if (inject("mongoBackend") === "wire-protocol test server") {
      // The operations themselves (not only their replays) examined no collection.
      expect(Number((await status()).metrics?.queryExecutor?.collectionScans?.total ?? 0)).toBe(scansBefore);
    }
  });

  it("a task's reads examine only its own documents, however many tasks there are", async () => {
    const id = randomUUID();
    await store.create(record(id, 2, { version: 2 }), events(id, 0, 3));
    const answer = await db.command({
      explain: { find: "task_events", filter: { taskId: id, sequence: { $gte: 1 } }, sort: { taskId: 1, sequence: 1 } },
      verbosity: "executionStats",
    });
    expect(answer["executionStats"]["totalDocsExamined"]).toBe(2);
    // The history read examines only the task's events that carry messages, from the index asked for.
    const said = (end: number) => ({
      history: [{ messageId: `m-${end}`, role: "user" as const, parts: [] }],
      historyEnd: end,
    });
    await store.commit(
      id,
      2,
      changes("running"),
      events(id, 3, 4).map((e, i) => (i % 2 === 0 ? e : { ...e, ...said(i) })),
    );
    const history = await db.command({
      explain: {
        find: "task_events",
        filter: { taskId: id, historyEnd: { $exists: true, $gt: 1 } },
        sort: { taskId: 1, historyEnd: 1 },
      },
      verbosity: "executionStats",
    });
    expect(history["executionStats"]["totalDocsExamined"]).toBe(1);
    expect((await store.readHistory(id, 0, 6)).map((m) => m.messageId)).toEqual(["m-1", "m-3"]);
    const byId = await db.command({
      explain: {
        find: "task_events",
        filter: { taskId: id, historyEnd: { $exists: true }, "history.messageId": "m-3" },
      },
      verbosity: "executionStats",
    });
    expect(byId["executionStats"]["totalDocsExamined"]).toBe(1);
    expect((await store.findHistoryMessage(id, "m-3", 6))?.messageId).toBe("m-3");
    const head = await db.command({ explain: { find: "tasks", filter: { _id: id } }, verbosity: "executionStats" });
    expect(head["executionStats"]["totalDocsExamined"]).toBe(1);
  });
});

describe(`every push-config delivery query is served by an index (${inject("mongoBackend")})`, () => {
  const sent: Document[] = [];
  let client: MongoClient;
  let db: Db;
  let configs: MongoPushConfigStore;

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
    db = client.db(`indexed_push_${randomUUID().slice(0, 8)}`);
    configs = new MongoPushConfigStore(db);
    await configs.init();
    client.on("commandStarted", (e) => {
      if (QUERY_COMMANDS.has(e.commandName)) sent.push(asSent(e.command));
    });
  });
  afterAll(async () => {
    await db.dropDatabase();
    await client.close();
  });

  it("the worker's lookups, the delivery lease (claim, renew, release, expired ones) and the fenced cursor move examine no collection", async () => {
    const ids = Array.from({ length: 40 }, () => randomUUID());
    const write = (taskId: string) => ({
      tenant: "t1",
      taskId,
      configId: "c1",
      url: "https://hooks.example.com/a",
      schemes: null,
      sealed: null,
      tokenFingerprint: null,
      updatedAt: at(0),
    });
    await Promise.all(ids.map((id) => configs.upsert(write(id), initialDelivery(-1, null), 10)));
    const [first, second] = ids as [string, string];

    expect(await configs.get(first, "c1")).not.toBeNull();
    expect(await configs.list(first)).toHaveLength(1);
    expect((await configs.listUnsettled(null, 5)).length).toBe(5);
    await configs.listUnsettled({ taskId: first, configId: "c1" }, 5);
    const claimed = await configs.claimDelivery(first, "c1", "me", new Date(at(0)), new Date(at(10)));
    expect(claimed?.lease?.owner).toBe("me");
    await configs.claimDelivery(second, "c1", "me", new Date(at(0)), new Date(at(10)));
    await configs.claimDelivery(second, "c1", "other", new Date(at(20)), new Date(at(30)));
    // One lease lost: the renewal reads which ones it still holds.
    expect(
      await configs.renewDeliveries(
        "me",
        [
          { taskId: first, configId: "c1", epoch: 1 },
          { taskId: second, configId: "c1", epoch: 1 },
        ],
        new Date(at(20)),
      ),
    ).toHaveLength(1);
    expect(
      await configs.updateDelivery(
        first,
        "c1",
        { revision: 1, cursor: -1, lease: { owner: "me", epoch: 1 } },
        initialDelivery(3, null),
        null,
      ),
    ).toBe(true);
    await configs.releaseDelivery(first, "c1", { owner: "me", epoch: 1 });
    expect(await configs.expiredDeliveryLeases(new Date(at(40)), 10)).toEqual([{ taskId: second, configId: "c1" }]);
    await configs.delete(second, "c1");

    const plans = await plansOf(db, sent);
    expect(plans.some((p) => p.command.startsWith('{"findAndModify":"pushConfigs"'))).toBe(true);
    const scans = plans.filter(scansCollection);
    expect(scans, "queries without an index").toEqual([]);
  });
});
