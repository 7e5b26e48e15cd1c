// The node-kind plugin API from outside src (docs/node-kinds.md): kinds written only against the public types of
// src/index.ts, without a cast, registered as a list (`nodeKinds`, as startHost takes it): `uppercase` with its
// schema fragment, a load-time check, its own service (createServices) and route, an executor whose effect
// upper-cases the caller's text into an artifact, and its console title, graph label and edges. A second kind,
// `secret-word`, asks the caller (its own interrupt) and reads its own reply; a third, `gatekeeper`, decides
// (fail, complete, or run with a payload of its own). Real tasks run through the real server over the A2A 0.3
// JSON-RPC binding; the console's graph of the workflow shows the kind's words.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HandlerError, type NodeKind, type WorkflowDefinition } from "../../src/index.js";
import { checkWorkflow } from "../../src/engine/workflow-catalog.js";
import { withPluginKinds } from "../../src/engine/nodes/node-registry.js";
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

/** Its service: what its createServices builds and its executor and route use. */
interface Shouter {
  shout(text: string): string;
}

const uppercase: NodeKind<UppercaseNode, Shouter> = {
  kind: "uppercase",
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["kind", "id"],
    properties: {
      kind: { const: "uppercase" },
      id: { $ref: "#/$defs/Id" },
      title: { $ref: "#/$defs/Title" },
      suffix: { type: "string" },
    },
  },
  check: (node) => (node.suffix === "!!!" ? `node "${node.id}": one "!" is enough` : undefined),
  createServices: () => ({ services: { shout: (text) => text.toUpperCase() } }),
  routes: (shouter) => [
    {
      method: "GET",
      path: "/v1/uppercase/{word}",
      public: true,
      handle: async ({ params }) => ({ status: 200, body: { shouted: shouter.shout(params["word"] ?? "") } }),
    },
  ],
  executor: (shouter) => ({
    // An effect outside the lock, as any kind with work to do; what it resolves to completes the node.
    step: (node, run) =>
      run.effect(async () => {
        const shouted = `${shouter.shout(run.input.text)}${node.suffix ?? ""}`;
        return {
          output: { length: shouted.length },
          artifacts: [{ name: "shouted", parts: [{ kind: "text", text: shouted }] }],
        };
      }),
  }),
  view: { title: () => "shout it", label: (node) => `UPPERCASE${node.suffix ?? ""}` },
};

interface SecretWordNode {
  kind: "secret-word";
  id: string;
  title?: string;
}

/**
 * A second throwaway kind with its own question and its own reading of the reply: it asks for a word, takes a text
 * reply as the word, and resumes with it upper-cased.
 */
const secretWord: NodeKind<SecretWordNode> = {
  kind: "secret-word",
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["kind", "id"],
    properties: { kind: { const: "secret-word" }, id: { $ref: "#/$defs/Id" }, title: { $ref: "#/$defs/Title" } },
  },
  executor: () => ({
    step(_node, run) {
      run.ask({ text: "The secret word?", data: { questions: [{ id: "word", question: "The secret word?" }] } });
    },
  }),
  reply: {
    fromText: (text) => ({ word: text }),
    interpret: ({ node, resumeValue }) => {
      const word = resumeValue["word"];
      if (typeof word !== "string") throw new HandlerError("no_word", `the reply to "${node.id}" needs a word`);
      return { output: { word: word.toUpperCase() } };
    },
  },
  view: {
    waitingFor: (node, run) =>
      run.interrupt?.nodeId === node.id ? { kind: "external", label: "the secret word", nodeId: node.id } : undefined,
  },
};

interface GateNode {
  kind: "gatekeeper";
  id: string;
  title?: string;
}

/**
 * A third kind for the engine's open step: its `decide` fails the run ("stop"), ends it ("done") or hands the node
 * to its executor with a payload of its own; the executor completes at once to `$end` (a loud request) or runs an
 * effect that refuses with a HandlerError (anything else).
 */
