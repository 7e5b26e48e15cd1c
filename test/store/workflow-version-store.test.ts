import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { workflowVersionOf } from "../../src/domain/workflow-version.js";
import { loadWorkflowCatalog } from "../../src/engine/workflow-catalog.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import {
  MemoryWorkflowVersionStore,
  MongoWorkflowVersionStore,
  type WorkflowVersionStore,
} from "../../src/store/workflow-version-store.js";

const defA = { id: "w", name: "W", description: "one", nodes: [{ kind: "task", id: "a", handler: "echo" }] };
const defB = { ...defA, description: "two" };
const entry = (definition: typeof defA, version = workflowVersionOf(definition)) => ({
  workflowId: "w",
  version,
  definition,
  kinds: ["task"],
});

describe("workflow versions", () => {
  it("are the version field when set, else a digest that ignores key order", () => {
    expect(workflowVersionOf({ ...defA, version: "2026-11" })).toBe("2026-11");
    const reordered = { nodes: defA.nodes, description: "one", name: "W", id: "w" };
    expect(workflowVersionOf(reordered)).toBe(workflowVersionOf(defA));
    expect(workflowVersionOf(defB)).not.toBe(workflowVersionOf(defA));
  });
});

describe.each(["memory", "mongodb"])("the %s workflow version store", (kind) => {
  let mongo: MongoClient | undefined;
  let store: WorkflowVersionStore;
  const dbName = `versions_${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    if (kind === "memory") store = new MemoryWorkflowVersionStore();
    else {
      mongo = await MongoClient.connect(inject("mongoUri"));
      store = new MongoWorkflowVersionStore(mongo.db(dbName));
    }
  });
  afterAll(async () => {
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  it("stores a version once, accepts the same content again, and refuses other content under that version", async () => {
    await store.register([entry(defA)]);
    await store.register([entry(defA), entry(defB)]);
    expect((await store.get("w", workflowVersionOf(defA)))?.definition).toEqual(defA);
    expect((await store.get("w", workflowVersionOf(defB)))?.definition).toEqual(defB);
    await store.register([entry(defA, "v1")]);
    await expect(store.register([entry(defB, "v1")])).rejects.toThrow(
      /workflow "w" version "v1" is already stored with other content.*"description":"one".*"description":"two"/,
    );
    expect((await store.get("w", "v1"))?.definition).toEqual(defA);
    expect(await store.get("w", "missing")).toBeUndefined();
  });
});

describe("a stored version and the host's variables", () => {
  const SECRET = "s3cr3t-card-key";
  const definition = (description: string) => ({
    id: "ask",
    name: "Ask",
    description,
    nodes: [{ kind: "a2a.invoke", id: "peer", agentCardUrl: "${A2A_PEER_CARD_URL}" }],
  });
  const load = (description: string, url: string) =>
    loadWorkflowCatalog({
      builtinDir: "/nowhere",
      builtin: [],
      workflows: [definition(description)],
      handlers: builtinHandlers,
      variables: { A2A_PEER_CARD_URL: url },
    });

  it("is stored as written (no variable's value) and walked with this host's values", async () => {
    const store = new MemoryWorkflowVersionStore();
    const first = await load("one", `https://peer.example/card.json?key=${SECRET}`);
    await first.registerVersions(store);
    const version = first.versionOf("ask")!;
    const stored = await store.get("ask", version);
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(JSON.stringify(stored)).toContain("${A2A_PEER_CARD_URL}");
    // The version is the workflow's, not its configuration's: another value gives the same version.
    expect((await load("one", "https://other.example/card.json")).versionOf("ask")).toBe(version);

    // A later deploy (another description) walks the pinned version with its own value filled in.
    const later = await load("two", "https://peer.example/card.json?key=rotated");
    await later.registerVersions(store);
    const pinned = await later.definitionOf({ taskId: "t", workflowId: "ask", workflowVersion: version });
    expect(pinned.description).toBe("one");
    expect((pinned.nodes[0] as { agentCardUrl: string }).agentCardUrl).toBe(
      "https://peer.example/card.json?key=rotated",
    );
  });
});
