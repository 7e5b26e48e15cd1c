// The wire-protocol test server as a one-node replica set under faults, through the real driver:
// the driver discovers the set and monitors it with the streaming protocol, sends retryable
// writes (each applied once per lsid + txnNumber), and the `failCommand` /
// `onPrimaryTransactionalWrite` fail points behave as the drivers' spec tests expect of mongod.
import {
  Long,
  MongoClient,
  MongoNetworkError,
  MongoServerError,
  type CommandStartedEvent,
  type Db,
  type Document,
  type ServerHeartbeatSucceededEvent,
  type TopologyDescription,
} from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { testDbName } from "./mongo.js";
import { startMongoWireServer, type MongoWireServer } from "./mongo-wire-server/server.js";

let server: MongoWireServer;
let client: MongoClient;
let db: Db;
const started: CommandStartedEvent[] = [];

beforeAll(async () => {
  server = await startMongoWireServer({ port: 0, log: () => {} });
  client = await MongoClient.connect(server.uri, { monitorCommands: true, heartbeatFrequencyMS: 500 });
  client.on("commandStarted", (event) => started.push(event));
  db = client.db(testDbName("faults"));
});
afterAll(async () => {
  await client?.close();
  await server?.close();
});
afterEach(async () => {
  await failPoint("failCommand", "off");
  await failPoint("onPrimaryTransactionalWrite", "off");
  started.length = 0;
});

function failPoint(name: string, mode: unknown, data: Document = {}): Promise<Document> {
  return client.db("admin").command({ configureFailPoint: name, mode, data });
}

function sent(name: string): CommandStartedEvent[] {
  return started.filter((event) => event.commandName === name);
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable("expected the operation to fail"),
    (error: unknown) => error,
  );
}

