// Issue 40 item 5 on a real server with MongoDB (the wire-protocol test server): a switch routes on what an
// earlier node produced (a quote above 1000 goes to an approval gate, a cheaper one completes at once), and the
// gate shows the artifacts of the listed nodes that ran.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskHandler, WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { jsonRpcCaller } from "../support/jsonrpc-caller.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const QUOTES: WorkflowDefinition = {
  id: "quotes",
  name: "Quotes",
  description: "Prices a request; an expensive quote needs approval.",
  nodes: [
    { kind: "task", id: "quote", handler: "price" },
    {
      kind: "switch",
      id: "route",
      cases: [{ when: { output: { "quote.total": { $gt: 1000 }, "quote.currency": "EUR" } }, goto: "approve" }],
      default: "send",
    },
    {
      kind: "approval",
      id: "approve",
      title: "Approve the quote",
      artifactFrom: ["quote", "send"],
      actions: ["accept", "reject"],
    },
    { kind: "task", id: "send", handler: "echo" },
  ],
};

/** Prices the caller's data part `{ items }` at 100 each, as an output and an artifact. */
const price: TaskHandler = async ({ input }) => {
  const total = Number(input.data["items"] ?? 0) * 100;
  return {
    output: { total, currency: "EUR" },
    artifacts: [{ artifactId: "quote-doc", name: "quote", parts: [{ kind: "text", text: `Total: ${total} EUR` }] }],
  };
};

describe("a switch routing on an earlier node's output, on MongoDB", () => {
  let wire: MongoWireServer;
  let client: MongoClient;
  let store: MongoTaskStore;
  let t: TestApp;
  const caller = jsonRpcCaller(() => t.baseUrl);

  beforeAll(async () => {
    wire = await startMongoWireServer({ port: 0, log: () => {} });
    client = new MongoClient(wire.uri, { serverSelectionTimeoutMS: 2000 });
    await client.connect();
    store = new MongoTaskStore(client, client.db(`conditions_${randomUUID().slice(0, 8)}`));
    await store.init();
    t = await startTestApp({ BUILTIN_WORKFLOWS: "none" }, store, { price }, { workflows: [QUOTES] });
  });
  afterAll(async () => {
    await t?.close();
    await client?.close();
    await wire?.close();
  });

  it("an expensive quote waits at the gate, showing the quote's artifact; accepting it completes the task", async () => {
    const task = await caller.start("price this", "quotes", { data: { items: 15 } });
    expect(task["status"].state).toBe("input-required");
    const interrupt = task["metadata"]["openwop"]["interrupt"];
    expect(interrupt).toMatchObject({ nodeId: "approve", data: { artifactIds: ["quote-doc"] } });
    const stored = (await store.get(task["id"]))!.snapshot as { context: { outputs: Record<string, any> } };
    expect(stored.context.outputs["quote"]).toEqual({ total: 1500, currency: "EUR" });
    expect(stored.context.outputs["route"]).toEqual({ matched: 0, next: "approve" });
    const done = await caller.reply(task, [{ kind: "data", data: { action: "accept" } }]);
    expect(done["status"].state).toBe("completed");
  });

  it("a cheap quote goes straight on: the switch's default, no gate", async () => {
    const task = await caller.start("price this", "quotes", { data: { items: 3 } });
    expect(task["status"].state).toBe("completed");
    const events = await store.readEvents(task["id"], 0);
    const ran = events.filter((e) => e.type === "node.completed").map((e) => e.nodeId);
    expect(ran).toEqual(["quote", "route", "send"]);
    const stored = (await store.get(task["id"]))!.snapshot as { context: { outputs: Record<string, any> } };
    expect(stored.context.outputs["route"]).toEqual({ matched: "default", next: "send" });
  });
});
