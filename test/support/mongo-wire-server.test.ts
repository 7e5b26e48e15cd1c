// Tests of the in-process MongoDB wire-protocol test server, through the real `mongodb` driver.
//
// `behavesLikeMongod` holds the checks that must pass against real MongoDB too: it runs once
// against a server started here, and once against the run's backend (`inject("mongoUri")`).
// With MONGODB_URI set, the second run proves the assertions describe mongod's behaviour, so
// the test server and mongod agree on them.

import net from "node:net";
import {
  BSON,
  Double,
  Int32,
  Long,
  MongoBulkWriteError,
  MongoClientBulkWriteError,
  MongoClient,
  MongoServerError,
  ObjectId,
  type CommandSucceededEvent,
  type Db,
  type Document,
  type UpdateFilter,
} from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testDbName } from "./mongo.js";
import type { CommandContext } from "./mongo-wire-server/command-context.js";
import { runCommand } from "./mongo-wire-server/commands.js";
import { startMongoWireServer, type MongoWireServer } from "./mongo-wire-server/server.js";

/** Test documents use plain string / number _ids; the driver's typings assume ObjectId. */
const id = (value: string | number): ObjectId => value as unknown as ObjectId;
/** The driver's update typings reject some valid updates on untyped collections. */
const ops = (spec: Document): UpdateFilter<Document> => spec;