describe("the wire-protocol test server as a one-node replica set", () => {
  it("is discovered as a replica set with a primary from a plain connection string, and monitored by streaming hello", async () => {
    const heartbeats: ServerHeartbeatSucceededEvent[] = [];
    let description: TopologyDescription | undefined;
    const watcher = new MongoClient(server.uri, { heartbeatFrequencyMS: 200 });
    watcher.on("serverHeartbeatSucceeded", (event) => heartbeats.push(event));
    watcher.on("topologyDescriptionChanged", (event) => (description = event.newDescription));
    try {
      await watcher.connect();
      expect(description?.type).toBe("ReplicaSetWithPrimary");
      expect(description?.setName).toBe("rs0");
      expect([...(description?.servers.values() ?? [])].map((s) => s.type)).toEqual(["RSPrimary"]);
      // The monitor switches to awaited (exhaust) hellos, which the server answers every maxAwaitTimeMS.
      const deadline = Date.now() + 5_000;
      while (heartbeats.filter((h) => h.awaited).length < 3 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(heartbeats.filter((h) => h.awaited).length).toBeGreaterThanOrEqual(3);
      expect(await watcher.db("admin").command({ ping: 1 })).toMatchObject({ ok: 1 });
    } finally {
      await watcher.close();
    }
  });

  it("sends writes as retryable writes (lsid + txnNumber) and applies a repeated txnNumber once, answering it with the first reply", async () => {
    const coll = db.collection("retryable");
    await coll.insertOne({ _id: "a" as unknown as Document["_id"] });
    const insert = sent("insert")[0]?.command;
    expect(insert?.lsid).toBeDefined();
    expect(insert?.txnNumber).toBeDefined();

    // The driver puts its own lsid on db.command: use a client of its own, whose sessions (and the
    // txnNumbers we choose for them) no later operation reuses.
    const own = await MongoClient.connect(server.uri);
    try {
      const ownDb = own.db(db.databaseName);
      const session = own.startSession();
      const command = { insert: "retryable", documents: [{ _id: "b" }], txnNumber: Long.fromNumber(7) };
      const first = await ownDb.command(command, { session });
      const again = await ownDb.command(command, { session });
      expect(first).toMatchObject({ n: 1, ok: 1 });
      expect(again).toMatchObject({ n: 1, ok: 1 });
      expect(await coll.countDocuments({ _id: "b" as unknown as Document["_id"] })).toBe(1);
      // A retried update is not applied twice either.
      const bump = {
        update: "retryable",
        updates: [{ q: { _id: "b" }, u: { $inc: { n: 1 } } }],
        txnNumber: Long.fromNumber(8),
      };
      await ownDb.command(bump, { session });
      await ownDb.command(bump, { session });
      expect(await coll.findOne({ _id: "b" as unknown as Document["_id"] })).toMatchObject({ n: 1 });
      const tooOld = await failure(ownDb.command({ ...command, txnNumber: Long.fromNumber(6) }, { session }));
      expect((tooOld as MongoServerError).code).toBe(225);
      const notAWrite = await failure(ownDb.command({ find: "retryable", txnNumber: Long.fromNumber(9) }, { session }));
      expect((notAWrite as MongoServerError).code).toBe(50768);
    } finally {
      await own.close();
    }
  });

  it("onPrimaryTransactionalWrite: the write is applied, the reply lost; the driver's retry gets the first result, not a second write", async () => {
    const coll = db.collection("lostReply");
    expect(await failPoint("onPrimaryTransactionalWrite", { times: 1 }, { closeConnection: true })).toMatchObject({
      ok: 1,
    });
    await coll.updateOne({ _id: "counter" as unknown as Document["_id"] }, { $inc: { n: 1 } }, { upsert: true });
    expect(await coll.findOne({ _id: "counter" as unknown as Document["_id"] })).toEqual({ _id: "counter", n: 1 });
    const updates = sent("update");
    expect(updates).toHaveLength(2);
    expect(String(updates[1]?.command.txnNumber)).toBe(String(updates[0]?.command.txnNumber));

    // Without retryable writes the client sees the network error, although the write happened.
    const noRetry = new MongoClient(server.uri, { retryWrites: false });
    try {
      await failPoint("onPrimaryTransactionalWrite", { times: 1 }, { closeConnection: true });
      await noRetry
        .db(db.databaseName)
        .collection("lostReply")
        .insertOne({ _id: "x" as unknown as Document["_id"] });
      // No txnNumber without retryWrites: the fail point did not fire.
      await failPoint("onPrimaryTransactionalWrite", "off");
    } finally {
      await noRetry.close();
    }
  });

  it("failCommand errorCode 10107 on a write: the error carries RetryableWriteError, the driver retries once, the write lands once", async () => {
    const coll = db.collection("notPrimary");
    await failPoint("failCommand", { times: 1 }, { failCommands: ["insert"], errorCode: 10107 });
    await coll.insertOne({ _id: 1 as unknown as Document["_id"] });
    expect(sent("insert")).toHaveLength(2);
    expect(await coll.countDocuments()).toBe(1);

    const noRetry = new MongoClient(server.uri, { retryWrites: false });
    try {
      await failPoint("failCommand", { times: 1 }, { failCommands: ["insert"], errorCode: 10107 });
      const raw = (await failure(
        noRetry
          .db(db.databaseName)
          .collection("notPrimary")
          .insertOne({ _id: 2 as unknown as Document["_id"] }),
      )) as MongoServerError;
      expect(raw).toBeInstanceOf(MongoServerError);
      expect(raw.code).toBe(10107);
      expect(raw.codeName).toBe("NotWritablePrimary");
      // No txnNumber: not a retryable write, so no label.
      expect(raw.hasErrorLabel("RetryableWriteError")).toBe(false);
    } finally {
      await noRetry.close();
    }
    // errorLabels given in the fail point replace the server's own: no label, no retry.
    await failPoint("failCommand", { times: 1 }, { failCommands: ["insert"], errorCode: 10107, errorLabels: [] });
    const unlabelled = (await failure(coll.insertOne({ _id: 3 as unknown as Document["_id"] }))) as MongoServerError;
    expect(unlabelled.code).toBe(10107);
    expect(unlabelled.hasErrorLabel("RetryableWriteError")).toBe(false);
    expect(await coll.countDocuments()).toBe(1);
  });

  it("failCommand closeConnection: a read is retried on a new connection, a retryable write too; without retries the client sees a network error", async () => {
    const coll = db.collection("closed");
    await coll.insertMany([{ n: 1 }, { n: 2 }]);
    await failPoint("failCommand", { times: 1 }, { failCommands: ["find"], closeConnection: true });
    expect(await coll.countDocuments({}, {})).toBe(2);
    expect(await coll.find({}).toArray()).toHaveLength(2);
    expect(sent("find")).toHaveLength(2);

    await failPoint("failCommand", { times: 1 }, { failCommands: ["insert"], closeConnection: true });
    await coll.insertOne({ n: 3 });
    expect(await coll.countDocuments()).toBe(3);

    const noRetry = new MongoClient(server.uri, { retryWrites: false, retryReads: false });
    try {
      await failPoint("failCommand", { times: 1 }, { failCommands: ["find"], closeConnection: true });
      expect(await failure(noRetry.db(db.databaseName).collection("closed").findOne({}))).toBeInstanceOf(
        MongoNetworkError,
      );
    } finally {
      await noRetry.close();
    }
  });

  it("failCommand blockConnection holds the command for blockTimeMS, then runs it", async () => {
    const coll = db.collection("blocked");
    await failPoint("failCommand", { times: 1 }, { failCommands: ["insert"], blockConnection: true, blockTimeMS: 300 });
    const t0 = Date.now();
    await coll.insertOne({ n: 1 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(await coll.countDocuments()).toBe(1);
    expect(sent("insert")).toHaveLength(1);
  });

  it("modes: {times: n}, alwaysOn, off, {skip: n}; timesEntered and waitForFailPoint; appName and namespace; admin only", async () => {
    const coll = db.collection("modes");
    const entered = (await failPoint("failCommand", { times: 2 }, { failCommands: ["count"], errorCode: 2 }))[
      "count"
    ] as number;
    expect(((await failure(coll.estimatedDocumentCount())) as MongoServerError).code).toBe(2);
    // configureFailPoint answers how often the fail point has fired; waitForFailPoint waits for it.
    expect(
      await client.db("admin").command({ waitForFailPoint: "failCommand", timesEntered: entered + 1, maxTimeMS: 1000 }),
    ).toMatchObject({ ok: 1 });
    expect(
      (
        (await failure(
          client.db("admin").command({ waitForFailPoint: "failCommand", timesEntered: entered + 2, maxTimeMS: 50 }),
        )) as MongoServerError
      ).code,
    ).toBe(50);
    expect(await failPoint("failCommand", "off")).toMatchObject({ count: entered + 1, ok: 1 });
    expect(await coll.estimatedDocumentCount()).toBe(0);

    await failPoint("failCommand", "alwaysOn", { failCommands: ["count"], errorCode: 2 });
    for (let i = 0; i < 3; i++)
      expect(((await failure(coll.estimatedDocumentCount())) as MongoServerError).code).toBe(2);
    await failPoint("failCommand", "off");
    expect(await coll.estimatedDocumentCount()).toBe(0);

    await failPoint("failCommand", { skip: 1 }, { failCommands: ["count"], errorCode: 2 });
    expect(await coll.estimatedDocumentCount()).toBe(0);
    expect(((await failure(coll.estimatedDocumentCount())) as MongoServerError).code).toBe(2);
    await failPoint("failCommand", "off");

    await failPoint("failCommand", "alwaysOn", { failCommands: ["count"], errorCode: 2, appName: "the-other-app" });
    expect(await coll.estimatedDocumentCount()).toBe(0);
    const other = await MongoClient.connect(server.uri, { appName: "the-other-app" });
    try {
      expect(
        ((await failure(other.db(db.databaseName).collection("modes").estimatedDocumentCount())) as MongoServerError)
          .code,
      ).toBe(2);
    } finally {
      await other.close();
    }
    await failPoint("failCommand", "off");

    await failPoint("failCommand", "alwaysOn", {
      failCommands: ["count"],
      errorCode: 2,
      namespace: `${db.databaseName}.elsewhere`,
    });
    expect(await coll.estimatedDocumentCount()).toBe(0);
    expect(((await failure(db.collection("elsewhere").estimatedDocumentCount())) as MongoServerError).code).toBe(2);
    await failPoint("failCommand", "off");

    expect(
      (
        (await failure(
          db.command({ configureFailPoint: "failCommand", mode: "alwaysOn", data: { failCommands: ["ping"] } }),
        )) as MongoServerError
      ).code,
    ).toBe(13);
    expect(((await failure(failPoint("noSuchFailPoint", "alwaysOn"))) as MongoServerError).code).toBe(2);
  });

  it("failCommand writeConcernError: the write is applied and the reply carries the error (retryable codes labelled, retried once)", async () => {
    const coll = db.collection("wce");
    await failPoint(
      "failCommand",
      { times: 1 },
      { failCommands: ["insert"], writeConcernError: { code: 91, errmsg: "Replication is being shut down" } },
    );
    await coll.insertOne({ _id: 1 as unknown as Document["_id"] });
    // Applied by the first attempt; the retry (same txnNumber) is answered from the session's record.
    expect(sent("insert")).toHaveLength(2);
    expect(await coll.countDocuments()).toBe(1);
  });

  it("labels a change stream getMore error ResumableChangeStreamError; the driver resumes through closeConnection, CursorNotFound and NotWritablePrimary without losing or repeating a change", async () => {
    const coll = db.collection("stream");
    const stream = coll.watch([], { maxAwaitTimeMS: 100 });
    try {
      expect(await stream.tryNext()).toBeNull();
      const seen: number[] = [];
      const faults: Document[] = [
        { failCommands: ["getMore"], closeConnection: true },
        { failCommands: ["getMore"], errorCode: 43 },
        { failCommands: ["getMore"], errorCode: 10107 },
        { failCommands: ["getMore"], errorCode: 11602, errorLabels: ["ResumableChangeStreamError"] },
      ];
      let n = 0;
      for (const fault of faults) {
        await coll.insertOne({ n: ++n });
        await failPoint("failCommand", { times: 1 }, fault);
        await coll.insertOne({ n: ++n });
        while (seen.length < n) {
          const change = await stream.next();
          if (change.operationType === "insert") seen.push(change.fullDocument["n"] as number);
        }
      }
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(sent("aggregate").length).toBeGreaterThanOrEqual(1 + faults.length);
    } finally {
      await stream.close();
    }
  });
});
