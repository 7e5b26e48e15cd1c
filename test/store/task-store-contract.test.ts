import { randomUUID } from "node:crypto";
import { MongoClient, type Db, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { Message } from "../../src/domain/a2a-types.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import {
  DuplicateIdempotencyKeyError,
  DuplicateTaskError,
  StaleWriteError,
  type TaskStore,
} from "../../src/store/task-store.js";
import { DomainError } from "../../src/domain/errors.js";
import "../support/mongo.js";
import { changes, events, record } from "../support/task-records.js";

const message = (i: number): Message => ({
  messageId: `m-${i}`,
  role: i % 2 === 0 ? "user" : "agent",
  parts: [{ kind: "text", text: `message ${i}` }],
});

/** One contract, every adapter. */
function contract(name: string, open: () => Promise<TaskStore>, close: () => Promise<void>) {
  describe(`TaskStore contract: ${name}`, () => {
    let store: TaskStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(close);

    it("creates, reads back exactly, and refuses a duplicate", async () => {
      const id = randomUUID();
      const r = record(id);
      await store.create(r, events(id, 0, 1));
      expect(await store.get(id)).toEqual(r);
      await expect(store.create(r, events(id, 0, 1))).rejects.toBeInstanceOf(DuplicateTaskError);
      expect(await store.get("missing")).toBeNull();
    });

    it("commits atomically with an optimistic version check; a stale writer changes nothing", async () => {
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      await store.commit(id, 0, changes("running"), events(id, 1, 2));
      expect((await store.get(id))?.version).toBe(2);
      await expect(store.commit(id, 0, changes("failed"), events(id, 1, 1))).rejects.toBeInstanceOf(StaleWriteError);
      const after = await store.get(id);
      expect(after?.status).toBe("running");
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual([0, 1, 2]);
      await expect(store.commit("missing", 0, changes("running"), events("missing", 1, 1))).rejects.toBeInstanceOf(
        StaleWriteError,
      );
    });

    it("two concurrent writers at the same version: exactly one wins, events never interleave", async () => {
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      const outcomes = await Promise.allSettled([
        store.commit(id, 0, changes("running"), events(id, 1, 3)),
        store.commit(id, 0, changes("paused"), events(id, 1, 1)),
      ]);
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const log = await store.readEvents(id, 0);
      expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
      expect((await store.get(id))?.version).toBe(log.length - 1);
    });

    it("reads event slices in order", async () => {
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      await store.commit(id, 0, changes("running"), events(id, 1, 9));
      expect((await store.readEvents(id, 3, 4)).map((e) => e.sequence)).toEqual([3, 4, 5, 6]);
      expect((await store.readEvents(id, 8)).map((e) => e.sequence)).toEqual([8, 9]);
      expect(await store.readEvents(id, 10)).toEqual([]);
      expect(await store.readEvents("missing", 0)).toEqual([]);
    });

    it("reads the A2A history from the events that carry it, from any index, only up to the version asked for", async () => {
      const id = randomUUID();
      const [created, started, completed, asked] = events(id, 0, 4) as [RunEvent, RunEvent, RunEvent, RunEvent];
      await store.create(record(id), [{ ...created, history: [message(0)], historyEnd: 1 }]);
      await store.commit(id, 0, changes("running"), [
        started,
        { ...completed, history: [message(1), message(2)], historyEnd: 3 },
      ]);
      await store.commit(id, 2, changes("running"), [{ ...asked, history: [message(3)], historyEnd: 4 }]);
      const ids = (messages: Message[]) => messages.map((m) => m.messageId);
      expect(ids(await store.readHistory(id, 0, 3))).toEqual(["m-0", "m-1", "m-2", "m-3"]);
      expect(await store.readHistory(id, 2, 3)).toEqual([message(2), message(3)]);
      expect(ids(await store.readHistory(id, 0, 2))).toEqual(["m-0", "m-1", "m-2"]);
      expect(await store.readHistory(id, 4, 3)).toEqual([]);
      expect(await store.readHistory("missing", 0, 3)).toEqual([]);
      expect(await store.findHistoryMessage(id, "m-2", 3)).toEqual(message(2));
      expect(await store.findHistoryMessage(id, "m-3", 2)).toBeNull();
      expect(await store.findHistoryMessage(id, "nope", 3)).toBeNull();
    });

    it("lists active tasks and due timers", async () => {
      const active = randomUUID();
      const done = randomUUID();
      const timed = randomUUID();
      await store.create(record(active, { status: "running" }), events(active, 0, 1));
      await store.create(record(done, { status: "completed" }), events(done, 0, 1));
      await store.create(
        record(timed, { status: "running", timerDueAt: new Date(Date.now() - 1000).toISOString() }),
        events(timed, 0, 1),
      );
      const ids = (await store.listActive()).map((r) => r.taskId);
      expect(ids).toEqual(expect.arrayContaining([active, timed]));
      expect(ids).not.toContain(done);
      expect(await store.dueTimers(new Date(), 100)).toContain(timed);
      expect(await store.dueTimers(new Date(Date.now() - 60_000), 100)).not.toContain(timed);
    });

    it("idempotency keys: one live task per key, found by key; an expired holder frees it", async () => {
      const key = `key-${randomUUID()}`;
      const first = randomUUID();
      await store.create(record(first, { idempotencyKey: key, requestFingerprint: "fp1" }), events(first, 0, 1));
      expect((await store.findByIdempotencyKey(key))?.taskId).toBe(first);
      expect((await store.findByIdempotencyKey(key))?.requestFingerprint).toBe("fp1");
      expect(await store.findByIdempotencyKey(`key-${randomUUID()}`)).toBeNull();
      const second = randomUUID();
      await expect(store.create(record(second, { idempotencyKey: key }), events(second, 0, 1))).rejects.toBeInstanceOf(
        DuplicateIdempotencyKeyError,
      );
      expect(await store.get(second)).toBeNull();
      // Tasks without a key never collide.
      const a = randomUUID();
      const b = randomUUID();
      await store.create(record(a, { idempotencyKey: null }), events(a, 0, 1));
      await store.create(record(b), events(b, 0, 1));
      // Past its retention the holder reads as not found, and the key is free again.
      await store.commit(
        first,
        0,
        changes("completed", { expireAt: new Date(Date.now() - 1).toISOString() }),
        events(first, 1, 1),
      );
      expect(await store.findByIdempotencyKey(key)).toBeNull();
      const third = randomUUID();
      await store.create(record(third, { idempotencyKey: key }), events(third, 0, 1));
      expect((await store.findByIdempotencyKey(key))?.taskId).toBe(third);
    });

    it("lists a tenant's live tasks newest first, with filters, a keyset cursor and the total", async () => {
      const tenant = `tenant-${randomUUID().slice(0, 8)}`;
      const base = Date.parse("2030-01-01T00:00:00.000Z");
      const at = (i: number) => new Date(base + i * 1000).toISOString();
      const ids = Array.from({ length: 5 }, (_, i) => `list-${i}-${randomUUID()}`);
      for (const [i, id] of ids.entries()) {
        const state = i % 2 === 0 ? "completed" : "input-required";
        await store.create(
          record(id, {
            tenant,
            contextId: i < 3 ? "ctx-a" : "ctx-b",
            updatedAt: at(i),
            a2a: { taskId: id, runId: id, state, updatedAt: at(i) },
          }),
          events(id, 0, 1),
        );
      }
      const other = randomUUID();
      await store.create(record(other, { tenant: `${tenant}-other`, updatedAt: at(9) }), events(other, 0, 1));
      const expired = randomUUID();
      await store.create(
        record(expired, { tenant, updatedAt: at(10), expireAt: new Date(Date.now() - 1).toISOString() }),
        events(expired, 0, 1),
      );

      const all = await store.list({ tenant, limit: 10 });
      expect(all.records.map((r) => r.taskId)).toEqual([...ids].reverse());
      expect(all.total).toBe(5);
      expect(all.records[0]).toEqual(await store.get(ids[4]!));

      const page1 = await store.list({ tenant, limit: 2 });
      expect(page1.records.map((r) => r.taskId)).toEqual([ids[4], ids[3]]);
      const last = page1.records.at(-1)!;
      const page2 = await store.list({ tenant, limit: 2, after: { updatedAt: last.updatedAt, taskId: last.taskId } });
      expect(page2.records.map((r) => r.taskId)).toEqual([ids[2], ids[1]]);
      expect(page2.total).toBe(5);

      expect((await store.list({ tenant, contextId: "ctx-a", limit: 10 })).records.map((r) => r.taskId)).toEqual([
        ids[2],
        ids[1],
        ids[0],
      ]);
      const completed = await store.list({ tenant, state: "completed", limit: 10 });
      expect(completed.records.map((r) => r.taskId)).toEqual([ids[4], ids[2], ids[0]]);
      expect(completed.total).toBe(3);
      const recent = await store.list({ tenant, updatedAtOrAfter: at(3), limit: 10 });
      expect(recent.records.map((r) => r.taskId)).toEqual([ids[4], ids[3]]);
      expect(await store.list({ tenant: `nobody-${randomUUID()}`, limit: 10 })).toEqual({ records: [], total: 0 });
    });

    it("refuses a write over the size caps (defaults keep a task under MongoDB's 16 MiB) and leaves the task unchanged", async () => {
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      const huge = { value: "running", context: { history: [{ text: "x".repeat(13 * 1024 * 1024) }] } };
      const refused = await store
        .commit(id, 0, { ...changes("running"), snapshot: huge }, events(id, 1, 1))
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DomainError);
      expect((refused as DomainError).code).toBe("content-too-large");
      const artifact = { artifactId: "a1", parts: [{ kind: "text" as const, text: "y".repeat(5 * 1024 * 1024) }] };
      const tooBigArtifact = [{ ...events(id, 1, 1)[0]!, type: "artifact.created", a2a: { artifact } }];
      await expect(store.commit(id, 0, changes("running"), tooBigArtifact)).rejects.toMatchObject({
        code: "content-too-large",
      });
      await expect(store.create(record(randomUUID(), { snapshot: huge }), events(id, 0, 1))).rejects.toMatchObject({
        code: "content-too-large",
      });
      expect((await store.get(id))?.version).toBe(0);
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual([0]);
      await store.commit(id, 0, changes("running"), events(id, 1, 1));
      expect((await store.get(id))?.version).toBe(1);
    });

    it("an expired terminal task reads as not found", async () => {
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      await store.commit(
        id,
        0,
        changes("completed", { expireAt: new Date(Date.now() - 1).toISOString() }),
        events(id, 1, 1),
      );
      expect(await store.get(id)).toBeNull();
      expect(await store.readEvents(id, 0)).toEqual([]);
    });
  });
}