async function expectServerError(promise: Promise<unknown>, code: number): Promise<MongoServerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected the operation to fail").toBeInstanceOf(MongoServerError);
  expect((error as MongoServerError).code, (error as Error).message).toBe(code);
  return error as MongoServerError;
}

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

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

    it("answers the handshake and ping", async () => {
      expect(await db.command({ ping: 1 })).toMatchObject({ ok: 1 });
      const hello = await client.db("admin").command({ hello: 1 });
      expect(hello.isWritablePrimary).toBe(true);
      expect(hello.maxWireVersion).toBeGreaterThanOrEqual(8); // the driver's minimum (MongoDB 4.2)
      expect(hello.maxBsonObjectSize).toBe(16 * 1024 * 1024);
      expect(hello.localTime).toBeInstanceOf(Date);
      expect(typeof hello.connectionId).toBe("number");
      const legacy = await client.db("admin").command({ isMaster: 1 });
      expect(legacy.ismaster).toBe(true);
      const build = await client.db("admin").command({ buildInfo: 1 });
      expect(build.version).toMatch(/^\d+\.\d+\.\d+/);
    });

    it("inserts and finds with sort, skip, limit and projections", async () => {
      const people = db.collection("people");
      const one = await people.insertOne({ name: "ada", age: 36, tags: ["math", "engines"], events: [1, 2, 3, 4, 5] });
      expect(one.insertedId).toBeInstanceOf(ObjectId);
      const many = await people.insertMany([
        { _id: id("b"), name: "bob", age: 25, events: [10, 20, 30], address: { city: "Oslo", zip: "0150" } },
        { _id: id("c"), name: "cy", age: 41, events: [], address: { city: "Rome", zip: "00100" } },
        { _id: id("d"), name: "dee", events: [7] },
      ]);
      expect(many.insertedCount).toBe(3);

      const byAge = await people.find({}, { sort: { age: 1 }, projection: { _id: 0, name: 1 } }).toArray();
      // A missing field sorts like null: before every number.
      expect(byAge).toEqual([{ name: "dee" }, { name: "bob" }, { name: "ada" }, { name: "cy" }]);
      const page = await people
        .find({ age: { $exists: true } })
        .sort({ age: -1 })
        .skip(1)
        .limit(1)
        .toArray();
      expect(page.map((p) => p.name)).toEqual(["ada"]);

      expect(await people.findOne({ _id: id("b") }, { projection: { events: 0, address: 0 } })).toEqual({
        _id: "b",
        name: "bob",
        age: 25,
      });
      expect(await people.findOne({ name: "bob" }, { projection: { "address.city": 1 } })).toEqual({
        _id: "b",
        address: { city: "Oslo" },
      });
      // $slice alone keeps every other field.
      expect(await people.findOne({ name: "ada" }, { projection: { _id: 0, events: { $slice: 2 } } })).toEqual({
        name: "ada",
        age: 36,
        tags: ["math", "engines"],
        events: [1, 2],
      });
      expect((await people.findOne({ name: "ada" }, { projection: { events: { $slice: -2 } } }))?.events).toEqual([
        4, 5,
      ]);
      expect((await people.findOne({ name: "ada" }, { projection: { events: { $slice: [1, 2] } } }))?.events).toEqual([
        2, 3,
      ]);
      expect((await people.findOne({ name: "ada" }, { projection: { events: { $slice: [-2, 5] } } }))?.events).toEqual([
        4, 5,
      ]);
      // Combined with an inclusion, only the included fields and the sliced array remain.
      expect(
        await people.findOne({ name: "ada" }, { projection: { _id: 0, name: 1, events: { $slice: -1 } } }),
      ).toEqual({ name: "ada", events: [5] });
      const mixed = await people
        .find({}, { projection: { name: 1, age: 0 } })
        .toArray()
        .catch((e: unknown) => e);
      expect(mixed).toBeInstanceOf(MongoServerError);
      expect((mixed as MongoServerError).code).toBe(31254);
    });

    it("generates _id on the server when a document has none", async () => {
      await db.command({ insert: "generated", documents: [{ a: 1 }] });
      const doc = await db.collection("generated").findOne({ a: 1 });
      expect(doc?._id).toBeInstanceOf(ObjectId);
      expect(Object.keys(doc ?? {})).toEqual(["_id", "a"]);
    });

    it("matches queries with MongoDB semantics", async () => {
      const items = db.collection("items");
      await items.insertMany([
        {
          _id: id(1),
          n: 1,
          tags: ["a", "b"],
          sub: { x: 1, y: 2 },
          list: [
            { k: "p", v: 1 },
            { k: "q", v: 2 },
          ],
          s: "Apple",
        },
        { _id: id(2), n: 2.5, tags: ["b", "c"], sub: { y: 2, x: 1 }, list: [{ k: "p", v: 3 }], s: "banana", nul: null },
        { _id: id(3), n: Long.fromNumber(3), tags: [], s: "cherry", when: new Date("2024-01-01T00:00:00Z") },
        { _id: id(4), n: "4", s: "apricot", when: new Date("2025-01-01T00:00:00Z") },
      ]);
      const ids = async (filter: Document, options: Document = {}) =>
        (await items.find(filter, { ...options, projection: { _id: 1 } }).toArray()).map((d) => d._id);

      expect(await ids({ tags: "b" })).toEqual([1, 2]); // an array element
      expect(await ids({ tags: ["a", "b"] })).toEqual([1]); // the whole array
      expect(await ids({ sub: { x: 1, y: 2 } })).toEqual([1]); // whole documents: field order matters
      expect(await ids({ "sub.x": 1 })).toEqual([1, 2]);
      expect(await ids({ "list.k": "q" })).toEqual([1]); // through an array of documents
      expect(await ids({ "list.1.v": 2 })).toEqual([1]);
      expect(await ids({ list: { $elemMatch: { k: "p", v: { $gt: 2 } } } })).toEqual([2]);
      expect(await ids({ "list.k": "p", "list.v": 2 })).toEqual([1]); // without $elemMatch, any elements
      expect(await ids({ n: { $gte: 2 } })).toEqual([2, 3]); // int/double/long compare; "4" is a string
      expect(await ids({ n: { $in: [1, 3] } })).toEqual([1, 3]);
      expect(await ids({ n: { $nin: [1, 3] } })).toEqual([2, 4]);
      expect(await ids({ nul: null })).toEqual([1, 2, 3, 4]); // null matches missing too
      expect(await ids({ nul: { $exists: true } })).toEqual([2]);
      expect(await ids({ nul: { $ne: null } })).toEqual([]);
      expect(await ids({ tags: { $size: 0 } })).toEqual([3]);
      expect(await ids({ n: { $type: "string" } })).toEqual([4]);
      expect(await ids({ n: { $type: "number" } })).toEqual([1, 2, 3]);
      expect(await ids({ s: { $regex: "^ap", $options: "i" } })).toEqual([1, 4]);
      expect(await ids({ s: /an/ })).toEqual([2]);
      expect(await ids({ when: { $lt: new Date("2024-06-01T00:00:00Z") } })).toEqual([3]);
      expect(await ids({ $or: [{ n: 1 }, { s: "cherry" }] })).toEqual([1, 3]);
      expect(await ids({ $nor: [{ n: 1 }, { s: "cherry" }] })).toEqual([2, 4]);
      expect(await ids({ $and: [{ tags: "b" }, { tags: "c" }] })).toEqual([2]);
      expect(await ids({ n: { $not: { $gt: 1 } } })).toEqual([1, 4]);
      expect(await ids({ tags: { $all: ["b", "a"] } })).toEqual([1]);
      expect(await ids({}, { sort: { n: -1 } })).toEqual([4, 3, 2, 1]); // strings sort after numbers
      expect(await ids({}, { sort: { tags: 1, _id: 1 } })).toEqual([3, 4, 1, 2]); // arrays sort by their smallest element

      await expectServerError(items.find({ n: { $foo: 1 } }).toArray(), 2);
      await expectServerError(items.find({ $foo: [] }).toArray(), 2);
    });

    it("returns cursors in batches", async () => {
      const many = db.collection("many");
      await many.insertMany(Array.from({ length: 250 }, (_, i) => ({ i, pad: "x".repeat(10) })));
      const batches: number[] = [];
      const monitored = await MongoClient.connect(uri(), { monitorCommands: true });
      monitored.on("commandSucceeded", (event: CommandSucceededEvent) => {
        const cursor = (event.reply as Document).cursor as Document | undefined;
        if (cursor && (event.commandName === "find" || event.commandName === "getMore")) {
          batches.push(((cursor.firstBatch ?? cursor.nextBatch) as unknown[]).length);
        }
      });
      try {
        const docs = await monitored
          .db(db.databaseName)
          .collection("many")
          .find({}, { batchSize: 50, sort: { i: -1 } })
          .toArray();
        expect(docs.map((d) => d.i)).toEqual(Array.from({ length: 250 }, (_, i) => 249 - i));
        expect(batches.filter((n) => n > 0)).toEqual([50, 50, 50, 50, 50]);

        // A cursor can also be read lazily, and killed before the end.
        const cursor = monitored
          .db(db.databaseName)
          .collection("many")
          .find({ i: { $lt: 120 } }, { batchSize: 30 });
        expect((await cursor.next())?.i).toBe(0);
        await cursor.close();
      } finally {
        await monitored.close();
      }
      expect(await many.countDocuments({ i: { $gte: 100 } })).toBe(150);
      expect(await many.countDocuments({}, { skip: 10, limit: 5 })).toBe(5);
      expect(await many.estimatedDocumentCount()).toBe(250);
    });

    it("applies every update operator", async () => {
      const docs = db.collection("updates");
      await docs.insertOne({
        _id: id("u"),
        name: "x",
        count: 1,
        gone: true,
        list: [1, 2, 3],
        set: ["a"],
        pulls: [1, 2, 3, 2, { k: 1 }, { k: 2 }],
        low: 5,
        high: 5,
      });
      const result = await docs.updateOne(
        { _id: id("u") },
        ops({
          $set: { name: "y", "deep.a.b": 1 },
          $unset: { gone: "" },
          $inc: { count: 2, fresh: 5 },
          $push: { list: { $each: [4, 5, 6], $slice: -4 }, first: { $each: ["p", "q", "r"], $slice: 2 } },
          $addToSet: { set: { $each: ["a", "b"] } },
          $pull: { pulls: { $in: [2, { k: 1 }] } },
          $setOnInsert: { onlyOnInsert: true },
          $min: { low: 3, newLow: 1 },
          $max: { high: 3 },
          $currentDate: { touched: true },
        }),
      );
      expect(result).toMatchObject({ matchedCount: 1, modifiedCount: 1, upsertedCount: 0 });
      const doc = await docs.findOne({ _id: id("u") });
      expect(doc?.touched).toBeInstanceOf(Date);
      expect(Math.abs(Date.now() - (doc?.touched as Date).getTime())).toBeLessThan(60_000);
      expect({ ...doc, touched: undefined }).toEqual({
        _id: "u",
        name: "y",
        count: 3,
        list: [3, 4, 5, 6],
        set: ["a", "b"],
        pulls: [1, 3, { k: 2 }],
        low: 3,
        high: 5,
        deep: { a: { b: 1 } },
        fresh: 5,
        first: ["p", "q"],
        newLow: 1,
        touched: undefined,
      });

      await docs.updateOne(
        { _id: id("u") },
        ops({ $pull: { pulls: { k: 2 } }, $push: { list: { $each: [0], $position: 0 } } }),
      );
      expect(await docs.findOne({ _id: id("u") }, { projection: { _id: 0, pulls: 1, list: 1 } })).toEqual({
        pulls: [1, 3],
        list: [0, 3, 4, 5, 6],
      });

      // Setting a value to what it already is modifies nothing.
      expect(await docs.updateOne({ _id: id("u") }, { $set: { name: "y" } })).toMatchObject({
        matchedCount: 1,
        modifiedCount: 0,
      });
      expect(await docs.updateOne({ _id: id("nope") }, { $set: { name: "z" } })).toMatchObject({
        matchedCount: 0,
        modifiedCount: 0,
      });

      // Numeric types are kept and promoted like mongod: int + int overflow -> long, int + double -> double.
      await docs.insertOne({ _id: id("n"), i: new Int32(2147483647), j: new Int32(1), k: new Int32(7) });
      await docs.updateOne({ _id: id("n") }, { $inc: { i: 1, j: 1.5, k: 1 } });
      const typed = await docs.findOne({ _id: id("n") }, { promoteValues: false });
      expect(typed?.i).toBeInstanceOf(Long);
      expect((typed?.i as Long).toNumber()).toBe(2147483648);
      expect(typed?.j).toBeInstanceOf(Double);
      expect(typed?.k).toBeInstanceOf(Int32);

      // Replacement keeps _id; changing _id is refused.
      await docs.replaceOne({ _id: id("n") }, { replaced: true });
      expect(await docs.findOne({ _id: id("n") })).toEqual({ _id: "n", replaced: true });
      await expectServerError(docs.updateOne({ _id: id("n") }, { $set: { _id: "other" } }), 66);

      // Invalid updates fail as write errors and change nothing.
      await expectServerError(docs.updateOne({ _id: id("u") }, { $inc: { name: 1 } }), 14);
      await expectServerError(docs.updateOne({ _id: id("u") }, { $set: { count: 1 }, $inc: { count: 1 } }), 40);
      await expectServerError(docs.updateOne({ _id: id("u") }, ops({ $push: { name: 1 } })), 2);
      await expectServerError(docs.updateOne({ _id: id("u") }, { $set: { "name.sub": 1 } }), 28);
      expect((await docs.findOne({ _id: id("u") }))?.count).toBe(3);
    });

    it("upserts", async () => {
      const docs = db.collection("upserts");
      const created = await docs.updateOne(
        { key: "k1", "meta.tenant": "t1", n: { $gt: 5 } },
        { $set: { value: 1 }, $setOnInsert: { createdAt: "now" } },
        { upsert: true },
      );
      expect(created.upsertedCount).toBe(1);
      expect(created.upsertedId).toBeInstanceOf(ObjectId);
      expect(await docs.findOne({ _id: created.upsertedId as ObjectId }, { projection: { _id: 0 } })).toEqual({
        key: "k1",
        meta: { tenant: "t1" },
        value: 1,
        createdAt: "now",
      });

      const again = await docs.updateOne(
        { key: "k1" },
        { $set: { value: 2 }, $setOnInsert: { createdAt: "later" } },
        { upsert: true },
      );
      expect(again).toMatchObject({ matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null });
      expect((await docs.findOne({ key: "k1" }))?.createdAt).toBe("now");

      const replaced = await docs.replaceOne({ _id: id("fixed"), ignored: 1 }, { whole: true }, { upsert: true });
      expect(replaced.upsertedId).toBe("fixed");
      expect(await docs.findOne({ _id: id("fixed") })).toEqual({ _id: "fixed", whole: true });
    });

    it("findOneAndUpdate supports optimistic concurrency with a version filter", async () => {
      const tasks = db.collection("tasks");
      await tasks.insertOne({ _id: id("t"), state: "submitted", version: 1, history: [] });
      const updated = await tasks.findOneAndUpdate(
        { _id: id("t"), version: 1 },
        ops({ $set: { state: "working" }, $inc: { version: 1 }, $push: { history: "working" } }),
        { returnDocument: "after" },
      );
      expect(updated).toEqual({ _id: "t", state: "working", version: 2, history: ["working"] });
      // The same stale filter no longer matches: nothing is changed and null comes back.
      const stale = await tasks.findOneAndUpdate(
        { _id: id("t"), version: 1 },
        { $set: { state: "canceled" }, $inc: { version: 1 } },
        { returnDocument: "after" },
      );
      expect(stale).toBeNull();
      expect(await tasks.findOne({ _id: id("t") })).toEqual(updated);

      const before = await tasks.findOneAndUpdate(
        { _id: id("t") },
        { $set: { state: "done" } },
        { returnDocument: "before", projection: { state: 1 } },
      );
      expect(before).toEqual({ _id: "t", state: "working" });
      const meta = await tasks.findOneAndUpdate(
        { _id: id("new") },
        { $set: { state: "x" } },
        { upsert: true, returnDocument: "after", includeResultMetadata: true },
      );
      expect(meta.value).toEqual({ _id: "new", state: "x" });
      expect(meta.lastErrorObject).toMatchObject({ n: 1, updatedExisting: false, upserted: "new" });
      expect(await tasks.findOneAndDelete({ _id: id("new") })).toEqual({ _id: "new", state: "x" });
      expect(
        await tasks.findOneAndReplace({ state: "done" }, { state: "replaced" }, { returnDocument: "after" }),
      ).toEqual({ _id: "t", state: "replaced" });

      // Concurrent compare-and-set: exactly one of the racing writers wins.
      await tasks.insertOne({ _id: id("race"), version: 0 });
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          tasks.findOneAndUpdate(
            { _id: id("race"), version: 0 },
            { $inc: { version: 1 }, $set: { winner: i } },
            { returnDocument: "after" },
          ),
        ),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
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
    server = await startMongoWireServer({ port: 0, ttlMonitorIntervalMs: 200, log: () => {} });
  });
  afterAll(async () => {
    await server?.close();
  });

  behavesLikeMongod("a dedicated server behaves like mongod", () => server.uri);

  describe("specific to the test server", () => {
    let client: MongoClient;
    beforeAll(async () => {
      client = await MongoClient.connect(server.uri);
    });
    afterAll(async () => {
      await client?.close();
    });

    it("plans queries on indexes (equality prefix, then a range), counts what it examined, and explains the plan", async () => {
      const db = client.db(testDbName("planner"));
      const events = db.collection("events");
      await events.createIndex({ taskId: 1, sequence: 1 }, { unique: true, name: "task_sequence" });
      await events.insertMany(
        Array.from({ length: 200 }, (_, i) => ({ taskId: `t${i % 10}`, sequence: Math.floor(i / 10), note: i })),
      );
      const status = async () =>
        (await db.admin().command({ serverStatus: 1 }))["metrics"]["queryExecutor"] as {
          scanned: Long;
          scannedObjects: Long;
          collectionScans: { total: Long };
        };
      const before = await status();

      const found = await events
        .find({ taskId: "t3", sequence: { $gte: 15 } })
        .sort({ sequence: 1 })
        .toArray();
      expect(found.map((d) => d["sequence"])).toEqual([15, 16, 17, 18, 19]);
      const after = await status();
      expect(Number(after.scannedObjects) - Number(before.scannedObjects)).toBe(5);
      expect(Number(after.collectionScans.total)).toBe(Number(before.collectionScans.total));

      // No index on `note`: a collection scan, counted as one, every document examined.
      expect(await events.countDocuments({ note: { $lt: 3 } })).toBe(3);
      const scanned = await status();
      expect(Number(scanned.collectionScans.total)).toBe(Number(after.collectionScans.total) + 1);
      expect(Number(scanned.scannedObjects) - Number(after.scannedObjects)).toBe(200);

      const explained = await db.command({
        explain: { find: "events", filter: { taskId: "t3", sequence: { $gte: 15 } } },
        verbosity: "executionStats",
      });
      expect(explained["queryPlanner"]["winningPlan"]).toMatchObject({
        stage: "FETCH",
        inputStage: { stage: "IXSCAN", indexName: "task_sequence" },
      });
      expect(explained["executionStats"]).toMatchObject({ nReturned: 5, totalDocsExamined: 5 });
      const collscan = await db.command({
        explain: { delete: "events", deletes: [{ q: { note: 7 }, limit: 1 }] },
        verbosity: "executionStats",
      });
      expect(collscan["queryPlanner"]["winningPlan"]).toMatchObject({ stage: "COLLSCAN" });
      // $in on the key prefix, and results in natural order like a scan.
      const some = await events.find({ taskId: { $in: ["t1", "t2"] }, sequence: 0 }).toArray();
      expect(some.map((d) => d["note"])).toEqual([1, 2]);
      await db.dropDatabase();
    });

    it("runs MongoDB 8.0's client bulkWrite: one ordered command across namespaces, per-op results, stops at the first error", async () => {
      const db = client.db(testDbName("client_bulk"));
      // Upserted ops count in their op's `n` (as in mongod), so the driver reports matchedCount 1 for them.
      await db.collection("a").createIndex({ k: 1 }, { unique: true });
      await db.collection("b").insertMany([
        { _id: id(1), v: 1 },
        { _id: id(2), v: 1 },
        { _id: id(3), v: 9 },
      ]);
      const [a, b] = [`${db.databaseName}.a`, `${db.databaseName}.b`];
      const result = await client.bulkWrite<Record<string, Document>>(
        [
          { namespace: a, name: "insertOne", document: { k: 1 } },
          { namespace: b, name: "updateOne", filter: { _id: id(1), v: 1 }, update: { $set: { v: 2 } } },
          { namespace: b, name: "updateOne", filter: { _id: id(1), v: 1 }, update: { $set: { v: 3 } } },
          { namespace: b, name: "updateMany", filter: { v: { $lt: 5 } }, update: { $set: { w: true } } },
          { namespace: b, name: "updateOne", filter: { _id: id(4) }, update: { $set: { v: 4 } }, upsert: true },
          { namespace: b, name: "deleteOne", filter: { v: 9 } },
        ],
        { ordered: true, verboseResults: true },
      );
      expect(result).toMatchObject({
        insertedCount: 1,
        matchedCount: 3,
        modifiedCount: 3,
        upsertedCount: 1,
        deletedCount: 1,
      });
      expect([...result.updateResults!].map(([i, r]) => [i, r.matchedCount, r.didUpsert])).toEqual([
        [1, 1, false],
        [2, 0, false],
        [3, 2, false],
        [4, 1, true],
      ]);
      expect(result.deleteResults!.get(5)).toEqual({ deletedCount: 1 });
      expect(await db.collection("b").find().sort({ _id: 1 }).toArray()).toEqual([
        { _id: 1, v: 2, w: true },
        { _id: 2, v: 1, w: true },
        { _id: 4, v: 4 },
      ]);

      // Ordered: a duplicate key stops the command; what ran before it stands, nothing after it runs.
      const stopped = await client
        .bulkWrite<Record<string, Document>>(
          [
            { namespace: b, name: "insertOne", document: { _id: id(10) } },
            { namespace: a, name: "insertOne", document: { k: 1 } },
            { namespace: b, name: "insertOne", document: { _id: id(11) } },
          ],
          { ordered: true, verboseResults: true },
        )
        .then(
          () => undefined,
          (e: unknown) => e as MongoClientBulkWriteError,
        );
      expect(stopped).toBeInstanceOf(MongoClientBulkWriteError);
      expect([...stopped!.writeErrors.entries()].map(([i, e]) => [i, e.code])).toEqual([[1, 11000]]);
      expect([...stopped!.partialResult!.insertResults!.keys()]).toEqual([0]);
      expect(await db.collection("b").countDocuments({ _id: { $in: [id(10), id(11)] } })).toBe(1);

      // The raw command: admin only; errorsOnly leaves the successes out of the cursor; unordered goes on.
      await expectServerError(
        db.command({ bulkWrite: 1, ops: [{ insert: 0, document: { k: 5 } }], nsInfo: [{ ns: a }] }),
        13,
      );
      const raw = await client.db("admin").command({
        bulkWrite: 1,
        ordered: false,
        errorsOnly: true,
        ops: [
          { insert: 0, document: { k: 1 } },
          { insert: 0, document: { k: 6 } },
          { delete: 1, filter: {}, multi: true },
        ],
        nsInfo: [{ ns: a }, { ns: b }],
      });
      expect(raw).toMatchObject({
        ok: 1,
        nErrors: 1,
        nInserted: 1,
        nDeleted: 4,
        nMatched: 0,
        nModified: 0,
        nUpserted: 0,
        cursor: { ns: "admin.$cmd.bulkWrite" },
      });
      expect(raw["cursor"]["firstBatch"]).toMatchObject([{ ok: 0, idx: 0, code: 11000 }]);
      await db.dropDatabase();
    });

    it("reports MongoDB 8.0, the primary of a one-node replica set (or a standalone server when asked)", async () => {
      const admin = client.db("admin");
      const hello = await admin.command({ hello: 1 });
      expect(hello).toMatchObject({
        isWritablePrimary: true,
        minWireVersion: 0,
        maxWireVersion: 25,
        maxWriteBatchSize: 100000,
        maxMessageSizeBytes: 48000000,
        logicalSessionTimeoutMinutes: 30,
        ok: 1,
      });
      const me = `127.0.0.1:${server.port}`;
      expect(hello).toMatchObject({ setName: "rs0", hosts: [me], primary: me, me, secondary: false, setVersion: 1 });
      expect(hello.topologyVersion.processId).toBeInstanceOf(ObjectId);
      expect(Number(hello.topologyVersion.counter)).toBe(0); // an int64 (the driver promotes it)
      expect(hello.electionId).toBeInstanceOf(ObjectId);
      expect(hello.lastWrite.lastWriteDate).toBeInstanceOf(Date);
      const standalone = await startMongoWireServer({ port: 0, replicaSet: false, log: () => {} });
      const direct = await MongoClient.connect(standalone.uri);
      try {
        const single = await direct.db("admin").command({ hello: 1 });
        expect(single).toMatchObject({ isWritablePrimary: true, logicalSessionTimeoutMinutes: 30, ok: 1 });
        expect(single.setName).toBeUndefined();
        expect(single.topologyVersion).toBeUndefined();
        await expectServerError(
          direct.db("x").command({ aggregate: "c", pipeline: [{ $changeStream: {} }], cursor: {} }),
          40573,
        );
      } finally {
        await direct.close();
        await standalone.close();
      }
      expect((await admin.command({ buildInfo: 1 })).version).toBe("8.0.0");
      expect(await admin.command({ getParameter: 1, featureCompatibilityVersion: 1 })).toMatchObject({
        featureCompatibilityVersion: { version: "8.0" },
      });
      for (const command of [{ endSessions: [] }, { killAllSessions: [] }, { hostInfo: 1 }, { serverStatus: 1 }]) {
        expect(await admin.command(command)).toMatchObject({ ok: 1 });
      }
    });

    it("deletes expired documents with the TTL monitor", async () => {
      const sessions = client.db(testDbName("ttl")).collection("sessions");
      await sessions.createIndex({ lastSeen: 1 }, { expireAfterSeconds: 30 });
      await sessions.insertMany([
        { _id: id("old"), lastSeen: new Date(Date.now() - 60_000) },
        { _id: id("oldArray"), lastSeen: [new Date(Date.now() + 60_000), new Date(Date.now() - 60_000)] },
        { _id: id("fresh"), lastSeen: new Date() },
        { _id: id("notADate"), lastSeen: "yesterday" },
        { _id: id("missing") },
      ]);
      expect(await eventually(async () => (await sessions.countDocuments()) === 3, 5_000)).toBe(true);
      expect((await sessions.find({}, { sort: { _id: 1 } }).toArray()).map((d) => d._id)).toEqual([
        "fresh",
        "missing",
        "notADate",
      ]);
      await sessions.insertOne({ _id: id("later"), lastSeen: new Date(Date.now() - 31_000) });
      expect(await eventually(async () => (await sessions.countDocuments({ _id: id("later") })) === 0, 5_000)).toBe(
        true,
      );
    });

    it("answers OP_QUERY handshakes and OP_MSG document sequences on a raw socket", async () => {
      const socket = await connectRaw(server.port);
      try {
        const legacy = await roundTrip(socket, opQuery(1, "admin.$cmd", { isMaster: 1, helloOk: true }));
        expect(legacy.opCode).toBe(1); // OP_REPLY
        expect(legacy.doc).toMatchObject({ ismaster: true, helloOk: true, maxWireVersion: 25, ok: 1 });

        const rejected = await roundTrip(socket, opQuery(2, "db.$cmd", { find: "c" }));
        expect(rejected.doc).toMatchObject({ ok: 0, code: 352 });

        // insert with its documents in a kind-1 section instead of the body.
        const inserted = await roundTrip(
          socket,
          opMsg(
            3,
            { insert: "seq", $db: "rawdb" },
            { identifier: "documents", docs: [{ _id: 1 }, { _id: 2 }, { _id: 1 }] },
          ),
        );
        expect(inserted.opCode).toBe(2013);
        expect(inserted.doc).toMatchObject({ ok: 1, n: 2, writeErrors: [{ index: 2, code: 11000 }] });

        // Two requests written at once are both answered, in order.
        const pipelined = await roundTripMany(
          socket,
          Buffer.concat([opMsg(4, { ping: 1, $db: "admin" }), opMsg(5, { count: "seq", $db: "rawdb" })]),
          2,
        );
        expect(pipelined.map((r) => r.responseTo)).toEqual([4, 5]);
        expect(pipelined[1]?.doc).toMatchObject({ n: 2, ok: 1 });

        expect((await roundTrip(socket, opMsg(6, { ping: 1 }))).doc).toMatchObject({ ok: 0, code: 40571 }); // no $db
        const badBson = opMsg(7, { ping: 1, $db: "admin" });
        badBson.writeInt32LE(9999, 21); // corrupt the body's length prefix
        expect((await roundTrip(socket, badBson)).doc).toMatchObject({ ok: 0, code: 22 });
        expect((await roundTrip(socket, opMsg(8, { ping: 1, $db: "admin" }))).doc).toMatchObject({ ok: 1 });
      } finally {
        socket.destroy();
      }

      // A corrupt message length cannot be recovered from: that connection is closed, the server lives on.
      const broken = await connectRaw(server.port);
      const closed = new Promise<void>((resolve) => broken.once("close", () => resolve()));
      broken.write(Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]));
      await closed;
      expect(await client.db("admin").command({ ping: 1 })).toMatchObject({ ok: 1 });
    });

    it("turns its own bugs into InternalError replies", () => {
      const logged: string[] = [];
      const brokenContext = {
        db: "x",
        connectionId: 1,
        clientAddress: "test",
        server: {
          get store(): never {
            throw new TypeError("simulated bug");
          },
          logInternalError: (name: string) => logged.push(name),
        },
      } as unknown as CommandContext;
      const reply = runCommand({ find: "c", $db: "x" }, brokenContext);
      expect(reply).toMatchObject({ ok: 0, code: 1, codeName: "InternalError" });
      expect(String(reply.errmsg)).toContain("simulated bug");
      expect(logged).toEqual(["find"]);
    });
  });
});

