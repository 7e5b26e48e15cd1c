// The node-kind plugin contract from outside src (docs/architecture.md "How to add a node kind"): a kind defined
// only in this file, `uppercase`, registered through createCore's `nodeKinds`, with its schema fragment, a
// load-time check, its own service (createServices) and route, an executor that upper-cases the caller's text into
// an artifact, and its console title, graph label and edges. A second kind, `secret-word`, raises its own interrupt
// and reads its own reply. A real task runs through the real server over the
// A2A 0.3 JSON-RPC binding; the console's graph of the workflow shows the kind's words.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invalidParams } from "../../src/domain/errors.js";
import type { NodeKind } from "../../src/engine/nodes/node-kind.js";
import { stageNodeCompleted, stillRunning } from "../../src/engine/nodes/node-executor.js";
import { nodeAfter, runInputOf } from "../../src/engine/workflow-walk.js";
import { checkWorkflow } from "../../src/engine/workflow-catalog.js";
import { NodeKindRegistry } from "../../src/engine/nodes/node-registry.js";
import type { WorkflowDefinition, WorkflowNode } from "../../src/workflows/workflow-types.js";
import { jsonRpcCaller } from "../support/jsonrpc-caller.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/** The node as a definition writes it. */
interface UppercaseNode {
  kind: "uppercase";
  id: string;
  title?: string;
  /** Put after the upper-cased text. */
  suffix?: string;
}

// Its service, added to the executors' services the way a kind in src adds its own.
declare module "../../src/engine/nodes/node-kind.js" {
  interface NodeServices {
    shout?: (text: string) => string;
  }
}

const uppercase: NodeKind<WorkflowNode> = {
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["kind", "id"],
    properties: { kind: { const: "uppercase" }, id: { $ref: "#/$defs/Id" }, title: { $ref: "#/$defs/Title" }, suffix: { type: "string" } },
  },
  check: (node) => ((node as unknown as UppercaseNode).suffix === "!!!" ? `node "${node.id}": one "!" is enough` : undefined),
  createServices: () => ({ services: { shout: (text: string) => text.toUpperCase() } }),
  routes: (services) => [
    { method: "GET", path: "/v1/uppercase/{word}", public: true, handle: async ({ params }) => ({ status: 200, body: { shouted: services.shout!(params["word"]!) } }) },
  ],
  executor: (runtime, services) => ({
    async step({ node, live, workflow, at }) {
      runtime.repository.stage(live, { type: "NODE_STARTED", at, nodeId: node.id });
      const { text } = runInputOf(live.actor.getSnapshot().context);
      const shouted = `${services.shout!(text)}${(node as unknown as UppercaseNode).suffix ?? ""}`;
      // An effect outside the lock, as any kind with work to do; its outcome is staged under the lock.
      return async () => (next) => {
        if (!stillRunning(next, node.id)) return;
        stageNodeCompleted(runtime.repository, next, workflow, node.id, runtime.now(), { output: { length: shouted.length }, artifacts: [{ name: "shouted", parts: [{ kind: "text", text: shouted }] }] });
      };
    },
  }),
  view: { title: () => "shout it", label: (node) => `UPPERCASE${(node as unknown as UppercaseNode).suffix ?? ""}` },
};

/**
 * A second throwaway kind with its own interrupt and its own reading of the reply: it asks for a word (a
 * clarification interrupt, the machine's kind), takes a text reply as the word, and resumes with it upper-cased.
 */
const secretWord: NodeKind<WorkflowNode> = {
  schema: { type: "object", additionalProperties: false, required: ["kind", "id"], properties: { kind: { const: "secret-word" }, id: { $ref: "#/$defs/Id" }, title: { $ref: "#/$defs/Title" } } },
  executor: (runtime) => ({
    async step({ node, live, at }) {
      const { taskId, contextId } = live.record;
      const question = { id: "word", question: "The secret word?" };
      runtime.repository.stage(live, {
        type: "INTERRUPT",
        at,
        interrupt: { interruptId: randomUUID(), nodeId: node.id, kind: "clarification", data: { questions: [question] }, requestedAt: at, exchanges: [] },
        statusMessage: { messageId: randomUUID(), role: "agent", taskId, contextId, parts: [{ kind: "text", text: question.question }] },
      });
      return true;
    },
  }),
  reply: {
    fromText: (text) => ({ word: text }),
    interpret: ({ node, workflow, resumeValue }) => {
      if (typeof resumeValue["word"] !== "string") throw invalidParams(`the reply to "${node.id}" needs a word`);
      return { type: "resume", output: { word: resumeValue["word"].toUpperCase() }, next: nodeAfter(workflow, node.id) };
    },
  },
  view: { waitingFor: (node, context) => (context.interrupt?.nodeId === node.id ? { kind: "external", label: "the secret word", nodeId: node.id } : undefined) },
};