contract(
  "memory",
  async () => new MemoryTaskStore(),
  async () => {},
);

const dbName = `contract_${randomUUID().slice(0, 8)}`;
let client: MongoClient;
contract(
  `mongodb (${inject("mongoBackend")})`,
  async () => {
    client = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    return store;
  },
  async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  },
);

/** `bulkWrite:<collections>` for MongoDB 8.0's client bulkWrite, `<command>:<collection>` for the others. */
function commandLabel(commandName: string, command: Document): string {
  if (commandName !== "bulkWrite") return `${commandName}:${String(command[commandName])}`;
  const nsInfo = command["nsInfo"] as Document[] | { documents: Document[] };
  const namespaces = (Array.isArray(nsInfo) ? nsInfo : nsInfo.documents).map((n) =>
    String(n["ns"]).split(".").slice(1).join("."),
  );
  return `bulkWrite:${namespaces.join(",")}`;
}

async function monitoredStoreOf(
  oneCommandWrites = true,
): Promise<{ store: MongoTaskStore; commands: string[]; db: Db; done(): Promise<void> }> {
  const commands: string[] = [];
  const monitored = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
  monitored.on("commandStarted", (e) => commands.push(commandLabel(e.commandName, e.command)));
  const db = monitored.db(`roundtrips_${randomUUID().slice(0, 8)}`);
  const store = new MongoTaskStore(monitored, db, { oneCommandWrites });
  await store.init();
  commands.length = 0;
  return {
    store,
    commands,
    db,
    done: async () => {
      await db.dropDatabase();
      await monitored.close();
    },
  };
}

