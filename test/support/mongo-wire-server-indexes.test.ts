// The wire-protocol test server's index structures stay proportional to what a query reads, not to the
// collection: ranges seek in key order, TTL deletion reads its index, createIndexes builds only what is new,
// and the change-stream log is capped. Counts (keys examined), not times, are asserted.
import { MongoClient, MongoServerError, type Db, type Long } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDbName } from "./mongo.js";
import { compareValues } from "./mongo-wire-server/bson-compare.js";
import { ChangeLog } from "./mongo-wire-server/change-log.js";
import { Collection } from "./mongo-wire-server/collection-store.js";
import { startMongoWireServer, type MongoWireServer } from "./mongo-wire-server/server.js";
import { SortedKeys } from "./mongo-wire-server/sorted-keys.js";

describe("SortedKeys", () => {
  it("keeps its entries in key order through random inserts and removals, and seeks to a bound", () => {
    const keys = new SortedKeys<{ value: unknown; canonical: string }>();
    const reference = new Map<string, { value: unknown; canonical: string }>();
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let step = 0; step < 5000; step++) {
      const n = Math.floor(random() * 3000);
      const entry = random() < 0.2 ? { value: `s${n}`, canonical: `s:${n}` } : { value: n, canonical: `n:${n}` };
      if (random() < 0.3 && reference.has(entry.canonical)) {
        keys.remove(entry);
        reference.delete(entry.canonical);
      } else if (!reference.has(entry.canonical)) {
        keys.insert(entry);
        reference.set(entry.canonical, entry);
      }
    }
    const expected = [...reference.values()].sort((a, b) => compareValues(a.value, b.value)).map((e) => e.canonical);
    expect([...keys.from(() => false)].map((e) => e.canonical)).toEqual(expected);
    expect(keys.size).toBe(reference.size);
    const fromHundred = [...keys.from((e) => compareValues(e.value, 100) < 0)].map((e) => e.canonical);
    expect(fromHundred).toEqual(expected.filter((c) => !c.startsWith("n:") || Number(c.slice(2)) >= 100));
  });
});

describe("ChangeLog", () => {
  it("keeps at least the last 100 000 changes, trimmed in chunks, and refuses to resume before them", () => {
    const log = new ChangeLog();
    for (let i = 0; i < 115_000; i++) log.record("db", "c", "insert", { _id: i });
    expect(log.after(log.position - 100_000)).toHaveLength(100_000);
    expect(() => log.after(0)).toThrow(/no longer be in the oplog/);
  });
});

describe("Collection.createIndexes", () => {
  it("is all-or-nothing: a spec that fails on the data leaves the earlier ones of the command uncreated", () => {
    const collection = new Collection("db", "c");
    for (let i = 0; i < 10; i++) collection.insert({ _id: i, a: i, b: i % 2 });
    expect(() =>
      collection.createIndexes([
        { key: { a: 1 }, name: "a" },
        { key: { b: 1 }, name: "b", unique: true },
      ]),
    ).toThrow(/E11000/);
    expect(collection.indexes.map((index) => index.name)).toEqual(["_id_"]);
    expect(
      collection.createIndexes([
        { key: { a: 1 }, name: "a" },
        { key: { a: 1 }, name: "a" },
      ]),
    ).toBe(1);
    expect(collection.createIndexes([{ key: { a: 1 }, name: "a" }])).toBe(0);
  });
});

