// What only the in-process MongoDB wire-protocol test server does (what it shares with mongod is checked in
// mongo-wire-server.test.ts and mongo-wire-server-collections.test.ts): its query planner's counters and
// explain, MongoDB 8.0's client bulkWrite, its replica-set hello, the TTL monitor, raw OP_QUERY / OP_MSG
// frames, and its own bugs as InternalError replies.

import net from "node:net";
import { BSON, MongoClient, MongoClientBulkWriteError, ObjectId, type Document, type Long } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDbName } from "./mongo.js";
import { id, expectServerError, eventually } from "./mongo-wire-server-test-helpers.js";
import type { CommandContext } from "./mongo-wire-server/command-context.js";
import { runCommand } from "./mongo-wire-server/commands.js";
import { startMongoWireServer, type MongoWireServer } from "./mongo-wire-server/server.js";

describe("wire-protocol test server", () => {
  let server: MongoWireServer;
  beforeAll(async () => {
    server = await startMongoWireServer({ port: 0, ttlMonitorIntervalMs: 200, log: () => {} });
  });
  afterAll(async () => {
    await server?.close();
  });

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
