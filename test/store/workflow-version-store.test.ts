import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { kindsOf, versionOf } from "../../src/engine/definition-needs.js";
import { MongoWorkflowVersionStore } from "../../src/store/mongo-workflow-version-store.js";
import { loadWorkflowCatalog } from "../../src/engine/workflow-catalog.js";
import { WorkflowVersions } from "../../src/engine/workflow-versions.js";
import {
  MemoryWorkflowVersionStore,
  WorkflowVersionConflictError,
  type WorkflowVersionStore,
} from "../../src/store/workflow-version-store.js";

// A definition's keys may hold dots (output conditions): the store must keep them as they are.
const defA = {
  id: "w",
  name: "W",
  description: "one",
  nodes: [{ kind: "switch", id: "a", cases: [{ when: { output: { "b.total": 1 } }, next: "$end" }] }],
};
const defB = { ...defA, description: "two" };
const entry = (definition: typeof defA, version = versionOf(definition).version) => ({
  workflowId: "w",
  version,
  definition,
  kinds: kindsOf(definition),
  digest: versionOf(definition).digest,
  storedAt: "2026-11-01T00:00:00.000Z",
  servedAt: "2026-11-01T00:00:00.000Z",
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
    await store.put(entry(defA));
    await store.put({ ...entry(defA), servedAt: "2026-11-02T00:00:00.000Z" });
    await store.put(entry(defB));
    expect((await store.get("w", versionOf(defA).version))?.definition).toEqual(defA);
    expect((await store.get("w", versionOf(defA).version))?.servedAt).toBe("2026-11-02T00:00:00.000Z");
    expect((await store.get("w", versionOf(defB).version))?.definition).toEqual(defB);
    await store.put(entry(defA, "v1"));
    const refused = await store.put(entry(defB, "v1")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkflowVersionConflictError);
    expect((refused as Error).message).toContain(
      `digest ${versionOf(defA).digest}; this deploy's digest ${versionOf(defB).digest}`,
    );
    expect((await store.get("w", "v1"))?.definition).toEqual(defA);
    expect(await store.get("w", "missing")).toBeNull();
  });

  it("lists versions without their definitions, marks them served, and removes one", async () => {
    const listed = await store.list();
    expect(listed.map((v) => v.version).sort()).toEqual(
      [versionOf(defA).version, versionOf(defB).version, "v1"].sort(),
    );
    expect(listed.every((v) => Object.keys(v.definition).length === 0)).toBe(true);
    await store.touch([{ workflowId: "w", version: "v1" }], "2026-11-03T00:00:00.000Z");
    expect((await store.get("w", "v1"))?.servedAt).toBe("2026-11-03T00:00:00.000Z");
    expect(await store.countRuns("w", "v1")).toEqual({ live: 0, ended: 0 });
    await store.remove("w", "v1");
    expect(await store.get("w", "v1")).toBeNull();
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
  const versionsOf = async (store: WorkflowVersionStore, description: string, url: string) => {
    const variables = { A2A_PEER_CARD_URL: url };
    const catalog = await loadWorkflowCatalog({
      builtinDir: "/nowhere",
      builtin: [],
      workflows: [definition(description)],
      handlers: {},
      variables,
    });
    return new WorkflowVersions({ catalog, store, deploy: { handlers: {}, variables, peers: {} } });
  };

  it("is stored as written (no variable's value) and walked with this host's values", async () => {
    const store = new MemoryWorkflowVersionStore();
    const first = await versionsOf(store, "one", `https://peer.example/card.json?key=${SECRET}`);
    await first.register();
    const version = first.deployedVersion("ask")!;
    const stored = await store.get("ask", version);
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(JSON.stringify(stored)).toContain("${A2A_PEER_CARD_URL}");
    // The version is the workflow's, not its configuration's: another value gives the same version.
    expect((await versionsOf(store, "one", "https://other.example/card.json")).deployedVersion("ask")).toBe(version);

    // A later deploy (another description) walks the pinned version with its own value filled in.
    const later = await versionsOf(store, "two", "https://peer.example/card.json?key=rotated");
    await later.register();
    const pinned = await later.ofTask({ taskId: "t", workflowId: "ask", workflowVersion: version });
    expect(pinned.workflow?.description).toBe("one");
    expect((pinned.workflow?.nodes[0] as unknown as { agentCardUrl: string }).agentCardUrl).toBe(
      "https://peer.example/card.json?key=rotated",
    );
    expect(pinned.lacking("peer")).toBeUndefined();
  });
});

describe("a version the previous release stored", () => {
  let mongo: MongoClient;
  const dbName = `versions_earlier_${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    mongo = await MongoClient.connect(inject("mongoUri"));
  });
  afterAll(async () => {
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  it("is read, listed and walked as it was written, never rewritten, and goes with retention", async () => {
    // The 2026-11-28 release's document: `<workflowId>@<version>`, the definition as an object, no digest or times.
    const earlier = {
      _id: "w@0123456789ab",
      workflowId: "w",
      version: "0123456789ab",
      definition: defA,
      kinds: ["switch"],
    };
    const collection = mongo.db(dbName).collection<{ _id: string }>("workflow_versions");
    await collection.insertOne({ ...earlier });
    const store = new MongoWorkflowVersionStore(mongo.db(dbName));

    const read = await store.get("w", "0123456789ab");
    expect(read).toMatchObject({ workflowId: "w", version: "0123456789ab", definition: defA, kinds: ["switch"] });
    expect(read?.digest).toBe(versionOf(defA).digest);
    expect((await store.list()).map((v) => [v.version, v.definition])).toEqual([["0123456789ab", {}]]);
    expect(await collection.findOne({ _id: "w@0123456789ab" })).toEqual(earlier);

    // A run of that release names the version: this release walks it.
    const deployed = { id: "w", name: "W", description: "now", nodes: [{ kind: "task", id: "t", handler: "h" }] };
    const handlers = { h: async () => ({ output: {} }) };
    const catalog = await loadWorkflowCatalog({ builtinDir: "", builtin: [], workflows: [deployed], handlers });
    const versions = new WorkflowVersions({ catalog, store, deploy: { handlers, variables: {}, peers: {} } });
    const pinned = await versions.ofTask({ taskId: "t", workflowId: "w", workflowVersion: "0123456789ab" });
    expect(pinned.deployed).toBe(false);
    expect(pinned.workflow?.description).toBe("one");

    await store.remove("w", "0123456789ab");
    expect(await store.get("w", "0123456789ab")).toBeNull();
  });
});