describe("wire-protocol test server at scale", () => {
  let server: MongoWireServer;
  let client: MongoClient;
  let db: Db;
  const status = async () => {
    const q = (await db.admin().command({ serverStatus: 1 }))["metrics"]["queryExecutor"] as {
      scanned: Long;
      scannedObjects: Long;
    };
    return { keys: Number(q.scanned), docs: Number(q.scannedObjects) };
  };
  /** Keys and documents one operation examined. */
  const examined = async (run: () => Promise<unknown>) => {
    const before = await status();
    await run();
    const after = await status();
    return { keys: after.keys - before.keys, docs: after.docs - before.docs };
  };

  beforeAll(async () => {
    server = await startMongoWireServer({ port: 0, ttlMonitorIntervalMs: 100, log: () => {} });
    client = await MongoClient.connect(server.uri);
    db = client.db(testDbName("wire_scale"));
  });
  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  it("seeks a range in key order: the keys it examines are those in the range (plus the one that ends it)", async () => {
    const items = db.collection<{ _id: number; n: number | string | null }>("items");
    await items.createIndex({ n: 1 }, { name: "n" });
    await items.insertMany(
      Array.from({ length: 3000 }, (_, i) => ({ _id: i, n: i % 3 === 0 ? `s${i}` : i % 7 === 0 ? null : i })),
    );
    const cases: Array<[Record<string, unknown>, number]> = [
      [{ $gte: 100, $lt: 110 }, 11],
      [{ $gt: 2990 }, 6],
      [{ $lte: 5 }, 5],
      [{ $gte: "s2990", $lte: "s2999" }, 5],
      [{ $gte: 100, $lt: 110, $ne: 101 }, 11],
    ];
    for (const [range, maxKeys] of cases) {
      let found: Array<{ _id: number }> = [];
      const cost = await examined(async () => (found = await items.find({ n: range }).toArray()));
      // The same query as a collection scan (the planner does not read inside `$or`).
      const scanned = await items.find({ $or: [{ n: range }] }).toArray();
      expect(
        found.map((d) => d._id).sort((a, b) => a - b),
        JSON.stringify(range),
      ).toEqual(scanned.map((d) => d._id).sort((a, b) => a - b));
      expect(found.length, JSON.stringify(range)).toBeGreaterThan(0);
      expect(cost.keys, JSON.stringify(range)).toBeLessThanOrEqual(maxKeys);
      expect(cost.docs).toBe(found.length);
    }
  });

  it("deletes expired documents through the TTL index, leaving the others", async () => {
    const sessions = db.collection<{ _id: number; seen: Date | null | string }>("sessions");
    await sessions.createIndex({ seen: 1 }, { expireAfterSeconds: 0, name: "ttl" });
    const now = Date.now();
    await sessions.insertMany(
      Array.from({ length: 2000 }, (_, i) => ({
        _id: i,
        seen:
          i < 10
            ? new Date(now - 1000 * (i + 1))
            : i % 2 === 0
              ? null
              : i % 3 === 0
                ? "later"
                : new Date(now + 3_600_000 + i),
      })),
    );
    for (let waited = 0; waited < 5000 && (await sessions.countDocuments()) > 1990; waited += 50)
      await new Promise((r) => setTimeout(r, 50));
    expect(await sessions.countDocuments()).toBe(1990);
    expect(await sessions.countDocuments({ _id: { $lt: 10 } })).toBe(0);
  });

  it("re-declares the indexes of a large collection without a rebuild, and still refuses a conflicting one", async () => {
    const big = db.collection<{ _id: number; k: number }>("big");
    await big.createIndexes([{ key: { k: 1 }, name: "k" }]);
    await big.insertMany(Array.from({ length: 20_000 }, (_, i) => ({ _id: i, k: i % 10 })));
    const again = await db.command({ createIndexes: "big", indexes: [{ key: { k: 1 }, name: "k" }] });
    expect(again).toMatchObject({ numIndexesBefore: 2, numIndexesAfter: 2, note: "all indexes already exist" });
    const refused = await db
      .command({
        createIndexes: "big",
        indexes: [
          { key: { _id: 1, k: 1 }, name: "id_k" },
          { key: { k: 1 }, name: "k_unique", unique: true },
        ],
      })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(MongoServerError);
    expect((await big.indexes()).map((index) => index.name)).toEqual(["_id_", "k"]);
  });
});
