// Creating a task costs the same whether 0 or thousands of tasks wait for input in the store: the same
// MongoDB commands, and the same index keys and documents examined by the store's queries (serverStatus
// `metrics.queryExecutor`). Counts are deterministic, so they are asserted; the rate is measured in bench/.
// A dedicated wire-protocol test server keeps the counters to this test alone (its planner walks the
// same indexes mongod would, and counts what it examined).
import { randomUUID } from "node:crypto";
import { BSON, MongoClient, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import { connectMongoStore } from "../../src/store/open-store.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const WAITING = 2000;
const CREATES = 5;

describe("the cost of a create does not grow with waiting tasks", () => {
  const dbName = `waiting_${randomUUID().slice(0, 8)}`;
  const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };
  let server: MongoWireServer;
  let admin: MongoClient;
  let t: TestCore;
  let stopStores: () => Promise<void>;
  const commands: string[] = [];

  beforeAll(async () => {
    server = await startMongoWireServer({ port: 0, log: () => {} });
    admin = await MongoClient.connect(server.uri);
    // getMore is left out: the commit feed's change stream polls by time, not per create (a query that read
    // many documents shows in the documents examined).
    const { store, idempotency, pushConfigs } = await connectMongoStore(server.uri, dbName, undefined, (e) => {
      if (e.commandName !== "getMore") commands.push(`${e.commandName} ${String(e.command[e.commandName])}`);
    });
    stopStores = () => store.close();
    // Background loops at their slowest, so every command counted is one a create caused; no overload checks (their
    // store ping is a command, and filling the in-process test server blocks this event loop on purpose).
    t = await startTestCore(
      {
        BLOCKING_TIMEOUT_MS: "10000",
        TIMER_POLL_MS: "60000",
        LEASE_HEARTBEAT_MS: "60000",
        LEASE_TTL_MS: "600000",
        OVERLOAD_EVENT_LOOP_DELAY_MS: "0",
        OVERLOAD_STORE_LATENCY_MS: "0",
      },
      { store, idempotency, pushConfigs },
    );
  });
  afterAll(async () => {
    await t?.close();
    await stopStores?.();
    await admin?.close();
    await server?.close();
  });

  const send = () =>
    t.core.service.sendMessage(
      {
        message: {
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "hello" }],
          metadata: { skillId: "approval-gate" },
        },
        blocking: true,
      },
      ctx,
    );

  const examined = async () => {
    const q = (await admin.db("admin").command({ serverStatus: 1 }))["metrics"]["queryExecutor"] as {
      scanned: BSON.Long;
      scannedObjects: BSON.Long;
    };
    return { keys: Number(q.scanned), docs: Number(q.scannedObjects) };
  };

  /** Commands (by name and collection) and keys/documents examined by CREATES approval tasks up to their wait. */
  async function createCost(): Promise<{ commands: string[]; keys: number; docs: number }> {
    commands.length = 0;
    const before = await examined();
    for (let i = 0; i < CREATES; i++) expect((await send()).status.state).toBe("input-required");
    const after = await examined();
    return { commands: [...commands].sort(), keys: after.keys - before.keys, docs: after.docs - before.docs };
  }

  /** WAITING copies of a waiting task's documents (head and events), each with its own ids. */
  async function seedWaiting(taskId: string): Promise<void> {
    const db = admin.db(dbName);
    const head = await db.collection("tasks").findOne({ _id: taskId as unknown as BSON.ObjectId });
    const events = await db
      .collection("task_events")
      .find({ taskId }, { projection: { _id: 0 } })
      .toArray();
    const ids = [taskId, String(head!["contextId"]), String(head!["idempotencyKey"])];
    const text = {
      head: BSON.EJSON.stringify(head, { relaxed: false }),
      events: BSON.EJSON.stringify(events, { relaxed: false }),
    };
    const copy = (json: string, fresh: Map<string, string>) =>
      BSON.EJSON.parse(
        ids.reduce((s, id) => s.replaceAll(id, fresh.get(id)!), json),
        { relaxed: false },
      ) as Document;
    const fresh = Array.from({ length: WAITING }, () => new Map(ids.map((id) => [id, randomUUID()])));
    await db.collection("task_events").insertMany(
      fresh.flatMap((m) => copy(text.events, m) as Document[]),
      { ordered: false },
    );
    await db.collection("tasks").insertMany(
      fresh.map((m) => copy(text.head, m)),
      { ordered: false },
    );
  }

  it(`sends the same commands and examines the same keys and documents with ${WAITING} tasks waiting`, async () => {
    const template = await send();
    const empty = await createCost();
    await seedWaiting(template.id);
    expect(
      await admin.db(dbName).collection("tasks").countDocuments({ "a2a.state": "input-required" }),
    ).toBeGreaterThanOrEqual(WAITING);
    const full = await createCost();
    expect(empty.commands.length).toBeGreaterThan(0);
    expect(full).toEqual(empty);
  });
});