const GUARDED = {
  id: "guarded",
  name: "Guarded",
  description: "Asks for the secret word.",
  nodes: [{ kind: "secret-word", id: "gate" }],
} as unknown as WorkflowDefinition;

const WORKFLOW = {
  id: "shout",
  name: "Shout",
  description: "Upper-cases the request.",
  nodes: [{ kind: "uppercase", id: "loud", suffix: "!" }],
} as unknown as WorkflowDefinition;

const KEY = "plugin-test-key-0123456789";
// API keys on, so a public route is public because the kind said so (everything else asks for the key).
const API_KEYS = JSON.stringify([{ id: "caller", tenant: "acme", key: KEY, scopes: ["runs:create", "runs:read", "approvals:respond", "console:operate"] }]);

describe("a node kind defined outside src, registered through createCore's nodeKinds", () => {
  let t: TestApp;
  const caller = jsonRpcCaller(() => t.baseUrl, { key: KEY });

  beforeAll(async () => {
    t = await startTestApp({ BUILTIN_WORKFLOWS: "none", API_KEYS }, undefined, undefined, { nodeKinds: { uppercase, "secret-word": secretWord }, workflows: [WORKFLOW, GUARDED] });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("runs a real task: the kind's executor and service upper-case the text into an artifact", async () => {
    const task = await caller.start("hello plugins", "shout");
    expect(task["status"].state).toBe("completed");
    expect(task["artifacts"]).toEqual([expect.objectContaining({ artifactId: "loud.0", name: "shouted", parts: [{ kind: "text", text: "HELLO PLUGINS!" }] })]);
  });

  it("a kind's own interrupt: the console says what the task waits for, and the kind reads the text reply", async () => {
    const task = await caller.start("let me in", "guarded");
    expect(task["status"].state).toBe("input-required");
    const list = await fetch(`${t.baseUrl}/console/api/tasks`, { headers: { authorization: `Bearer ${KEY}` } });
    const row = ((await list.json()) as { tasks: Array<Record<string, any>> }).tasks.find((r) => r["taskId"] === task["id"]);
    expect(row?.["waitingFor"]).toEqual({ kind: "external", label: "the secret word", nodeId: "gate" });
    const done = await caller.reply(task, "swordfish");
    expect(done["status"].state).toBe("completed");
    const stored = (await t.store.get(task["id"]))?.snapshot as { context: { outputs: Record<string, unknown> } };
    expect(stored.context.outputs["gate"]).toEqual({ word: "SWORDFISH" });
  });

  it("serves the kind's route (public: no API key asked)", async () => {
    const res = await fetch(`${t.baseUrl}/v1/uppercase/quiet`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ shouted: "QUIET" });
    // Routes not declared public still ask for the key.
    expect((await fetch(`${t.baseUrl}/console/api/workflows/shout`)).status).toBe(401);
  });

  it("the console graph shows the kind's title and label, and the default next edge", async () => {
    const res = await fetch(`${t.baseUrl}/console/api/workflows/shout`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    const graph = (await res.json()) as { nodes: Array<Record<string, unknown>>; edges: Array<Record<string, unknown>> };
    expect(graph.nodes[0]).toEqual({ id: "loud", kind: "uppercase", title: "shout it", label: "UPPERCASE!" });
    expect(graph.edges).toEqual([{ from: "loud", to: "$end", kind: "next" }]);
  });

  it("the loader validates it with its schema fragment and runs its check; hosts without it refuse the kind", () => {
    const kinds = new NodeKindRegistry({ uppercase });
    expect(() => checkWorkflow({ ...WORKFLOW, nodes: [{ kind: "uppercase", id: "loud", volume: 11 }] }, {}, {}, {}, kinds)).toThrow(/nodes\/0: must NOT have additional property 'volume'/);
    expect(() => checkWorkflow({ ...WORKFLOW, nodes: [{ kind: "uppercase", id: "loud", suffix: "!!!" }] }, {}, {}, {}, kinds)).toThrow(/node "loud": one "!" is enough/);
    expect(() => checkWorkflow(WORKFLOW, {})).toThrow(/nodes\/0\/kind: must be equal to one of the allowed values/);
    expect(() => new NodeKindRegistry({ http: uppercase })).toThrow(/node kind "http" is built in/);
  });
});