const gatekeeper: NodeKind<GateNode, undefined, { loud: boolean }> = {
  kind: "gatekeeper",
  schema: {
    type: "object",
    additionalProperties: false,
    required: ["kind", "id"],
    properties: { kind: { const: "gatekeeper" }, id: { $ref: "#/$defs/Id" }, title: { $ref: "#/$defs/Title" } },
  },
  decide(_node, run) {
    const { text } = run.input;
    if (text === "stop") return { type: "fail", error: { code: "stopped_by_gate", message: "the gate said stop" } };
    if (text === "done") return { type: "complete" };
    return { type: "run", payload: { loud: text === text.toUpperCase() } };
  },
  executor: () => ({
    async step(_node, run) {
      if (run.payload?.loud) {
        run.complete({ output: { loud: true } }, { next: "$end" });
        return;
      }
      return run.effect(async () => {
        throw new HandlerError("too_quiet", "speak up");
      });
    },
  }),
};

const GATED: WorkflowDefinition<GateNode | UppercaseNode> = {
  id: "gated",
  name: "Gated",
  description: "A gate, then the shout.",
  nodes: [
    { kind: "gatekeeper", id: "gate" },
    { kind: "uppercase", id: "loud" },
  ],
};

// A definition names the plugin node types it uses beside the built-in ones.
const GUARDED: WorkflowDefinition<SecretWordNode> = {
  id: "guarded",
  name: "Guarded",
  description: "Asks for the secret word.",
  nodes: [{ kind: "secret-word", id: "gate" }],
};

const WORKFLOW: WorkflowDefinition<UppercaseNode> = {
  id: "shout",
  name: "Shout",
  description: "Upper-cases the request.",
  nodes: [{ kind: "uppercase", id: "loud", suffix: "!" }],
};

const KEY = "plugin-test-key-0123456789";
// API keys on, so a public route is public because the kind said so (everything else asks for the key).
const API_KEYS = JSON.stringify([
  {
    id: "caller",
    tenant: "acme",
    key: KEY,
    scopes: ["runs:create", "runs:read", "approvals:respond", "console:operate"],
  },
]);

