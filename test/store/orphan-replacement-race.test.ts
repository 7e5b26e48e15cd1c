// The MongoDB store's answer to a commit whose events meet existing keys (orphans of a writer that stopped
// between its events and its head) when another writer is at work on the same task: two real clients on one
// database, one of them behind a proxy that stops its write commands where the race would bite, so the
// interleaving is deterministic. A commit that meets existing keys must never change a committed event, nor
// leave a head whose events another writer wrote.
import { randomUUID } from "node:crypto";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { LeaseLostError } from "../../src/store/task-store.js";
import { startCommandHoldProxy, type CommandHoldProxy } from "../support/command-hold-proxy.js";
import "../support/mongo.js";
import { changes, record } from "../support/task-records.js";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(T0 + ms).toISOString();

/** One event per sequence, marked with who wrote it. */
const eventsBy = (writer: string, taskId: string, from: number, count: number): RunEvent[] =>
  Array.from({ length: count }, (_, i) => ({
    eventId: `${taskId}:${from + i}:${writer}`,
    runId: taskId,
    type: "node.started",
    payload: { writer },
    timestamp: iso(0),
    sequence: from + i,
  }));

interface RawEvent {
  sequence: number;
  payload: { writer?: string };
}

for (const oneCommandWrites of [true, false]) {
  describe(`orphan replacement against a concurrent writer, ${oneCommandWrites ? "one command" : "two commands"} per write (${inject("mongoBackend")})`, () => {
    const uri = inject("mongoUri");
    const dbName = `orphan_race_${randomUUID().slice(0, 8)}`;
    const clients: MongoClient[] = [];
    const proxies: CommandHoldProxy[] = [];
    let db: Db;

    /** A store on its own client (another instance), behind a hold proxy when asked. */
    async function instance(
      behindProxy: boolean,
      twoCommands = false,
    ): Promise<{ store: MongoTaskStore; proxy?: CommandHoldProxy }> {
      const proxy = behindProxy ? await startCommandHoldProxy(uri) : undefined;
      if (proxy) proxies.push(proxy);
      const client = await MongoClient.connect(proxy?.uri ?? uri);
      clients.push(client);
      const store = new MongoTaskStore(client, client.db(dbName), {
        oneCommandWrites: oneCommandWrites && !twoCommands,
      });
      await store.init();
      return { store, ...(proxy ? { proxy } : {}) };
    }

    const rawLog = async (taskId: string) =>
      (
        await db
          .collection<RawEvent & { taskId: string }>("task_events")
          .find({ taskId })
          .sort({ sequence: 1 })
          .toArray()
      ).map((e) => [e.sequence, e.payload.writer]);

    beforeAll(async () => {
      const client = await MongoClient.connect(uri);
      clients.push(client);
      db = client.db(dbName);
    });
    afterAll(async () => {
      await db.dropDatabase();
      for (const p of proxies) await p.close();
      for (const c of clients) await c.close();
    });

    it("a fenced-out owner stopped inside its orphan replacement cannot overwrite what the new owner committed", async () => {
      const a = await instance(true);
      const b = await instance(false);
      const id = randomUUID();
      const running: TaskRecord = record(id, {
        status: "running",
        lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) },
      });
      await b.store.create(running, eventsBy("creator", id, 0, 1));
      // A writer that died between its two writes left sequences 1 and 2 behind, above the head.
      await db
        .collection("task_events")
        .insertMany(eventsBy("dead", id, 1, 2).map((e) => ({ ...e, taskId: id, writer: "dead", expireAt: null })));

      // A's events meet the orphans; its next write (whatever it does about them) is held.
      const held = a.proxy!.holdWrite(2);
      const aCommit = a.store.commit(id, 0, changes("running"), eventsBy("a", id, 1, 2), {
        owner: "a",
        epoch: 1,
        expiresAt: iso(10_000),
      });
      await held;
      // Meanwhile A's lease expires; B takes the task over and commits sequence 1.
      expect(await b.store.acquireLease(id, "b", new Date(T0 + 11_000), new Date(T0 + 21_000))).toMatchObject({
        epoch: 2,
      });
      await b.store.commit(id, 0, changes("running"), eventsBy("b", id, 1, 1), {
        owner: "b",
        epoch: 2,
        expiresAt: iso(21_000),
      });
      expect(
        (await b.store.readEvents(id, 0)).map((e) => [e.sequence, (e.payload as { writer: string }).writer]),
      ).toEqual([
        [0, "creator"],
        [1, "b"],
      ]);

      a.proxy!.release();
      await expect(aCommit).rejects.toBeInstanceOf(LeaseLostError);
      // B's committed event stands, in what readers get and in the collection itself.
      expect(await b.store.get(id)).toMatchObject({ version: 1, lease: { owner: "b", epoch: 2 } });
      expect(
        (await b.store.readEvents(id, 0)).map((e) => [e.sequence, (e.payload as { writer: string }).writer]),
      ).toEqual([
        [0, "creator"],
        [1, "b"],
      ]);
      expect((await rawLog(id)).slice(0, 2)).toEqual([
        [0, "creator"],
        [1, "b"],
      ]);
      // B carries on over what is left above its head.
      await b.store.commit(id, 1, changes("running"), eventsBy("b", id, 2, 1), {
        owner: "b",
        epoch: 2,
        expiresAt: iso(21_000),
      });
      expect(await rawLog(id)).toEqual([
        [0, "creator"],
        [1, "b"],
        [2, "b"],
      ]);
    });

    it("while a conflicted commit's events are only in its head (copy not done, or its writer died), readers take them from there", async () => {
      const w = await instance(true);
      const reader = await instance(false);
      const id = randomUUID();
      await reader.store.create(record(id, { status: "running" }), eventsBy("creator", id, 0, 1));
      await db
        .collection("task_events")
        .insertMany(eventsBy("dead", id, 1, 3).map((e) => ({ ...e, taskId: id, writer: "dead", expireAt: null })));
      // W's events meet the orphans: its head moves carrying them; the copy into the log is held.
      const held = w.proxy!.holdWrite(3);
      const wCommit = w.store.commit(id, 0, changes("running"), eventsBy("w", id, 1, 2));
      await held;
      expect(await rawLog(id)).toEqual([
        [0, "creator"],
        [1, "dead"],
        [2, "dead"],
        [3, "dead"],
      ]);
      expect(
        (await reader.store.readEvents(id, 0)).map((e) => [e.sequence, (e.payload as { writer: string }).writer]),
      ).toEqual([
        [0, "creator"],
        [1, "w"],
        [2, "w"],
      ]);
      expect((await reader.store.readEvents(id, 2, 1)).map((e) => e.sequence)).toEqual([2]);
      expect(await reader.store.get(id)).not.toHaveProperty("redo");
      // Another writer meanwhile commits over the remaining orphan: both redo sets are read, neither is lost.
      await reader.store.commit(id, 2, changes("running"), eventsBy("r", id, 3, 1));
      expect((await reader.store.readEvents(id, 0)).map((e) => (e.payload as { writer: string }).writer)).toEqual([
        "creator",
        "w",
        "w",
        "r",
      ]);
      w.proxy!.release();
      await wCommit;
      expect(await rawLog(id)).toEqual([
        [0, "creator"],
        [1, "w"],
        [2, "w"],
        [3, "r"],
      ]);
      expect(await db.collection("tasks").findOne({ _id: id as never }, { projection: { redo: 1 } })).toEqual({
        _id: id,
        redo: {},
      });
    });

    it("events of a live writer are never taken over under its head: the head that stands and its events are one writer's", async () => {
      // X (two commands: events, then head) is held between its events and its head; W, an unfenced writer
      // at the same version (a cancel on another instance), meets X's events as if they were orphans.
      const x = await instance(true, true);
      const w = await instance(true);
      const id = randomUUID();
      await x.store.create(record(id, { status: "running" }), eventsBy("creator", id, 0, 1));

      const xHeld = x.proxy!.holdWrite(2);
      const xCommit = x.store.commit(id, 0, changes("running"), eventsBy("x", id, 1, 1));
      await xHeld;
      const wHeld = w.proxy!.holdWrite(3);
      const wCommit = w.store.commit(id, 0, changes("cancelling"), eventsBy("w", id, 1, 1));
      await wHeld;
      x.proxy!.release();
      const [xOutcome] = await Promise.allSettled([xCommit]);
      w.proxy!.release();
      const [wOutcome] = await Promise.allSettled([wCommit]);

      const outcomes = { x: xOutcome!.status, w: wOutcome!.status };
      expect(Object.values(outcomes).filter((s) => s === "fulfilled")).toHaveLength(1);
      const winner = outcomes.x === "fulfilled" ? "x" : "w";
      const head = await x.store.get(id);
      expect(head).toMatchObject({ version: 1, status: winner === "x" ? "running" : "cancelling" });
      expect((await x.store.readEvents(id, 0)).map((e) => (e.payload as { writer: string }).writer)).toEqual([
        "creator",
        winner,
      ]);
      expect(await rawLog(id)).toEqual([
        [0, "creator"],
        [1, winner],
      ]);
    });
  });
}
