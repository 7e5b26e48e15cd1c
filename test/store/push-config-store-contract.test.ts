import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryPushConfigStore } from "../../src/store/memory-push-config-store.js";
import { MongoPushConfigStore } from "../../src/store/mongo-push-config-store.js";
import {
  initialDelivery,
  TooManyPushConfigsError,
  type PushConfigStore,
  type PushConfigWrite,
  type PushDeadLetter,
} from "../../src/store/push-config-store.js";
import "../support/mongo.js";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const at = (ms: number) => new Date(T0 + ms);
const iso = (ms: number) => at(ms).toISOString();

function write(taskId: string, configId: string, overrides: Partial<PushConfigWrite> = {}): PushConfigWrite {
  return {
    tenant: "t1",
    taskId,
    configId,
    url: "https://hooks.example.com/a2a",
    schemes: ["Bearer"],
    sealed: { v: 1, kid: "k1", iv: "aXY=", tag: "dGFn", data: "ZGF0YQ==" },
    tokenFingerprint: "0123456789abcdef0123456789abcdef",
    updatedAt: new Date().toISOString(),
    ...overrides,
  };
}

function letter(taskId: string, sequence: number, overrides: Partial<PushDeadLetter> = {}): PushDeadLetter {
  const now = Date.now();
  return {
    id: `${taskId}:${sequence}:c1`,
    tenant: "t1",
    taskId,
    configId: "c1",
    eventId: `${taskId}:${sequence}`,
    sequence,
    state: "completed",
    target: "https://hooks.example.com/a2a",
    reason: "max-attempts",
    attempts: 3,
    lastError: "webhook answered 503",
    eventAt: new Date(now).toISOString(),
    createdAt: new Date(now + sequence).toISOString(),
    expireAt: new Date(now + 60_000).toISOString(),
    ...overrides,
  };
}

