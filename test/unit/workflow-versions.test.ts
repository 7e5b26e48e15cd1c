import { describe, expect, it } from "vitest";
import { kindsOf, versionOf, walkable } from "../../src/engine/definition-needs.js";
import { builtinNodeKinds } from "../../src/engine/nodes/node-registry.js";
import { applyTaskEvent, createTaskActor } from "../../src/machine/task-actor.js";
import { MemoryWorkflowVersionStore, WorkflowVersionConflictError } from "../../src/store/workflow-version-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";

const handler: TaskHandler = async () => ({ output: {} });

const QUOTE = {
  id: "quote",
  name: "Quote",
  description: "draft, ask a peer, approve, send",
  nodes: [
    { kind: "task", id: "draft", handler: "draft" },
    { kind: "a2a.invoke", id: "price", agentCardUrl: "${A2A_PEER_CARD_URL}" },
    { kind: "approval", id: "approve", title: "Approve" },
    { kind: "vector.search", id: "similar" },
    { kind: "task", id: "send", handler: "send" },
  ],
};

describe("a definition's version", () => {
  it("is its `version` field when set, else a digest of its canonical form (key order does not matter)", () => {
    const reordered = { nodes: QUOTE.nodes, description: QUOTE.description, name: QUOTE.name, id: QUOTE.id };
    expect(versionOf(QUOTE).version).toMatch(/^sha256-[0-9a-f]{16}$/);
    expect(versionOf(reordered)).toEqual(versionOf(QUOTE));
    expect(versionOf({ ...QUOTE, description: "changed" }).version).not.toBe(versionOf(QUOTE).version);
    const declared = versionOf({ ...QUOTE, version: "2026.1" });
    expect(declared.version).toBe("2026.1");
    expect(declared.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it("names the node kinds it uses", () => {
    expect(kindsOf(QUOTE)).toEqual(["a2a.invoke", "approval", "task", "vector.search"]);
  });
});

describe("a stored definition walked by another deploy", () => {
  it("lacks, per node, what this deploy does not have: a handler, a variable, a node kind", () => {
    const { workflow, lacks } = walkable(QUOTE, {
      handlers: { draft: handler },
      variables: {},
      peers: {},
      kinds: builtinNodeKinds(),
    });
    expect(workflow.nodes.map((n) => n.id)).toEqual(["draft", "price", "approve", "similar", "send"]);
    expect(lacks.get("draft")).toBeUndefined();
    expect(lacks.get("approve")).toBeUndefined();
    expect(lacks.get("send")).toMatch(/^node "send": no handler named "send"/);
    expect(lacks.get("similar")).toBe('node "similar": node kind "vector.search" is not installed on this instance');
    expect([...lacks.keys()].sort()).toEqual(["send", "similar"]);
  });

  it("expands `${NAME}` with this instance's settings (the stored form keeps the reference)", () => {
    const { workflow, lacks } = walkable(QUOTE, {
      handlers: { draft: handler, send: handler },
      variables: { A2A_PEER_CARD_URL: "https://pricing.example/.well-known/agent-card.json" },
      peers: {},
      kinds: builtinNodeKinds(),
    });
    expect(workflow.nodes.find((n) => n.id === "price")).toMatchObject({
      agentCardUrl: "https://pricing.example/.well-known/agent-card.json",
    });
    expect(QUOTE.nodes[1]).toMatchObject({ agentCardUrl: "${A2A_PEER_CARD_URL}" });
    expect([...lacks.keys()]).toEqual(["similar"]);
  });
});

describe("the version store", () => {
  const version = (digest: string) => ({
    workflowId: "quote",
    version: "1",
    definition: QUOTE,
    kinds: kindsOf(QUOTE),
    digest,
    storedAt: "2026-01-01T00:00:00.000Z",
    servedAt: "2026-01-01T00:00:00.000Z",
  });

  it("stores a version once, takes the same content again, and refuses other content under the same version", async () => {
    const store = new MemoryWorkflowVersionStore();
    await store.put(version("a".repeat(64)));
    await store.put({ ...version("a".repeat(64)), servedAt: "2026-02-01T00:00:00.000Z" });
    expect((await store.get("quote", "1"))?.servedAt).toBe("2026-02-01T00:00:00.000Z");
    const err = await store.put(version("b".repeat(64))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowVersionConflictError);
    expect((err as Error).message).toMatch(/version "1" is already stored with other content/);
    expect((err as Error).message).toContain("a".repeat(64));
    expect((err as Error).message).toContain("b".repeat(64));
    expect((await store.get("quote", "1"))?.digest).toBe("a".repeat(64));
  });
});

describe("a task's version in the machine", () => {
  const input = {
    taskId: "t1",
    contextId: "c1",
    workflowId: "quote",
    workflowVersion: "1",
    tenant: "acme",
    firstNode: "approve",
    message: { messageId: "m1", role: "user" as const, parts: [{ kind: "text" as const, text: "go" }] },
  };
  const at = "2026-01-01T00:00:00.000Z";
  const interrupt = {
    interruptId: "i1",
    nodeId: "approve",
    kind: "approval" as const,
    data: {},
    requestedAt: at,
    exchanges: [],
  };
  const status = { messageId: "s", role: "agent" as const, parts: [{ kind: "text" as const, text: "approve?" }] };

  it("a move changes the version and goes on from the mapped node, a new visit; the pending interrupt is withdrawn", () => {
    const actor = createTaskActor(input);
    applyTaskEvent(actor, { type: "START", at });
    applyTaskEvent(actor, { type: "INTERRUPT", at, interrupt, statusMessage: status });
    const { after } = applyTaskEvent(actor, {
      type: "MOVE",
      at,
      by: "op",
      fromVersion: "1",
      toVersion: "2",
      nodeId: "review",
    });
    expect(after.value).toBe("running");
    expect(after.context).toMatchObject({ workflowVersion: "2", cursor: "review", nodeStarted: false });
    expect(after.context.interrupt).toBeUndefined();
  });

  it("a block records the node and the reason; the node starting (on an instance that has it) clears it", () => {
    const actor = createTaskActor(input);
    applyTaskEvent(actor, { type: "START", at });
    const blocked = applyTaskEvent(actor, {
      type: "BLOCK",
      at,
      nodeId: "approve",
      reason: 'node "approve": handler gone',
      instance: "i-1",
    }).after;
    expect(blocked.value).toBe("running");
    expect(blocked.context.blocked).toEqual({
      nodeId: "approve",
      reason: 'node "approve": handler gone',
      at,
      instance: "i-1",
    });
    const started = applyTaskEvent(actor, { type: "NODE_STARTED", at, nodeId: "approve" }).after;
    expect(started.context.blocked).toBeUndefined();
  });
});