describe("MongoDB commands per write on MongoDB >= 8.0: one client bulkWrite (driver command monitoring)", () => {
  it("reports the one-command path (the test server speaks wire version 25)", async () => {
    const { store, done } = await monitoredStoreOf();
    expect(store.writePath).toMatch(/^one bulkWrite command per commit/);
    await done();
  });

  it("a lone create or transition is one command: its events, then its head, in one ordered bulkWrite", async () => {
    const { store, commands, db, done } = await monitoredStoreOf();
    // Crash safety needs the events before the head, in an ordered command.
    const shapes: string[] = [];
    db.client.on("commandStarted", (e) => {
      const ops = e.command["ops"] as Document[] | { documents: Document[] } | undefined;
      if (e.commandName === "bulkWrite" && ops)
        shapes.push(
          `ordered=${String(e.command["ordered"])}: ${(Array.isArray(ops) ? ops : ops.documents).map((op) => Object.keys(op)[0]).join(",")}`,
        );
    });
    const id = randomUUID();
    await store.create(record(id), events(id, 0, 1));
    expect(commands).toEqual(["bulkWrite:task_events,tasks"]);
    expect(shapes).toEqual(["ordered=true: insert,insert"]);
    commands.length = 0;
    for (let v = 0; v < 10; v++) await store.commit(id, v, changes("running"), events(id, v + 1, 1));
    console.log(
      `MongoDB commands at concurrency 1 (one-command path): create=1, per transition=${commands.length / 10}`,
    );
    expect(commands).toEqual(Array.from({ length: 10 }, () => "bulkWrite:task_events,tasks"));
    // A task that ends stamps its log's expiry in the same command.
    commands.length = 0;
    await store.commit(
      id,
      10,
      changes("completed", { expireAt: new Date(Date.now() + 3_600_000).toISOString() }),
      events(id, 11, 1),
    );
    expect(commands).toEqual(["bulkWrite:task_events,tasks"]);
    expect(shapes.at(-1)).toBe("ordered=true: insert,update,update");
    expect(await db.collection("task_events").countDocuments({ taskId: id, expireAt: { $type: "date" } })).toBe(12);
    expect(await store.readEvents(id, 0)).toHaveLength(12);
    await done();
  });

  it("group commit: 32 concurrent tasks' transitions go out as one command", async () => {
    const { store, commands, done } = await monitoredStoreOf();
    const ids = Array.from({ length: 32 }, () => randomUUID());
    await Promise.all(ids.map((id) => store.create(record(id), events(id, 0, 1))));
    expect(commands).toEqual(["bulkWrite:task_events,tasks"]);
    commands.length = 0;
    for (let v = 0; v < 4; v++)
      await Promise.all(ids.map((id) => store.commit(id, 2 * v, changes("running"), events(id, 2 * v + 1, 2))));
    const perTransition = commands.length / (4 * 32);
    console.log(`MongoDB commands per transition under 32 concurrent tasks (one-command path): ${perTransition}`);
    expect(commands).toEqual(Array.from({ length: 4 }, () => "bulkWrite:task_events,tasks"));
    expect(perTransition).toBe(1 / 32);
    for (const id of ids)
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual(Array.from({ length: 9 }, (_, i) => i));
    await done();
  });

  it("a batch stopped by orphans of one task: that task replaces them, the others commit through the two-command path", async () => {
    const { store, db, commands, done } = await monitoredStoreOf();
    const ids = Array.from({ length: 6 }, () => randomUUID());
    await Promise.all(ids.map((id) => store.create(record(id), events(id, 0, 1))));
    await db
      .collection("task_events")
      .insertOne({ ...events(ids[2]!, 1, 1)[0]!, type: "orphan", taskId: ids[2]!, writer: "dead" });
    commands.length = 0;
    await Promise.all(ids.map((id) => store.commit(id, 0, changes("paused"), events(id, 1, 1))));
    expect(commands[0]).toBe("bulkWrite:task_events,tasks");
    for (const id of ids) {
      expect((await store.get(id))?.status).toBe("paused");
      expect((await store.readEvents(id, 0)).map((e) => [e.sequence, e.type])).toEqual([
        [0, "run.created"],
        [1, "node.started"],
      ]);
    }
    await done();
  });

  it("a batch of creates stopped by a repeated idempotency key: only that create fails, and leaves no events", async () => {
    const { store, db, done } = await monitoredStoreOf();
    const key = `key-${randomUUID()}`;
    const holder = randomUUID();
    await store.create(record(holder, { idempotencyKey: key }), events(holder, 0, 1));
    const ids = Array.from({ length: 5 }, () => randomUUID());
    const outcomes = await Promise.allSettled(
      ids.map((id, i) => store.create(record(id, i === 1 ? { idempotencyKey: key } : {}), events(id, 0, 1))),
    );
    expect(outcomes.map((o) => (o.status === "rejected" ? (o.reason as Error).name : "ok"))).toEqual([
      "ok",
      "DuplicateIdempotencyKeyError",
      "ok",
      "ok",
      "ok",
    ]);
    for (const [i, id] of ids.entries())
      expect(await db.collection("task_events").countDocuments({ taskId: id })).toBe(i === 1 ? 0 : 1);
    for (const [i, id] of ids.entries())
      expect(await store.get(id)).toEqual(i === 1 ? null : expect.objectContaining({ taskId: id }));
    await done();
  });

  it("a stale commit that would have ended its task leaves the log's expiry as the standing head has it", async () => {
    const { store, db, done } = await monitoredStoreOf();
    const id = randomUUID();
    await store.create(record(id), events(id, 0, 1));
    // Expects version 5 (never reached): its events insert succeeds, its head does not move.
    await expect(
      store.commit(
        id,
        5,
        changes("completed", { expireAt: new Date(Date.now() + 60_000).toISOString() }),
        events(id, 6, 1),
      ),
    ).rejects.toBeInstanceOf(StaleWriteError);
    expect(await db.collection("task_events").countDocuments({ taskId: id, expireAt: { $type: "date" } })).toBe(0);
    expect((await store.get(id))?.status).toBe("pending");
    await done();
  });
});

