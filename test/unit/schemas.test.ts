// The JSON Schemas in /schemas and their validator: valid documents pass, and every kind of invalid
// document is refused with a message that names the failing path.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nodeKindNames } from "../../src/engine/nodes/node-registry.js";
import {
  SchemaValidationError,
  formatAjvErrors,
  schemasDirectory,
  validateA2ATaskState,
  validateCapabilities,
  validateWorkflowDefinition,
} from "../../src/schemas/schema-validator.js";

/** The error thrown by fn (fails the test if nothing is thrown). */
function errorOf(fn: () => void): SchemaValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaValidationError);
    return error as SchemaValidationError;
  }
  throw new Error("expected a validation error, got none");
}

describe("schema files", () => {
  it("are found next to package.json and declare draft 2020-12 with our $id", () => {
    const dir = schemasDirectory();
    const files = readdirSync(dir).filter((f) => f.endsWith(".schema.json"));
    expect(files).toEqual(
      expect.arrayContaining(["a2a-task-state.schema.json", "capabilities.schema.json", "workflow.schema.json"]),
    );
    for (const file of files) {
      const schema = JSON.parse(readFileSync(join(dir, file), "utf8")) as Record<string, unknown>;
      expect(schema.$schema, file).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema.$id, file).toBe(`https://openwop-a2a-host.dev/schemas/${file}`);
    }
  });
});

describe("A2ATaskState", () => {
  const valid = {
    taskId: "run_01",
    runId: "run_01",
    contextId: "ctx_1",
    state: "input-required",
    interruptKind: "approval",
    updatedAt: "2026-06-24T10:00:00.000Z",
    pushConfig: { url: "https://hooks.example.com/a2a", tokenFingerprint: "9f86d081884c7d65" },
  };

  it("accepts a complete and a minimal state", () => {
    expect(() => validateA2ATaskState(valid)).not.toThrow();
    expect(() =>
      validateA2ATaskState({ taskId: "r", runId: "r", state: "working", updatedAt: "2026-06-24T10:00:00Z" }),
    ).not.toThrow();
  });

  it("accepts each of the eight lowercase-hyphen states", () => {
    for (const state of [
      "submitted",
      "working",
      "input-required",
      "auth-required",
      "completed",
      "failed",
      "canceled",
      "rejected",
    ]) {
      expect(() => validateA2ATaskState({ ...valid, state }), state).not.toThrow();
    }
  });

  it("refuses proto spellings, the double-L spelling and unknown interrupt kinds", () => {
    expect(errorOf(() => validateA2ATaskState({ ...valid, state: "cancelled" })).message).toContain(
      "state: must be equal to one of the allowed values",
    );
    expect(() => validateA2ATaskState({ ...valid, state: "TASK_STATE_WORKING" })).toThrow(/state:/);
    expect(() => validateA2ATaskState({ ...valid, interruptKind: "external-event" })).toThrow(/interruptKind:/);
  });

  it("names every missing required property and unknown property", () => {
    const error = errorOf(() => validateA2ATaskState({ taskId: "", extra: true }));
    const text = error.message;
    expect(text).toContain("taskId: must NOT have fewer than 1 characters");
    for (const missing of ["runId", "state", "updatedAt"]) {
      expect(text).toContain(`(root): must have required property '${missing}'`);
    }
    expect(text).toContain("(root): must NOT have additional property 'extra'");
    expect(error.issues.length).toBeGreaterThanOrEqual(5);
  });

  it("checks formats and the push config", () => {
    expect(() => validateA2ATaskState({ ...valid, updatedAt: "yesterday" })).toThrow(
      /updatedAt: must match format "date-time"/,
    );
    expect(() => validateA2ATaskState({ ...valid, pushConfig: { url: "not a url" } })).toThrow(
      /pushConfig\/url: must match format "uri"/,
    );
    expect(() =>
      validateA2ATaskState({ ...valid, pushConfig: { url: "https://h.example/x", tokenFingerprint: "x".repeat(33) } }),
    ).toThrow(/pushConfig\/tokenFingerprint: must NOT have more than 32 characters/);
    expect(() =>
      validateA2ATaskState({ ...valid, pushConfig: { url: "https://h.example/x", token: "secret" } }),
    ).toThrow(/pushConfig: must NOT have additional property 'token'/);
  });
});

