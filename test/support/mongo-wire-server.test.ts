// Tests of the in-process MongoDB wire-protocol test server, through the real `mongodb` driver: the handshake,
// inserts and finds, queries, cursors and updates.
//
// `behavesLikeMongod` holds the checks that must pass against real MongoDB too: it runs once
// against a server started here, and once against the run's backend (`inject("mongoUri")`).
// With MONGODB_URI set, the second run proves the assertions describe mongod's behaviour, so
// the test server and mongod agree on them. mongo-wire-server-collections.test.ts does the same for
// indexes, aggregates and drops; what only the test server does is mongo-wire-server-specific.test.ts.

import {
  Double,
  Int32,
  Long,
  MongoClient,
  MongoServerError,
  ObjectId,
  type CommandSucceededEvent,
  type Db,
  type Document,
} from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testDbName } from "./mongo.js";
import { id, ops, expectServerError } from "./mongo-wire-server-test-helpers.js";
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