/** One contract, every adapter. */
function contract(name: string, open: () => Promise<PushConfigStore>, close: () => Promise<void>) {
  describe(`PushConfigStore contract: ${name}`, () => {
    let store: PushConfigStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(close);

    it("creates with the given delivery, reads back, and an upsert replaces the target but keeps the cursor", async () => {
      const taskId = randomUUID();
      const created = await store.upsert(write(taskId, "c1"), initialDelivery(4, "working|"), 10);
      expect(created).toMatchObject({
        taskId,
        configId: "c1",
        revision: 1,
        delivery: { cursor: 4, lastStatusKey: "working|", attempts: 0, settled: false },
        expireAt: null,
      });
      expect(await store.get(taskId, "c1")).toEqual(created);

      expect(
        await store.updateDelivery(taskId, "c1", { revision: 1, cursor: 4 }, { ...created.delivery, cursor: 7 }, null),
      ).toBe(true);
      const replaced = await store.upsert(
        write(taskId, "c1", {
          url: "https://other.example.com/x",
          sealed: null,
          tokenFingerprint: null,
          schemes: null,
        }),
        initialDelivery(99, null),
        10,
      );
      expect(replaced).toMatchObject({
        url: "https://other.example.com/x",
        sealed: null,
        schemes: null,
        revision: 2,
        createdAt: created.createdAt,
      });
      expect(replaced.delivery.cursor).toBe(7);
      expect(await store.get(taskId, "missing")).toBeNull();
    });

    it("lists a task's configs oldest first and refuses one beyond the limit (an upsert of an existing id is fine)", async () => {
      const taskId = randomUUID();
      for (const [i, id] of ["b", "a", "c"].entries()) {
        await store.upsert(
          write(taskId, id, { updatedAt: new Date(Date.now() + i).toISOString() }),
          initialDelivery(-1, null),
          3,
        );
      }
      expect((await store.list(taskId)).map((c) => c.configId)).toEqual(["b", "a", "c"]);
      await expect(store.upsert(write(taskId, "d"), initialDelivery(-1, null), 3)).rejects.toBeInstanceOf(
        TooManyPushConfigsError,
      );
      await expect(store.upsert(write(taskId, "a"), initialDelivery(-1, null), 3)).resolves.toMatchObject({
        revision: 2,
      });
      expect(await store.list(randomUUID())).toEqual([]);
    });

    it("moves the delivery only for the expected revision and cursor", async () => {
      const taskId = randomUUID();
      const c = await store.upsert(write(taskId, "c1"), initialDelivery(-1, null), 10);
      const next = { ...c.delivery, cursor: 3 };
      expect(await store.updateDelivery(taskId, "c1", { revision: 1, cursor: 0 }, next, null)).toBe(false);
      expect(await store.updateDelivery(taskId, "c1", { revision: 2, cursor: -1 }, next, null)).toBe(false);
      expect(await store.updateDelivery(taskId, "c1", { revision: 1, cursor: -1 }, next, null)).toBe(true);
      expect(await store.updateDelivery(taskId, "c1", { revision: 1, cursor: -1 }, { ...next, cursor: 5 }, null)).toBe(
        false,
      );
      expect((await store.get(taskId, "c1"))?.delivery.cursor).toBe(3);
      expect(await store.updateDelivery(randomUUID(), "c1", { revision: 1, cursor: -1 }, next, null)).toBe(false);
    });

    it("lists unsettled configs in key order, page by page; settled and expired ones drop out", async () => {
      const prefix = randomUUID();
      const ids = [`${prefix}-1`, `${prefix}-2`, `${prefix}-3`];
      for (const id of ids) await store.upsert(write(id, "c1"), initialDelivery(-1, null), 10);
      await store.upsert(write(ids[0]!, "c2"), initialDelivery(-1, null), 10);
      // Settle one; expire another.
      await store.updateDelivery(
        ids[1]!,
        "c1",
        { revision: 1, cursor: -1 },
        { ...initialDelivery(8, "completed|"), settled: true },
        new Date(Date.now() + 60_000).toISOString(),
      );
      await store.updateDelivery(
        ids[2]!,
        "c1",
        { revision: 1, cursor: -1 },
        { ...initialDelivery(8, "completed|"), settled: true },
        new Date(Date.now() - 1).toISOString(),
      );
      expect(await store.get(ids[2]!, "c1")).toBeNull();
      const mine = async (after: { taskId: string; configId: string } | null, limit: number) =>
        (await store.listUnsettled(after, limit))
          .filter((c) => c.taskId.startsWith(prefix))
          .map((c) => `${c.taskId.slice(-1)}/${c.configId}`);
      expect(await mine(null, 10_000)).toEqual(["1/c1", "1/c2"]);
      expect(await mine({ taskId: ids[0]!, configId: "c1" }, 10_000)).toEqual(["1/c2"]);
    });

    it("delivery lease: a claim takes a free lease and answers the stored cursor; a live one blocks, an expired one is taken over with the next epoch", async () => {
      const taskId = randomUUID();
      const created = await store.upsert(write(taskId, "c1"), initialDelivery(2, null), 10);
      expect(created.lease).toBeUndefined();
      const a = await store.claimDelivery(taskId, "c1", "host-a", at(0), at(10_000));
      expect(a).toMatchObject({
        taskId,
        configId: "c1",
        revision: 1,
        delivery: { cursor: 2 },
        lease: { owner: "host-a", epoch: 1, expiresAt: iso(10_000) },
      });
      expect((await store.get(taskId, "c1"))?.lease).toEqual({ owner: "host-a", epoch: 1, expiresAt: iso(10_000) });
      expect(await store.claimDelivery(taskId, "c1", "host-b", at(9_999), at(19_999))).toBeNull();
      // Failover finds a lease that expired without being given back.
      const expired = async (ms: number) =>
        (await store.expiredDeliveryLeases(at(ms), 10_000)).filter((k) => k.taskId === taskId);
      expect(await expired(9_999)).toEqual([]);
      expect(await expired(10_000)).toEqual([{ taskId, configId: "c1" }]);
      // A holder moves the cursor; the instance that takes over continues from there.
      expect(
        await store.updateDelivery(
          taskId,
          "c1",
          { revision: 1, cursor: 2, lease: { owner: "host-a", epoch: 1 } },
          { ...created.delivery, cursor: 5 },
          null,
        ),
      ).toBe(true);
      const b = await store.claimDelivery(taskId, "c1", "host-b", at(10_000), at(20_000));
      expect(b).toMatchObject({
        delivery: { cursor: 5 },
        lease: { owner: "host-b", epoch: 2, expiresAt: iso(20_000) },
      });
      expect(await expired(15_000)).toEqual([]);
      // Only one of two racing claimers wins.
      const raced = await Promise.all([
        store.claimDelivery(taskId, "c1", "host-c", at(30_000), at(40_000)),
        store.claimDelivery(taskId, "c1", "host-d", at(30_000), at(40_000)),
      ]);
      expect(raced.filter((r) => r !== null)).toHaveLength(1);
      expect(raced.find((r) => r !== null)?.lease?.epoch).toBe(3);
      expect(await store.claimDelivery(randomUUID(), "c1", "host-a", at(0), at(10_000))).toBeNull();
    });

    it("delivery lease: the cursor move is fenced by owner and epoch; after a takeover the old holder's move is refused", async () => {
      const taskId = randomUUID();
      const created = await store.upsert(write(taskId, "c1"), initialDelivery(-1, null), 10);
      await store.claimDelivery(taskId, "c1", "host-a", at(0), at(10_000));
      await store.claimDelivery(taskId, "c1", "host-b", at(10_000), at(20_000));
      const next = { ...created.delivery, cursor: 3 };
      // The frozen-then-revived holder: right revision and cursor, lost lease.
      expect(
        await store.updateDelivery(
          taskId,
          "c1",
          { revision: 1, cursor: -1, lease: { owner: "host-a", epoch: 1 } },
          next,
          null,
        ),
      ).toBe(false);
      expect(
        await store.updateDelivery(
          taskId,
          "c1",
          { revision: 1, cursor: -1, lease: { owner: "host-b", epoch: 1 } },
          next,
          null,
        ),
      ).toBe(false);
      expect((await store.get(taskId, "c1"))?.delivery.cursor).toBe(-1);
      expect(
        await store.updateDelivery(
          taskId,
          "c1",
          { revision: 1, cursor: -1, lease: { owner: "host-b", epoch: 2 } },
          next,
          null,
        ),
      ).toBe(true);
      // The compare-and-set still holds under the lease, and an unfenced move (the console's retry-now) needs only it.
      expect(
        await store.updateDelivery(
          taskId,
          "c1",
          { revision: 1, cursor: -1, lease: { owner: "host-b", epoch: 2 } },
          { ...next, cursor: 4 },
          null,
        ),
      ).toBe(false);
      expect(
        await store.updateDelivery(taskId, "c1", { revision: 1, cursor: 3 }, { ...next, nextAttemptAt: null }, null),
      ).toBe(true);
      // Settling releases the lease; a settled config cannot be claimed.
      expect(
        await store.updateDelivery(
          taskId,
          "c1",
          { revision: 1, cursor: 3, lease: { owner: "host-b", epoch: 2 } },
          { ...next, cursor: 6, settled: true },
          new Date(Date.now() + 60_000).toISOString(),
        ),
      ).toBe(true);
      expect((await store.get(taskId, "c1"))?.lease).toEqual({ owner: null, epoch: 2, expiresAt: null });
      expect(await store.claimDelivery(taskId, "c1", "host-c", at(0), at(10_000))).toBeNull();
    });

    it("delivery lease: renew extends only the leases still held; release frees it for an immediate claim with the next epoch", async () => {
      const [t1, t2] = [randomUUID(), randomUUID()];
      await store.upsert(write(t1, "c1"), initialDelivery(-1, null), 10);
      await store.upsert(write(t2, "c1"), initialDelivery(-1, null), 10);
      await store.claimDelivery(t1, "c1", "host-a", at(0), at(10_000));
      await store.claimDelivery(t2, "c1", "host-a", at(0), at(10_000));
      await store.claimDelivery(t2, "c1", "host-b", at(10_000), at(20_000));
      const kept = await store.renewDeliveries(
        "host-a",
        [
          { taskId: t1, configId: "c1", epoch: 1 },
          { taskId: t2, configId: "c1", epoch: 1 },
        ],
        at(15_000),
      );
      expect(kept).toEqual([{ taskId: t1, configId: "c1" }]);
      expect((await store.get(t1, "c1"))?.lease).toEqual({ owner: "host-a", epoch: 1, expiresAt: iso(15_000) });
      expect((await store.get(t2, "c1"))?.lease).toEqual({ owner: "host-b", epoch: 2, expiresAt: iso(20_000) });
      expect(await store.renewDeliveries("host-a", [], at(15_000))).toEqual([]);
      // Renewed: still live at 12 s for another claimer.
      expect(await store.claimDelivery(t1, "c1", "host-b", at(12_000), at(22_000))).toBeNull();
      // A release by the old holder does nothing; the holder's frees it at once.
      await store.releaseDelivery(t2, "c1", { owner: "host-a", epoch: 1 });
      expect((await store.get(t2, "c1"))?.lease?.owner).toBe("host-b");
      await store.releaseDelivery(t2, "c1", { owner: "host-b", epoch: 2 });
      expect((await store.get(t2, "c1"))?.lease).toEqual({ owner: null, epoch: 2, expiresAt: null });
      expect((await store.expiredDeliveryLeases(at(60_000), 10_000)).filter((k) => k.taskId === t2)).toEqual([]);
      expect(await store.claimDelivery(t2, "c1", "host-c", at(11_000), at(21_000))).toMatchObject({
        lease: { owner: "host-c", epoch: 3 },
      });
      // A re-registration (upsert) keeps the lease.
      expect(
        (await store.upsert(write(t2, "c1", { url: "https://other.example.com/y" }), initialDelivery(-1, null), 10))
          .lease,
      ).toMatchObject({ owner: "host-c", epoch: 3 });
    });

    it("deletes one config or all of a task's", async () => {
      const taskId = randomUUID();
      await store.upsert(write(taskId, "c1"), initialDelivery(-1, null), 10);
      await store.upsert(write(taskId, "c2"), initialDelivery(-1, null), 10);
      expect(await store.delete(taskId, "c1")).toBe(true);
      expect(await store.delete(taskId, "c1")).toBe(false);
      expect(await store.deleteTask(taskId)).toBe(1);
      expect(await store.list(taskId)).toEqual([]);
    });

    it("keeps dead letters per tenant, newest first, idempotent by id, until they expire", async () => {
      const taskId = randomUUID();
      await store.addDeadLetter(letter(taskId, 1));
      await store.addDeadLetter(letter(taskId, 2));
      await store.addDeadLetter(letter(taskId, 2, { lastError: "changed" }));
      await store.addDeadLetter(letter(taskId, 3, { tenant: "t2", id: `${taskId}:3:c1` }));
      await store.addDeadLetter(letter(taskId, 4, { expireAt: new Date(Date.now() - 1).toISOString() }));
      const listed = await store.listDeadLetters("t1", { taskId, limit: 10 });
      expect(listed.map((d) => d.sequence)).toEqual([2, 1]);
      expect(listed[0]).toEqual(
        letter(taskId, 2, {
          expireAt: listed[0]!.expireAt,
          createdAt: listed[0]!.createdAt,
          eventAt: listed[0]!.eventAt,
        }),
      );
      expect((await store.listDeadLetters("t2", { taskId, limit: 10 })).map((d) => d.sequence)).toEqual([3]);
      expect(await store.listDeadLetters("t1", { taskId, limit: 1 })).toHaveLength(1);
    });
  });
}

contract(
  "memory",
  async () => new MemoryPushConfigStore(),
  async () => {},
);

const dbName = `push_contract_${randomUUID().slice(0, 8)}`;
let client: MongoClient;
contract(
  `mongodb (${inject("mongoBackend")})`,
  async () => {
    client = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoPushConfigStore(client.db(dbName));
    await store.init();
    return store;
  },
  async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  },
);