describe("capabilities (/.well-known/openwop)", () => {
  const valid = {
    protocolVersion: "1.2.0",
    supportedEnvelopes: ["clarification.request"],
    schemaVersions: { runEvent: 2, runSnapshot: 1 },
    limits: { clarificationRounds: 3, schemaRounds: 2, envelopesPerTurn: 8, maxBudgetCostUsd: 1.5 },
    fixtures: ["conformance-noop", "conformance-approval"],
    supportedTransports: ["rest", "a2a", "grpc"],
    engineVersion: "0.1.0",
    eventLogSchemaVersion: 2,
    implementation: { name: "openwop-a2a-host", version: "0.1.0" },
    a2a: {
      supported: true,
      agentCardUrl: "/.well-known/agent-card.json",
      streaming: true,
      pushNotifications: true,
      durableTasks: true,
      protocolVersions: ["0.3", "1.0"],
      preferredVersion: "0.3",
      profiles: ["a2a-0.3-legacy", "a2a-1.0"],
    },
    webhooks: { supported: false },
  };

  it("accepts a full document, other capability families, and an absolute agentCardUrl", () => {
    expect(() => validateCapabilities(valid)).not.toThrow();
    expect(() =>
      validateCapabilities({
        ...valid,
        a2a: { supported: true, agentCardUrl: "https://a.example/.well-known/agent-card.json" },
      }),
    ).not.toThrow();
    const { a2a: _a2a, fixtures: _f, ...minimal } = valid;
    expect(() => validateCapabilities(minimal)).not.toThrow();
  });

  it("requires the core fields and the three core limits", () => {
    const error = errorOf(() => validateCapabilities({ limits: { clarificationRounds: 1 } }));
    for (const missing of ["protocolVersion", "supportedEnvelopes", "schemaVersions"]) {
      expect(error.message).toContain(`(root): must have required property '${missing}'`);
    }
    expect(error.message).toContain("limits: must have required property 'schemaRounds'");
    expect(error.message).toContain("limits: must have required property 'envelopesPerTurn'");
  });

  it("refuses bad limits and schema versions", () => {
    expect(() => validateCapabilities({ ...valid, limits: { ...valid.limits, maxTurns: 3 } })).toThrow(
      /limits: must NOT have additional property 'maxTurns'/,
    );
    expect(() => validateCapabilities({ ...valid, limits: { ...valid.limits, schemaRounds: -1 } })).toThrow(
      /limits\/schemaRounds: must be >= 0/,
    );
    expect(() => validateCapabilities({ ...valid, schemaVersions: { runEvent: 1.5 } })).toThrow(
      /schemaVersions\/runEvent: must be integer/,
    );
    expect(() => validateCapabilities({ ...valid, supportedTransports: ["rest", "websocket"] })).toThrow(
      /supportedTransports\/1: must be equal to one of the allowed values/,
    );
  });

  it("validates the a2a block exactly", () => {
    const a2a = valid.a2a;
    expect(() => validateCapabilities({ ...valid, a2a: { supported: true } })).toThrow(
      /a2a: must have required property 'agentCardUrl'/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, resubscribe: true } })).toThrow(
      /a2a: must NOT have additional property 'resubscribe'/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, protocolVersions: ["0.3.0"] } })).toThrow(
      /a2a\/protocolVersions\/0: must match pattern/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, protocolVersions: [] } })).toThrow(
      /a2a\/protocolVersions: must NOT have fewer than 1 items/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, protocolVersions: ["1.0", "1.0"] } })).toThrow(
      /a2a\/protocolVersions: must NOT have duplicate items/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, preferredVersion: "v1" } })).toThrow(
      /a2a\/preferredVersion: must match pattern/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, profiles: ["a2a-0.3-compat"] } })).toThrow(
      /a2a\/profiles\/0: must match pattern/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, agentCardUrl: "http://exa mple.com/card" } })).toThrow(
      /a2a\/agentCardUrl: must match format "uri-reference"/,
    );
    expect(() => validateCapabilities({ ...valid, a2a: { ...a2a, streaming: "yes" } })).toThrow(
      /a2a\/streaming: must be boolean/,
    );
  });
});

