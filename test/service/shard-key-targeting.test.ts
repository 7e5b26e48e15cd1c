import { randomUUID } from "node:crypto";
import { BSON, MongoClient, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { jsonRpcCaller } from "../support/jsonrpc-caller.js";
import "../support/mongo.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * The shard keys docs/operating.md proposes for a sharded cluster ("Past one replica set"): `tasks` on `_id` (the
 * task id), `task_events` on `taskId`. A query or write that names its shard key goes to one shard; one that does
 * not goes to every shard. This test drives the request path (create, read, reply, cancel, list by id) through
 * the service with command monitoring on the store's client, and checks that every filter and every inserted
 * document on the two task collections names its key.
 *
 * Two kinds of command are outside the request path and named here, not hidden: the background polls (leases to
 * recover, timers due), one per poll interval per instance whatever the traffic, and the idempotency-key lookup,
 * which runs only when two identical messages race (the guide says what it needs on a sharded cluster).
 */
const SHARD_KEYS: Record<string, string> = { tasks: "_id", task_events: "taskId" };

/** A filter names `key` when it holds it at its top level or inside every branch of an `$or`/`$and`. */
function names(filter: Document | undefined, key: string): boolean {
  if (!filter) return false;
  if (key in filter) return true;
  if (Array.isArray(filter["$and"])) return (filter["$and"] as Document[]).some((f) => names(f, key));
  if (Array.isArray(filter["$or"])) return (filter["$or"] as Document[]).every((f) => names(f, key));
  return false;
}

interface Touch {
  collection: string;
  command: string;
  /** The filter, or the inserted document, as sent. */
  shape: Document;
  kind: "filter" | "document";
}

/** Every filter and inserted document a command sends to `tasks` or `task_events`, bulkWrite's too. */
function touchesOf(commandName: string, raw: Document): Touch[] {
  const command = BSON.deserialize(BSON.serialize(plain(raw)));
  const out: Touch[] = [];
  const add = (collection: string, kind: Touch["kind"], shape: Document | undefined) => {
    if (collection in SHARD_KEYS) out.push({ collection, command: commandName, shape: shape ?? {}, kind });
  };
  if (commandName === "bulkWrite") {
    const nsInfo = command["nsInfo"] as Document[];
    for (const op of command["ops"] as Document[]) {
      const index = op["insert"] ?? op["update"] ?? op["delete"];
      const collection = String(nsInfo[Number(index)]!["ns"]).split(".").slice(1).join(".");
      if (op["insert"] !== undefined) add(collection, "document", op["document"] as Document);
      else add(collection, "filter", op["filter"] as Document);
    }
    return out;
  }
  const collection = String(command[commandName]);
  if (commandName === "insert") for (const d of command["documents"] as Document[]) add(collection, "document", d);
  else if (commandName === "update")
    for (const u of command["updates"] as Document[]) add(collection, "filter", u["q"] as Document);
  else if (commandName === "delete")
    for (const d of command["deletes"] as Document[]) add(collection, "filter", d["q"] as Document);
  else if (commandName === "find" || commandName === "count" || commandName === "distinct")
    add(collection, "filter", (command["filter"] ?? command["query"]) as Document);
  else if (commandName === "findAndModify") add(collection, "filter", command["query"] as Document);
  else if (commandName === "aggregate")
    add(collection, "filter", ((command["pipeline"] as Document[])[0]?.["$match"] as Document | undefined) ?? {});
  return out;
}

/** The driver's document sequences (bulkWrite's ops, nsInfo; insert's documents) as plain arrays. */
function plain(command: Document): Document {
  return Object.fromEntries(
    Object.entries(command).map(([k, v]) => [
      k,
      v && typeof v === "object" && "documents" in v && !Array.isArray(v)
        ? (v as { documents: Document[] }).documents
        : v,
    ]),
  );
}

/** The background polls, by the field they scan on: not request-path, broadcast by design. */
const BACKGROUND_FIELDS = ["timerDueAt", "lease.expiresAt", "lease"];
const isBackgroundPoll = (t: Touch) =>
  t.kind === "filter" && !("_id" in t.shape) && BACKGROUND_FIELDS.some((f) => names(t.shape, f));

describe(`the request path names the proposed shard keys (${inject("mongoBackend")})`, () => {
  const dbName = `shardkeys_${randomUUID().slice(0, 8)}`;
  const touches: Touch[] = [];
  let client: MongoClient;
  let t: TestApp;

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
    client.on("commandStarted", (e) => touches.push(...touchesOf(e.commandName, e.command)));
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    t = await startTestApp({}, store);
  });
  afterAll(async () => {
    await t.close();
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  it("every task-collection filter and document on the request path names its collection's key", async () => {
    const caller = jsonRpcCaller(() => t.baseUrl);
    touches.length = 0;

    const echo = await caller.start("hello", "echo");
    expect(echo["status"].state).toBe("completed");
    await caller.get(echo["id"]);
    const waiting = await caller.start("ship it", "approval-gate");
    expect(waiting["status"].state).toBe("input-required");
    const approved = await caller.reply(waiting, [{ kind: "data", data: { action: "accept" } }]);
    await caller.waitFor(approved["id"], (task) => task["status"].state === "completed", "completed");
    const toCancel = await caller.start("cancel me", "approval-gate");
    expect((await caller.cancel(toCancel["id"]))["status"].state).toBe("canceled");
    // Let the writes the answers did not wait for land.
    await new Promise((r) => setTimeout(r, 200));

    const requestPath = touches.filter((touch) => !isBackgroundPoll(touch));
    // The drive reached both collections, with both reads and writes: a test that saw nothing would prove nothing.
    expect(new Set(requestPath.map((touch) => touch.collection))).toEqual(new Set(["tasks", "task_events"]));
    expect(requestPath.some((touch) => touch.kind === "filter")).toBe(true);
    expect(requestPath.some((touch) => touch.kind === "document")).toBe(true);

    const untargeted = requestPath.filter((touch) => !names(touch.shape, SHARD_KEYS[touch.collection]!));
    expect(
      untargeted.map((u) => `${u.command} ${u.collection} ${u.kind} ${JSON.stringify(u.shape).slice(0, 160)}`),
    ).toEqual([]);
  });
});