describe("MongoDB commands per write, two-command path (servers before 8.0; forced here)", () => {
  // The log lives in task_events, the head in tasks, no transactions: a lone write is the events insert,
  // then the head write (it was one update when the log was an array inside the task document).
  it("a lone create or transition is two commands: the events insert, then the head", async () => {
    const { store, commands, done } = await monitoredStoreOf(false);
    expect(store.writePath).toMatch(/^two commands per commit/);
    const id = randomUUID();
    await store.create(record(id), events(id, 0, 1));
    expect(commands).toEqual(["insert:task_events", "insert:tasks"]);
    commands.length = 0;
    for (let v = 0; v < 10; v++) await store.commit(id, v, changes("running"), events(id, v + 1, 1));
    console.log(
      `MongoDB commands at concurrency 1 (two-command path): create=2, per transition=${commands.length / 10}`,
    );
    expect(commands).toEqual(Array.from({ length: 10 }, () => ["insert:task_events", "update:tasks"]).flat());
    await done();
  });

  it("group commit: 32 concurrent tasks' transitions go out as one events insert and one head bulk", async () => {
    const { store, commands, done } = await monitoredStoreOf(false);
    const ids = Array.from({ length: 32 }, () => randomUUID());
    // All creates in one tick: one batch.
    await Promise.all(ids.map((id) => store.create(record(id), events(id, 0, 1))));
    expect(commands).toEqual(["insert:task_events", "insert:tasks"]);
    commands.length = 0;
    // Four rounds of one transition per task, each round submitted in one tick (as 32 callers would).
    for (let v = 0; v < 4; v++)
      await Promise.all(ids.map((id) => store.commit(id, 2 * v, changes("running"), events(id, 2 * v + 1, 2))));
    const perTransition = commands.length / (4 * 32);
    console.log(`MongoDB commands per transition under 32 concurrent tasks (two-command path): ${perTransition}`);
    expect(commands).toEqual(Array.from({ length: 4 }, () => ["insert:task_events", "update:tasks"]).flat());
    expect(perTransition).toBe(2 / 32);
    for (const id of ids)
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual(Array.from({ length: 9 }, (_, i) => i));
    await done();
  });
});