describe("workflow definition", () => {
  const valid = {
    $schema: "../../schemas/workflow.schema.json",
    id: "doc-review",
    name: "Document review",
    description: "Drafts a document, asks for approval, publishes it.",
    version: "1.0.0",
    tags: ["docs"],
    examples: ["Review the Q3 report"],
    inputModes: ["text/plain"],
    outputModes: ["text/markdown"],
    nodes: [
      { kind: "clarification", id: "ask", questions: [{ id: "topic", question: "Which topic?", required: true }] },
      {
        kind: "task",
        id: "draft",
        title: "Draft",
        handler: "drafts.write",
        params: { tone: "formal" },
        retry: { maxAttempts: 3 },
      },
      {
        kind: "approval",
        id: "gate",
        title: "Approve the draft",
        description: "Check facts and tone.",
        artifactFrom: "draft",
        actions: ["accept", "reject", "refine"],
        timeoutMs: 86_400_000,
        onReject: "fail",
        onRefine: { goto: "draft" },
      },
      { kind: "delay", id: "cool-off", durationMs: 0 },
      {
        kind: "a2a.invoke",
        id: "publish",
        agentCardUrl: "https://publisher.example.com/.well-known/agent-card.json",
        skillId: "publish",
        message: "Publish the approved draft",
        timeoutMs: 30_000,
      },
    ],
  };

  it("accepts a workflow using every node kind, and a minimal one", () => {
    expect(() => validateWorkflowDefinition(valid)).not.toThrow();
    expect(() =>
      validateWorkflowDefinition({
        id: "noop",
        name: "No-op",
        description: "",
        nodes: [{ kind: "task", id: "n", handler: "noop" }],
      }),
    ).not.toThrow();
    expect(() =>
      validateWorkflowDefinition({
        ...valid,
        nodes: [...valid.nodes.slice(0, 2), { kind: "approval", id: "g2", title: "t", onReject: { goto: "draft" } }],
      }),
    ).not.toThrow();
  });

  it("accepts an http node with every field, and a minimal one", () => {
    const http = {
      kind: "http",
      id: "notify",
      title: "Notify billing",
      url: "https://${BILLING_HOST}/hooks/doc?key=${BILLING_KEY}",
      method: "PUT",
      headers: { Authorization: "Bearer ${BILLING_TOKEN}", "X-Team": "docs" },
      params: { channel: "email" },
      timeoutMs: 5_000,
      retry: { maxAttempts: 4 },
      next: "$end",
    };
    expect(() => validateWorkflowDefinition({ ...valid, nodes: [...valid.nodes, http] })).not.toThrow();
    expect(() =>
      validateWorkflowDefinition({ ...valid, nodes: [{ kind: "http", id: "h", url: "https://svc.example.com/run" }] }),
    ).not.toThrow();
    expect(() => validateWorkflowDefinition({ ...valid, nodes: [{ ...http, next: "nowhere" }] })).toThrow(
      /nodes\/0\/next: unknown node id 'nowhere'/,
    );
  });

  it("reports an unknown node kind at its path, without noise from the other node kinds", () => {
    const error = errorOf(() =>
      validateWorkflowDefinition({ ...valid, nodes: [valid.nodes[0], { kind: "script", id: "x", code: "rm -rf /" }] }),
    );
    expect(error.message).toContain("nodes/1/kind: must be equal to one of the allowed values");
    expect(error.issues).toEqual([
      {
        path: "nodes/1/kind",
        // Every kind the registry has (node-kinds.test.ts keeps the schema's enum in the registry's order).
        message: `must be equal to one of the allowed values (${nodeKindNames()
          .map((k) => JSON.stringify(k))
          .join(", ")})`,
      },
    ]);
  });

  it("applies the schema of the node's own kind", () => {
    const cases: [node: Record<string, unknown>, expected: RegExp][] = [
      [{ kind: "task", id: "t" }, /nodes\/0: must have required property 'handler'/],
      [
        { kind: "task", id: "t", handler: "h", retry: { maxAttempts: 11 } },
        /nodes\/0\/retry\/maxAttempts: must be <= 10/,
      ],
      [
        { kind: "task", id: "t", handler: "h", durationMs: 5 },
        /nodes\/0: must NOT have additional property 'durationMs'/,
      ],
      [{ kind: "approval", id: "g" }, /nodes\/0: must have required property 'title'/],
      [
        { kind: "approval", id: "g", title: "t", actions: ["accept", "edit-accept"] },
        /nodes\/0\/actions\/1: must be equal to one of the allowed values/,
      ],
      [
        { kind: "approval", id: "g", title: "t", actions: ["accept", "accept"] },
        /nodes\/0\/actions: must NOT have duplicate items/,
      ],
      [{ kind: "approval", id: "g", title: "t", timeoutMs: 999 }, /nodes\/0\/timeoutMs: must be >= 1000/],
      [
        { kind: "approval", id: "g", title: "t", onReject: "ignore" },
        /nodes\/0\/onReject: must match exactly one schema in oneOf/,
      ],
      [
        { kind: "approval", id: "g", title: "t", onRefine: { goto: "Bad Id" } },
        /nodes\/0\/onRefine\/goto: must match pattern/,
      ],
      [{ kind: "clarification", id: "c", questions: [] }, /nodes\/0\/questions: must NOT have fewer than 1 items/],
      [
        { kind: "clarification", id: "c", questions: [{ id: "q" }] },
        /nodes\/0\/questions\/0: must have required property 'question'/,
      ],
      [{ kind: "delay", id: "d", durationMs: -1 }, /nodes\/0\/durationMs: must be >= 0/],
      [{ kind: "delay", id: "d", durationMs: 1.5 }, /nodes\/0\/durationMs: must be integer/],
      [
        { kind: "a2a.invoke", id: "i", agentCardUrl: "/relative/card.json" },
        /nodes\/0\/agentCardUrl: must match format "uri"/,
      ],
      [{ kind: "a2a.invoke", id: "i" }, /nodes\/0: must have required property 'agentCardUrl'/],
      [{ kind: "http", id: "h" }, /nodes\/0: must have required property 'url'/],
      [{ kind: "http", id: "h", url: "" }, /nodes\/0\/url: must NOT have fewer than 1 characters/],
      [
        { kind: "http", id: "h", url: "https://svc.example.com", method: "GET" },
        /nodes\/0\/method: must be equal to one of the allowed values/,
      ],
      [
        { kind: "http", id: "h", url: "https://svc.example.com", headers: { "Bad Header": "x" } },
        /nodes\/0\/headers: property name must be valid/,
      ],
      [
        { kind: "http", id: "h", url: "https://svc.example.com", headers: { "X-N": 1 } },
        /nodes\/0\/headers\/X-N: must be string/,
      ],
      [
        { kind: "http", id: "h", url: "https://svc.example.com", retry: { maxAttempts: 0 } },
        /nodes\/0\/retry\/maxAttempts: must be >= 1/,
      ],
      [
        { kind: "http", id: "h", url: "https://svc.example.com", handler: "x" },
        /nodes\/0: must NOT have additional property 'handler'/,
      ],
      [{ id: "k" }, /nodes\/0: must have required property 'kind'/],
    ];
    for (const [node, expected] of cases) {
      expect(() => validateWorkflowDefinition({ ...valid, nodes: [node] }), JSON.stringify(node)).toThrow(expected);
    }
  });

  it("checks ids, required top-level fields and unknown top-level fields", () => {
    expect(() => validateWorkflowDefinition({ ...valid, id: "Doc Review" })).toThrow(
      /^invalid workflow definition: id: must match pattern/,
    );
    expect(() => validateWorkflowDefinition({ ...valid, id: "a".repeat(65) })).toThrow(/id: must match pattern/);
    expect(() => validateWorkflowDefinition({ ...valid, nodes: [{ kind: "delay", id: "-d", durationMs: 1 }] })).toThrow(
      /nodes\/0\/id: must match pattern/,
    );
    expect(() => validateWorkflowDefinition({ ...valid, nodes: [] })).toThrow(
      /nodes: must NOT have fewer than 1 items/,
    );
    expect(() => validateWorkflowDefinition({ ...valid, steps: [] })).toThrow(
      /\(root\): must NOT have additional property 'steps'/,
    );
    const { name: _name, ...withoutName } = valid;
    expect(() => validateWorkflowDefinition(withoutName)).toThrow(/\(root\): must have required property 'name'/);
    expect(() => validateWorkflowDefinition("not an object")).toThrow(/\(root\): must be object/);
  });

  it("refuses duplicate node ids and references to unknown nodes", () => {
    const duplicate = errorOf(() =>
      validateWorkflowDefinition({ ...valid, nodes: [...valid.nodes, { kind: "delay", id: "draft", durationMs: 1 }] }),
    );
    expect(duplicate.issues).toEqual([{ path: "nodes/5/id", message: "duplicate node id 'draft'" }]);

    const dangling = errorOf(() =>
      validateWorkflowDefinition({
        ...valid,
        nodes: [
          {
            kind: "approval",
            id: "g",
            title: "t",
            artifactFrom: "nope",
            onReject: { goto: "gone" },
            onRefine: { goto: "g" },
          },
        ],
      }),
    );
    expect(dangling.issues).toEqual([
      { path: "nodes/0/artifactFrom", message: "unknown node id 'nope'" },
      { path: "nodes/0/onReject/goto", message: "unknown node id 'gone'" },
    ]);
  });
});

describe("formatAjvErrors", () => {
  it("decodes JSON pointers, marks the root and drops duplicates and if-summaries", () => {
    const text = formatAjvErrors([
      {
        instancePath: "/a~1b/0",
        schemaPath: "#/x",
        keyword: "type",
        params: { type: "string" },
        message: "must be string",
      },
      {
        instancePath: "/a~1b/0",
        schemaPath: "#/x",
        keyword: "type",
        params: { type: "string" },
        message: "must be string",
      },
      {
        instancePath: "",
        schemaPath: "#/required",
        keyword: "required",
        params: { missingProperty: "id" },
        message: "must have required property 'id'",
      },
      {
        instancePath: "/n",
        schemaPath: "#/allOf/0/if",
        keyword: "if",
        params: { failingKeyword: "then" },
        message: 'must match "then" schema',
      },
    ]);
    expect(text).toBe("a/b/0: must be string\n(root): must have required property 'id'");
    expect(formatAjvErrors(null)).toBe("");
  });
});
