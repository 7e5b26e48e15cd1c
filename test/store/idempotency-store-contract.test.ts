import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { IdempotencyKeyRef, IdempotencyRecord, IdempotencyStore } from "../../src/store/idempotency-store.js";
import { MemoryIdempotencyStore } from "../../src/store/memory-idempotency-store.js";
import { MongoIdempotencyStore } from "../../src/store/mongo-idempotency-store.js";
import { testDbName } from "../support/mongo.js";

const HOUR = 60 * 60 * 1000;

/** A clock the test moves; both adapters read "now" from it. */
const clock = { now: Date.now() };
const now = () => new Date(clock.now);

function ref(overrides: Partial<IdempotencyKeyRef> = {}): IdempotencyKeyRef {
  return { tenant: "t1", principal: "p1", operation: "POST /v1/runs", key: randomUUID(), ...overrides };
}

function record(r: IdempotencyKeyRef, overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    ...r,
    fingerprint: "f1",
    resourceId: randomUUID(),
    state: "reserved",
    createdAt: new Date(clock.now).toISOString(),
    expireAt: new Date(clock.now + 24 * HOUR).toISOString(),
    ...overrides,
  };
}

/** One contract, every adapter. */
function contract(name: string, open: () => Promise<IdempotencyStore>, close: () => Promise<void>) {
  describe(`IdempotencyStore contract: ${name}`, () => {
    let store: IdempotencyStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(close);

    it("reserves once; a second reserve returns the first record unchanged", async () => {
      const r = ref();
      const first = record(r);
      expect(await store.reserve(first)).toBeNull();
      const second = await store.reserve(record(r, { fingerprint: "f2", resourceId: "other" }));
      expect(second).toEqual(first);
      expect(await store.get(r)).toEqual(first);
      expect(await store.get(ref())).toBeNull();
    });

    it("complete stores the response every replay gets", async () => {
      const r = ref();
      const first = record(r);
      await store.reserve(first);
      const response = {
        status: 201,
        body: { runId: first.resourceId, status: "pending", eventsUrl: "/e", statusUrl: "/s" },
      };
      await store.complete(r, response);
      expect(await store.get(r)).toEqual({ ...first, state: "completed", response });
      expect(await store.reserve(record(r))).toEqual({ ...first, state: "completed", response });
    });

    it("release drops a reserved record, never a completed one", async () => {
      const reserved = ref();
      await store.reserve(record(reserved));
      await store.release(reserved);
      expect(await store.get(reserved)).toBeNull();
      expect(await store.reserve(record(reserved))).toBeNull();

      const completed = ref();
      await store.reserve(record(completed));
      await store.complete(completed, { status: 201, body: {} });
      await store.release(completed);
      expect((await store.get(completed))?.state).toBe("completed");
    });

    it("keys are private to (tenant, principal, operation)", async () => {
      const key = randomUUID();
      for (const r of [
        ref({ key }),
        ref({ key, tenant: "t2" }),
        ref({ key, principal: "p2" }),
        ref({ key, operation: "POST /v1/other" }),
      ]) {
        expect(await store.reserve(record(r))).toBeNull();
      }
    });

    it("concurrent reserves of one key: exactly one wins, all see the winner", async () => {
      const r = ref();
      const attempts = Array.from({ length: 8 }, (_, i) => record(r, { resourceId: `run-${i}` }));
      const results = await Promise.all(attempts.map((a) => store.reserve(a)));
      expect(results.filter((x) => x === null)).toHaveLength(1);
      const winner = attempts[results.indexOf(null)]!;
      for (const x of results) if (x) expect(x.resourceId).toBe(winner.resourceId);
    });

    it("an expired record reads as absent and its key can be used again", async () => {
      const r = ref();
      await store.reserve(record(r, { expireAt: new Date(clock.now + HOUR).toISOString() }));
      clock.now += 2 * HOUR;
      try {
        expect(await store.get(r)).toBeNull();
        const fresh = record(r, { resourceId: "new-run" });
        expect(await store.reserve(fresh)).toBeNull();
        expect((await store.get(r))?.resourceId).toBe("new-run");
      } finally {
        clock.now -= 2 * HOUR;
      }
    });
  });
}

contract(
  "memory",
  async () => new MemoryIdempotencyStore(now),
  async () => {},
);

let client: MongoClient;
const dbName = testDbName("idempotency");
contract(
  "mongodb",
  async () => {
    client = new MongoClient(inject("mongoUri"));
    await client.connect();
    const store = new MongoIdempotencyStore(client.db(dbName), now);
    await store.init();
    return store;
  },
  async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  },
);

describe("MongoIdempotencyStore indexes", () => {
  it("has a TTL index on expireAt, so records go away by themselves", async () => {
    const c = new MongoClient(inject("mongoUri"));
    await c.connect();
    const db = c.db(testDbName("idempotency_ttl"));
    try {
      await new MongoIdempotencyStore(db).init();
      const indexes = await db.collection("idempotency_keys").listIndexes().toArray();
      expect(indexes.find((i) => i["name"] === "idempotency_ttl")).toMatchObject({
        key: { expireAt: 1 },
        expireAfterSeconds: 0,
      });
    } finally {
      await db.dropDatabase();
      await c.close();
    }
  });
});