for (const oneCommand of [true, false])
  describe(`MongoDB store write paths (${oneCommand ? "one command" : "two commands"})`, () => {
    const monitoredStore = (): ReturnType<typeof monitoredStoreOf> => monitoredStoreOf(oneCommand);
    it("group commit: a stale writer in a batch fails alone; the others commit", async () => {
      const { store, commands, done } = await monitoredStore();
      const ids = Array.from({ length: 8 }, () => randomUUID());
      await Promise.all(ids.map((id) => store.create(record(id), events(id, 0, 1))));
      await store.commit(ids[3]!, 0, changes("running"), events(ids[3]!, 1, 1));
      commands.length = 0;
      const outcomes = await Promise.allSettled(
        ids.map((id, i) => store.commit(id, i === 5 ? 7 : 0, changes("paused"), events(id, 1, 1))),
      );
      const failed = outcomes.flatMap((o, i) => (o.status === "rejected" ? [[i, (o.reason as Error).name]] : []));
      // ids[3] moved past 0 (its events at 1 exist: the slow path finds the head moved); ids[5] expects a version it never had.
      expect(failed).toEqual([
        [3, "StaleWriteError"],
        [5, "StaleWriteError"],
      ]);
      for (const [i, id] of ids.entries()) {
        const stored = await store.get(id);
        expect(stored?.status).toBe(i === 3 ? "running" : i === 5 ? "pending" : "paused");
        expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual(i === 5 ? [0] : [0, 1]);
      }
      await done();
    });

    it("orphan events above the head (a writer died between its two writes) are invisible, then overwritten", async () => {
      const { store, db, done } = await monitoredStore();
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      await store.commit(id, 0, changes("running"), events(id, 1, 1));
      // What a writer that was killed after its events insert leaves behind: events 2..4, head still at 1.
      const orphans = events(id, 2, 3).map((e) => ({ ...e, type: "orphan", taskId: id, writer: "dead" }));
      await db.collection("task_events").insertMany(orphans);
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual([0, 1]);
      expect(await store.readEvents(id, 2)).toEqual([]);
      expect((await store.get(id))?.version).toBe(1);
      await store.commit(id, 1, changes("paused"), events(id, 2, 2));
      const log = await store.readEvents(id, 0);
      expect(log.map((e) => [e.sequence, e.type])).toEqual([
        [0, "run.created"],
        [1, "node.started"],
        [2, "node.started"],
        [3, "node.started"],
      ]);
      // Sequence 4 is still an orphan: ignored, and replaced by the next commit that reaches it.
      expect(await db.collection("task_events").countDocuments({ taskId: id })).toBe(5);
      await store.commit(id, 3, changes("paused"), events(id, 4, 1));
      expect((await store.readEvents(id, 0)).map((e) => e.type)).not.toContain("orphan");
      await done();
    });

    it("history carried by orphan events above the head is not read, nor found by id", async () => {
      const { store, db, done } = await monitoredStore();
      const id = randomUUID();
      await store.create(record(id), [{ ...events(id, 0, 1)[0]!, history: [message(0)], historyEnd: 1 }]);
      await db.collection("task_events").insertOne({
        ...events(id, 1, 1)[0]!,
        type: "orphan",
        taskId: id,
        writer: "dead",
        history: [message(1)],
        historyEnd: 2,
      });
      expect(await store.readHistory(id, 0, 0)).toEqual([message(0)]);
      expect(await store.findHistoryMessage(id, "m-1", 0)).toBeNull();
      await done();
    });

    it("an ended task stamps its whole log with its expiry (TTL removes the log with the head)", async () => {
      const { store, db, done } = await monitoredStore();
      const id = randomUUID();
      await store.create(record(id), events(id, 0, 1));
      await store.commit(id, 0, changes("running"), events(id, 1, 2));
      expect(await db.collection("task_events").countDocuments({ taskId: id, expireAt: { $type: "date" } })).toBe(0);
      const expireAt = new Date(Date.now() + 3_600_000).toISOString();
      await store.commit(id, 2, changes("completed", { expireAt }), events(id, 3, 1));
      const stamped = await db.collection("task_events").find({ taskId: id }).toArray();
      expect(stamped.map((e) => (e["expireAt"] as Date).toISOString())).toEqual([
        expireAt,
        expireAt,
        expireAt,
        expireAt,
      ]);
      await done();
    });

    it("a database of the first layout (the log inside each task document) is moved to task_events on start, once", async () => {
      const { db, done } = await monitoredStore();
      const id = randomUUID();
      const { taskId: _taskId, ...fields } = record(id, { version: 2 });
      await db.collection("store_meta").deleteMany({});
      await db
        .collection("tasks")
        .insertOne({ ...fields, _id: id as never, expireAt: null, timerDueAt: null, events: events(id, 0, 3) });
      const store = new MongoTaskStore(db.client, db);
      await store.init();
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual([0, 1, 2]);
      expect(await store.get(id)).toEqual(
        record(id, { version: 2, createdAt: fields.createdAt, updatedAt: fields.updatedAt, a2a: fields.a2a }),
      );
      expect(await db.collection("tasks").countDocuments({ events: { $exists: true } })).toBe(0);
      await store.commit(id, 2, changes("running"), events(id, 3, 1));
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual([0, 1, 2, 3]);
      await done();
    });
  });