describe("node kinds defined outside src, registered as a list (nodeKinds)", () => {
  let t: TestApp;
  const caller = jsonRpcCaller(() => t.baseUrl, { key: KEY });

  beforeAll(async () => {
    t = await startTestApp({ BUILTIN_WORKFLOWS: "none", API_KEYS }, undefined, undefined, {
      nodeKinds: [uppercase, secretWord, gatekeeper],
      workflows: [WORKFLOW, GUARDED, GATED],
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("runs a real task: the kind's executor and service upper-case the text into an artifact", async () => {
    const task = await caller.start("hello plugins", "shout");
    expect(task["status"].state).toBe("completed");
    expect(task["artifacts"]).toEqual([
      expect.objectContaining({
        artifactId: "loud.0",
        name: "shouted",
        parts: [{ kind: "text", text: "HELLO PLUGINS!" }],
      }),
    ]);
  });

  it("a kind's own interrupt: the console says what the task waits for, and the kind reads the text reply", async () => {
    const task = await caller.start("let me in", "guarded");
    expect(task["status"].state).toBe("input-required");
    const list = await fetch(`${t.baseUrl}/console/api/tasks`, { headers: { authorization: `Bearer ${KEY}` } });
    const row = ((await list.json()) as { tasks: Array<Record<string, any>> }).tasks.find(
      (r) => r["taskId"] === task["id"],
    );
    expect(row?.["waitingFor"]).toEqual({ kind: "external", label: "the secret word", nodeId: "gate" });
    const done = await caller.reply(task, "swordfish");
    expect(done["status"].state).toBe("completed");
    const stored = (await t.store.get(task["id"]))?.snapshot as { context: { outputs: Record<string, unknown> } };
    expect(stored.context.outputs["gate"]).toEqual({ word: "SWORDFISH" });
  });

  it("the open step: a kind's decision fails or ends the run, or runs the node with its own payload; an effect's HandlerError fails it with its code", async () => {
    const errorOf = async (id: string) =>
      (
        (await t.store.get(id))?.snapshot as {
          context: { error?: { code: string; nodeId?: string }; outputs: Record<string, unknown> };
        }
      ).context;
    const stopped = await caller.start("stop", "gated");
    expect(stopped["status"].state).toBe("failed");
    expect((await errorOf(stopped["id"])).error).toMatchObject({ code: "stopped_by_gate", nodeId: "gate" });
    const done = await caller.start("done", "gated");
    expect(done["status"].state).toBe("completed");
    expect(done["artifacts"] ?? []).toEqual([]);
    // Loud: completed at once, straight to $end (the shout after it never runs).
    const loud = await caller.start("LOUD", "gated");
    expect(loud["status"].state).toBe("completed");
    expect(loud["artifacts"] ?? []).toEqual([]);
    expect((await errorOf(loud["id"])).outputs).toEqual({ gate: { loud: true } });
    const quiet = await caller.start("quiet", "gated");
    expect(quiet["status"].state).toBe("failed");
    expect((await errorOf(quiet["id"])).error).toMatchObject({
      code: "too_quiet",
      message: "speak up",
      nodeId: "gate",
    });
  });

  it("serves the kind's route (public: no API key asked)", async () => {
    const res = await fetch(`${t.baseUrl}/v1/uppercase/quiet`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ shouted: "QUIET" });
    // Routes not declared public still ask for the key.
    expect((await fetch(`${t.baseUrl}/console/api/workflows/shout`)).status).toBe(401);
  });

  it("the console graph shows the kind's title and label, and the default next edge", async () => {
    const res = await fetch(`${t.baseUrl}/console/api/workflows/shout`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(res.status).toBe(200);
    const graph = (await res.json()) as {
      nodes: Array<Record<string, unknown>>;
      edges: Array<Record<string, unknown>>;
    };
    expect(graph.nodes[0]).toEqual({ id: "loud", kind: "uppercase", title: "shout it", label: "UPPERCASE!" });
    expect(graph.edges).toEqual([{ from: "loud", to: "$end", kind: "next" }]);
  });

  it("the loader validates it with its schema fragment and runs its check; hosts without it refuse the kind", () => {
    const { registry: kinds, problems } = withPluginKinds([uppercase], "nodeKinds");
    expect(problems).toEqual([]);
    expect(() =>
      checkWorkflow({ ...WORKFLOW, nodes: [{ kind: "uppercase", id: "loud", volume: 11 }] }, {}, {}, {}, kinds),
    ).toThrow(/nodes\/0: must NOT have additional property 'volume'/);
    expect(() =>
      checkWorkflow({ ...WORKFLOW, nodes: [{ kind: "uppercase", id: "loud", suffix: "!!!" }] }, {}, {}, {}, kinds),
    ).toThrow(/node "loud": one "!" is enough/);
    expect(() => checkWorkflow(WORKFLOW, {})).toThrow(/nodes\/0\/kind: must be equal to one of the allowed values/);
  });

  it("a list with a built-in name, a name given twice or a schema for another kind is refused, every problem named", () => {
    const idle = () => ({ step() {} });
    const http: NodeKind<{ kind: "http"; id: string }> = {
      kind: "http",
      schema: { type: "object", required: ["kind"], properties: { kind: { const: "http" } } },
      executor: idle,
    };
    const mislabelled: NodeKind<{ kind: "mislabelled"; id: string }> = {
      kind: "mislabelled",
      schema: { type: "object", required: ["kind"], properties: { kind: { const: "labelled" } } },
      executor: idle,
    };
    expect(withPluginKinds([uppercase, http, uppercase, mislabelled], "option nodeKinds").problems).toEqual([
      'option nodeKinds[1]: node kind "http" is built in; give yours another name',
      'option nodeKinds[2]: node kind "uppercase" is given twice',
      'option nodeKinds[3]: node kind "mislabelled": schema.properties.kind must be { "const": "mislabelled" }',
    ]);
  });
});