behavesLikeMongod(`the test run's MongoDB backend (${inject("mongoBackend")})`, () => inject("mongoUri"));

// ---------------------------------------------------------------------------------------
// A minimal raw wire-protocol client, written independently of the server's encoder.

interface RawReply {
  opCode: number;
  responseTo: number;
  doc: Document;
}

function connectRaw(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port }, () => resolve(socket));
    socket.once("error", reject);
  });
}

function withHeader(requestId: number, opCode: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + payload.length, 0);
  header.writeInt32LE(requestId, 4);
  header.writeInt32LE(0, 8);
  header.writeInt32LE(opCode, 12);
  return Buffer.concat([header, payload]);
}

function opQuery(requestId: number, namespace: string, query: Document): Buffer {
  const flags = Buffer.alloc(4);
  const counts = Buffer.alloc(8);
  counts.writeInt32LE(-1, 4);
  return withHeader(
    requestId,
    2004,
    Buffer.concat([flags, Buffer.from(`${namespace}\0`), counts, BSON.serialize(query)]),
  );
}

function opMsg(requestId: number, body: Document, sequence?: { identifier: string; docs: Document[] }): Buffer {
  const parts = [Buffer.alloc(4), Buffer.from([0]), Buffer.from(BSON.serialize(body))];
  if (sequence) {
    const content = Buffer.concat([
      Buffer.from(`${sequence.identifier}\0`),
      ...sequence.docs.map((d) => Buffer.from(BSON.serialize(d))),
    ]);
    const size = Buffer.alloc(4);
    size.writeInt32LE(4 + content.length, 0);
    parts.push(Buffer.from([1]), size, content);
  }
  return withHeader(requestId, 2013, Buffer.concat(parts));
}

function parseReply(message: Buffer): RawReply {
  const opCode = message.readInt32LE(12);
  const responseTo = message.readInt32LE(8);
  const docStart = opCode === 1 ? 16 + 20 : 16 + 5;
  return { opCode, responseTo, doc: BSON.deserialize(message.subarray(docStart)) };
}

function roundTripMany(socket: net.Socket, request: Buffer, expected: number): Promise<RawReply[]> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const replies: RawReply[] = [];
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= buffered.readInt32LE(0)) {
        const length = buffered.readInt32LE(0);
        replies.push(parseReply(buffered.subarray(0, length)));
        buffered = buffered.subarray(length);
      }
      if (replies.length >= expected) {
        socket.off("data", onData);
        resolve(replies);
      }
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.write(request);
  });
}

async function roundTrip(socket: net.Socket, request: Buffer): Promise<RawReply> {
  const [reply] = await roundTripMany(socket, request, 1);
  return reply as RawReply;
}
