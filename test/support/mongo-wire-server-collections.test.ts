// The wire-protocol test server, through the real `mongodb` driver, as mongod: unique and other indexes,
// aggregates, deletes and drops, malformed commands, and a busy connection pool. As in mongo-wire-server.test.ts,
// `behavesLikeMongod` runs once against a server started here and once against the run's backend
// (`inject("mongoUri")`), so with MONGODB_URI set the assertions are checked against mongod too.

import { Long, MongoBulkWriteError, MongoClient, type Db, type MongoServerError } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testDbName } from "./mongo.js";
import { id, expectServerError } from "./mongo-wire-server-test-helpers.js";
import { startMongoWireServer, type MongoWireServer } from "./mongo-wire-server/server.js";

function behavesLikeMongod(label: string, uri: () => string): void {
  describe(label, () => {
    let client: MongoClient;
    let db: Db;

    beforeAll(async () => {
      client = await MongoClient.connect(uri(), { serverSelectionTimeoutMS: 10_000 });
      db = client.db(testDbName("wire_server"));
    });
    afterAll(async () => {
      await db?.dropDatabase();
      await client?.close();
    });

    it("enforces unique indexes with E11000 errors", async () => {
      const users = db.collection("users");
      expect(await users.createIndex({ email: 1 }, { unique: true })).toBe("email_1");
      // Partial: documents without a tenant would otherwise all share the key {tenant: null, key: null}.
      expect(
        await users.createIndex(
          { tenant: 1, key: -1 },
          { unique: true, name: "tenant_key", partialFilterExpression: { tenant: { $exists: true } } },
        ),
      ).toBe("tenant_key");
      await users.insertOne({ _id: id(1), email: "a@x", tenant: "t1", key: "k1" });
      await users.insertOne({ _id: id(2), email: "b@x", tenant: "t1", key: "k2" });

      const dupInsert = await expectServerError(users.insertOne({ email: "a@x" }), 11000);
      expect(dupInsert.message).toBe(
        `E11000 duplicate key error collection: ${db.databaseName}.users index: email_1 dup key: { email: "a@x" }`,
      );
      expect(dupInsert.keyPattern).toEqual({ email: 1 });
      expect(dupInsert.keyValue).toEqual({ email: "a@x" });

      const dupId = await expectServerError(users.insertOne({ _id: id(1), email: "c@x" }), 11000);
      expect(dupId.message).toContain("index: _id_ dup key: { _id: 1 }");

      const dupCompound = await expectServerError(users.insertOne({ email: "d@x", tenant: "t1", key: "k2" }), 11000);
      expect(dupCompound.message).toContain('index: tenant_key dup key: { tenant: "t1", key: "k2" }');
      expect(dupCompound.keyValue).toEqual({ tenant: "t1", key: "k2" });
      await users.insertOne({ email: "e@x", tenant: "t2", key: "k2" }); // another tenant: fine

      const dupUpdate = await expectServerError(
        users.updateOne({ _id: id(2) }, { $set: { email: "a@x", touched: true } }),
        11000,
      );
      expect(dupUpdate.keyValue).toEqual({ email: "a@x" });
      expect(await users.findOne({ _id: id(2) })).toEqual({ _id: 2, email: "b@x", tenant: "t1", key: "k2" });

      await expectServerError(
        users.updateOne({ email: "zzz" }, { $set: { tenant: "t1", key: "k1" } }, { upsert: true }),
        11000,
      );
      await expectServerError(users.findOneAndUpdate({ _id: id(2) }, { $set: { email: "a@x" } }), 11000);
      expect(await users.countDocuments({})).toBe(3);

      // Ordered inserts stop at the first error; unordered ones carry on.
      const ordered = await users
        .insertMany([{ email: "f@x" }, { email: "a@x" }, { email: "g@x" }])
        .catch((e: unknown) => e);
      expect(ordered).toBeInstanceOf(MongoBulkWriteError);
      expect((ordered as MongoBulkWriteError).insertedCount).toBe(1);
      const unordered = await users
        .insertMany([{ email: "h@x" }, { email: "a@x" }, { email: "i@x" }], { ordered: false })
        .catch((e: unknown) => e);
      expect((unordered as MongoBulkWriteError).insertedCount).toBe(2);
      expect((unordered as MongoBulkWriteError).writeErrors).toHaveLength(1);
      expect(await users.countDocuments({ email: { $in: ["f@x", "g@x", "h@x", "i@x"] } })).toBe(3);

      // Sparse unique indexes ignore documents without the field.
      await users.createIndex({ nick: 1 }, { unique: true, sparse: true });
      await users.insertMany([{ email: "j@x" }, { email: "k@x" }, { email: "l@x", nick: "n" }]);
      await expectServerError(users.insertOne({ email: "m@x", nick: "n" }), 11000);
      // Without partial/sparse, missing fields index as null, and two such documents collide.
      const pairs = db.collection("pairs");
      await pairs.createIndex({ a: 1, b: 1 }, { unique: true });
      await pairs.insertOne({ other: 1 });
      const nullKeys = await expectServerError(pairs.insertOne({ other: 2 }), 11000);
      expect(nullKeys.keyValue).toEqual({ a: null, b: null });
      expect(nullKeys.message).toContain("dup key: { a: null, b: null }");
      // A unique index cannot be built over existing duplicates.
      await expectServerError(users.createIndex({ tenant: 1 }, { unique: true }), 11000);
    });

    it("creates, lists and drops indexes", async () => {
      const coll = db.collection("indexed");
      expect(await coll.createIndex({ a: 1 })).toBe("a_1");
      expect(await coll.createIndex({ a: 1 })).toBe("a_1"); // identical: no-op
      await coll.createIndex({ createdAt: 1 }, { expireAfterSeconds: 3600 });
      await coll.createIndex(
        { b: 1 },
        { name: "b_partial", unique: true, partialFilterExpression: { b: { $exists: true } } },
      );
      const indexes = await coll.listIndexes().toArray();
      expect(indexes.map((i) => i.name)).toEqual(["_id_", "a_1", "createdAt_1", "b_partial"]);
      expect(indexes[0]).toMatchObject({ key: { _id: 1 }, name: "_id_" });
      expect(indexes[2]).toMatchObject({ key: { createdAt: 1 }, expireAfterSeconds: 3600 });
      expect(indexes[3]).toMatchObject({ unique: true, partialFilterExpression: { b: { $exists: true } } });
      expect(await coll.indexExists("a_1")).toBe(true);

      const conflict = await coll.createIndex({ a: 1 }, { name: "a_1", unique: true }).catch((e: unknown) => e);
      expect([85, 86]).toContain((conflict as MongoServerError).code);
      const sameName = await coll.createIndex({ z: 1 }, { name: "a_1" }).catch((e: unknown) => e);
      expect((sameName as MongoServerError).code).toBe(86);

      await coll.dropIndex("a_1");
      expect((await coll.listIndexes().toArray()).map((i) => i.name)).toEqual(["_id_", "createdAt_1", "b_partial"]);
      await expectServerError(coll.dropIndex("a_1"), 27);
      await expectServerError(db.collection("never_created").listIndexes().toArray(), 26);
    });

    it("aggregates", async () => {
      const sales = db.collection("sales");
      await sales.insertMany([
        { item: "a", qty: 2, price: 10, tags: ["x", "y"] },
        { item: "b", qty: 1, price: 20, tags: ["y"] },
        { item: "a", qty: 5, price: 10, tags: [] },
        { item: "c", qty: 3, price: 5 },
      ]);
      const grouped = await sales
        .aggregate([
          { $match: { qty: { $gte: 1 } } },
          { $sort: { qty: 1 } },
          {
            $group: {
              _id: "$item",
              total: { $sum: "$qty" },
              n: { $sum: 1 },
              min: { $min: "$qty" },
              max: { $max: "$qty" },
              first: { $first: "$qty" },
              last: { $last: "$qty" },
              all: { $push: "$qty" },
            },
          },
          { $sort: { _id: 1 } },
        ])
        .toArray();
      expect(grouped).toEqual([
        { _id: "a", total: 7, n: 2, min: 2, max: 5, first: 2, last: 5, all: [2, 5] },
        { _id: "b", total: 1, n: 1, min: 1, max: 1, first: 1, last: 1, all: [1] },
        { _id: "c", total: 3, n: 1, min: 3, max: 3, first: 3, last: 3, all: [3] },
      ]);
      expect(await sales.aggregate([{ $group: { _id: null, qty: { $sum: "$qty" } } }]).toArray()).toEqual([
        { _id: null, qty: 11 },
      ]);
      expect(await sales.aggregate([{ $match: { item: "a" } }, { $count: "n" }]).toArray()).toEqual([{ n: 2 }]);
      expect(await sales.aggregate([{ $match: { item: "zzz" } }, { $count: "n" }]).toArray()).toEqual([]);
      expect(
        await sales.aggregate([{ $unwind: "$tags" }, { $project: { _id: 0, item: 1, tags: 1 } }]).toArray(),
      ).toEqual([
        { item: "a", tags: "x" },
        { item: "a", tags: "y" },
        { item: "b", tags: "y" },
      ]);
      expect(
        await sales
          .aggregate([{ $sort: { qty: -1 } }, { $skip: 1 }, { $limit: 2 }, { $project: { _id: 0, qty: 1 } }])
          .toArray(),
      ).toEqual([{ qty: 3 }, { qty: 2 }]);
      expect(await sales.distinct("item")).toEqual(["a", "b", "c"]);
      expect(await sales.distinct("tags", { item: "a" })).toEqual(["x", "y"]);
      await expectServerError(sales.aggregate([{ $bogus: {} }]).toArray(), 40324);
    });

    it("deletes, drops collections and databases", async () => {
      const scratch = client.db(testDbName("wire_scratch"));
      const coll = scratch.collection("things");
      await coll.insertMany([{ k: 1 }, { k: 1 }, { k: 2 }, { k: 3 }]);
      expect((await coll.deleteOne({ k: 1 })).deletedCount).toBe(1);
      expect((await coll.deleteMany({ k: { $lte: 2 } })).deletedCount).toBe(2);
      expect((await coll.deleteMany({ k: 99 })).deletedCount).toBe(0);
      expect(await coll.find({}, { projection: { _id: 0 } }).toArray()).toEqual([{ k: 3 }]);

      await scratch.createCollection("explicit");
      await scratch.collection("explicit").insertOne({ kept: true });
      await scratch.createCollection("explicit"); // MongoDB 7.0+: same options, so no error (and no reset)
      expect(await scratch.collection("explicit").countDocuments()).toBe(1);
      const names = (await scratch.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
      expect(names).toEqual(["explicit", "things"]);
      expect(await scratch.listCollections({ name: "things" }).toArray()).toHaveLength(1);
      expect(await scratch.dropCollection("explicit")).toBe(true);

      const listed = await client.db("admin").admin().listDatabases();
      expect(listed.databases.map((d) => d.name)).toContain(scratch.databaseName);
      expect(await scratch.dropDatabase()).toBe(true);
      const after = await client.db("admin").admin().listDatabases();
      expect(after.databases.map((d) => d.name)).not.toContain(scratch.databaseName);
      expect(await coll.countDocuments()).toBe(0);
      await expectServerError(client.db("admin").command({ listDatabases: 1, filter: "nope" }), 14);
    });

    it("answers unknown or malformed commands with errors and keeps serving", async () => {
      const unknown = await expectServerError(db.command({ noSuchCommand: 1 }), 59);
      expect(unknown.codeName).toBe("CommandNotFound");
      expect(unknown.message).toBe("no such command: 'noSuchCommand'");
      await expectServerError(db.command({ find: "people", filter: "not a document" }), 14);
      expect((await expectServerError(db.command({ insert: "people", documents: [] }), 16)).codeName).toBe(
        "InvalidLength",
      );
      await expectServerError(db.command({ aggregate: "people", pipeline: [] }), 9);
      await expectServerError(
        db
          .collection("people")
          .find({ $expr: { $bogus: 1 } })
          .toArray(),
        168,
      );
      await expectServerError(db.command({ insert: "people", documents: [{ ok: 1 }, 5] }), 14);
      expect(await db.collection("people").countDocuments({ ok: 1 })).toBe(0); // nothing of that batch was written
      await expectServerError(db.command({ getMore: Long.fromNumber(12345), collection: "people" }), 43);
      expect(await db.command({ ping: 1 })).toMatchObject({ ok: 1 });
    });

    it("serves many concurrent operations on a connection pool", async () => {
      let connections = 0;
      const pooled = await MongoClient.connect(uri(), { maxPoolSize: 20 });
      pooled.on("connectionCreated", () => connections++);
      try {
        const counter = pooled.db(db.databaseName).collection("counter");
        await counter.insertOne({ _id: id("c"), n: 0 });
        await Promise.all([
          ...Array.from({ length: 100 }, () => counter.updateOne({ _id: id("c") }, { $inc: { n: 1 } })),
          ...Array.from({ length: 50 }, (_, i) => counter.insertOne({ i })),
          ...Array.from({ length: 50 }, () => counter.find({}).toArray()),
        ]);
        expect((await counter.findOne({ _id: id("c") }))?.n).toBe(100);
        expect(await counter.countDocuments({ i: { $exists: true } })).toBe(50);
        expect(connections).toBeGreaterThan(1);
      } finally {
        await pooled.close();
      }
    });
  });
}

describe("wire-protocol test server", () => {
  let server: MongoWireServer;
  beforeAll(async () => {
    server = await startMongoWireServer({ port: 0, log: () => {} });
  });
  afterAll(async () => {
    await server?.close();
  });

  behavesLikeMongod("a dedicated server behaves like mongod", () => server.uri);
});

behavesLikeMongod(`the test run's MongoDB backend (${inject("mongoBackend")})`, () => inject("mongoUri"));
