// Issue 40 items 5 and 6 without a server: a switch routing on what earlier nodes produced, approval gates showing
// a list of nodes' artifacts or those of the path taken, and what the loader now reports (unknown nodes and paths,
// nodes that cannot have run, gates that can show nothing, URLs the egress guard will refuse, schema errors that
// no longer hide the rest).
import { describe, expect, it } from "vitest";
import type { Artifact } from "../../src/domain/a2a-types.js";
import { conditionHolds, switchTarget } from "../../src/engine/message-route.js";
import { expectationHolds, outputKeyParts } from "../../src/engine/output-condition.js";
import { reviewedArtifactIds } from "../../src/engine/nodes/gates/gate-artifacts.js";
import { checkWorkflow, loadWorkflowCatalog, WorkflowLoadError } from "../../src/engine/workflow-catalog.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import type { ApprovalNode, SwitchNode, WorkflowDefinition } from "../../src/workflows/workflow-types.js";

const outputs = { quote: { total: 1500, currency: "EUR", lines: [1, 2], rush: null }, "v1.price": { amount: 3 } };
const nodeIds = ["quote", "v1", "v1.price", "route"];

describe("output conditions", () => {
  it("a key names the longest node id that fits, then a path inside its output", () => {
    expect(outputKeyParts("quote.total", nodeIds)).toEqual({ nodeId: "quote", path: ["total"] });
    expect(outputKeyParts("v1.price.amount", nodeIds)).toEqual({ nodeId: "v1.price", path: ["amount"] });
    expect(outputKeyParts("quote", nodeIds)).toEqual({ nodeId: "quote", path: [] });
    expect(outputKeyParts("quot.total", nodeIds)).toBeUndefined();
  });

  it("values are equal as JSON; tests compare numbers with numbers and strings with strings", () => {
    expect(expectationHolds(1500, 1500)).toBe(true);
    expect(expectationHolds("1500", 1500)).toBe(false);
    expect(expectationHolds([1, 2], [1, 2])).toBe(true);
    expect(expectationHolds({ $gt: 1000 }, 1500)).toBe(true);
    expect(expectationHolds({ $gt: 1000, $lte: 1500 }, 1500)).toBe(true);
    expect(expectationHolds({ $lt: 1000 }, 1500)).toBe(false);
    expect(expectationHolds({ $gt: "1000" }, 1500)).toBe(false);
    expect(expectationHolds({ $gte: "2026-01-01" }, "2026-03-01T10:00:00Z")).toBe(true);
    expect(expectationHolds({ $exists: true }, null)).toBe(true);
    expect(expectationHolds({ $exists: true }, undefined)).toBe(false);
    expect(expectationHolds({ $exists: false }, undefined)).toBe(true);
    expect(expectationHolds({ $ne: "EUR" }, "USD")).toBe(true);
    expect(expectationHolds({ $ne: "EUR" }, undefined)).toBe(true);
    expect(expectationHolds({ $eq: { a: 1 } }, { a: 1 })).toBe(true);
    expect(expectationHolds(null, undefined)).toBe(false);
  });

  it("a switch routes on an earlier node's output, alone or with a message condition", () => {
    const node: SwitchNode = {
      kind: "switch",
      id: "route",
      cases: [
        { when: { output: { "quote.total": { $gt: 1000 } }, textContains: "rush" }, goto: "rush" },
        { when: { output: { "quote.total": { $gt: 1000 }, "quote.currency": "EUR" } }, goto: "approve" },
        { when: { output: { "quote.missing": { $exists: false } } }, goto: "cheap" },
      ],
      default: "$end",
    };
    const input = { message: undefined, outputs, nodeIds };
    expect(switchTarget(node, input)).toEqual({ target: "approve", matched: 1 });
    const rush = { messageId: "m", role: "user" as const, parts: [{ kind: "text" as const, text: "Rush it" }] };
    expect(switchTarget(node, { ...input, message: rush })).toEqual({ target: "rush", matched: 0 });
    const cheap = { ...input, outputs: { quote: { total: 10, currency: "EUR" } } };
    expect(switchTarget(node, cheap)).toEqual({ target: "cheap", matched: 2 });
    // A node that has not run has no output: only $exists: false holds.
    expect(conditionHolds({ output: { "quote.total": { $exists: false } } }, { ...input, outputs: {} })).toBe(true);
    expect(conditionHolds({ output: { "quote.total": { $lt: 1 } } }, { ...input, outputs: {} })).toBe(false);
  });
});

const definition = (nodes: unknown[]): Record<string, unknown> => ({
  id: "quotes",
  name: "Quotes",
  description: "d",
  nodes,
});
const quoteNodes = (when: unknown): unknown[] => [
  { kind: "task", id: "quote", handler: "echo" },
  { kind: "switch", id: "route", cases: [{ when, goto: "approve" }], default: "$end" },
  // No refine: a refine would loop back to "quote", and so past the switch again.
  { kind: "approval", id: "approve", title: "Approve the quote", artifactFrom: "quote", actions: ["accept", "reject"] },
];

function loadProblems(value: unknown): readonly string[] {
  try {
    checkWorkflow(value, builtinHandlers);
  } catch (err) {
    if (err instanceof WorkflowLoadError) return err.problems;
    throw err;
  }
  return [];
}

describe("loading output conditions", () => {
  it("the schema takes values and tests, and refuses an unknown operator", () => {
    const loaded = checkWorkflow(
      definition(quoteNodes({ output: { "quote.total": { $gte: 1000 } } })),
      builtinHandlers,
    );
    expect((loaded.nodes[1] as SwitchNode).cases[0]!.when.output).toEqual({ "quote.total": { $gte: 1000 } });
    expect(loadProblems(definition(quoteNodes({ output: { "quote.total": { $above: 1000 } } })))).toEqual([
      `invalid workflow definition: nodes/1/cases/0/when/output/quote.total: must NOT have additional property '$above'`,
    ]);
  });

  it("an unknown node, a node that cannot have run before the switch, a path its kind never produces: load problems", () => {
    expect(loadProblems(definition(quoteNodes({ output: { "quot.total": 1 } })))).toEqual([
      `workflow "quotes", switch "route" case 1: output "quot.total" names no node of this workflow (did you mean "quote"?)`,
    ]);
    expect(loadProblems(definition(quoteNodes({ output: { "approve.action": "accept" } })))).toEqual([
      `workflow "quotes", switch "route" case 1: output "approve.action" reads node "approve", which cannot have run before this switch`,
    ]);
    const afterGate: unknown[] = [
      { kind: "task", id: "quote", handler: "echo" },
      { kind: "approval", id: "gate", title: "Look", artifactFrom: "quote", actions: ["accept", "reject"] },
      { kind: "switch", id: "route", cases: [{ when: { output: { "gate.verdict": "accept" } }, goto: "$end" }] },
    ];
    expect(loadProblems(definition(afterGate))).toEqual([
      `workflow "quotes", switch "route" case 1: output "gate.verdict": the output of node "gate" (approval) never has "verdict" (it has action, feedback, decidedBy, decidedAt, edited, refineFeedback, reason)`,
    ]);
    afterGate[2] = {
      kind: "switch",
      id: "route",
      cases: [{ when: { output: { "gate.action": "accept" } }, goto: "$end" }],
    };
    expect(loadProblems(definition(afterGate))).toEqual([]);
    expect(loadProblems(definition(quoteNodes({ output: { "quote.total": { $gt: 1, x: 2 } } })))).toEqual([
      `workflow "quotes", switch "route" case 1: output "quote.total" mixes "$" tests with other keys: write either a test ({"$gt": 1}) or a value to equal`,
    ]);
  });

  it("a node on a loop back into the switch can have run before it", () => {
    const loop = [
      { kind: "switch", id: "route", cases: [{ when: { output: { "again.count": { $gt: 2 } } }, goto: "$end" }] },
      { kind: "task", id: "again", handler: "echo", next: "route" },
    ];
    expect(loadProblems(definition(loop))).toEqual([]);
  });
});

function gateContext(artifacts: Artifact[], artifactsByNode: Record<string, string[]>): TaskContext {
  return { artifacts, artifactsByNode } as unknown as TaskContext;
}

describe("artifactFrom: a list, or the path taken", () => {
  const artifact = (id: string): Artifact => ({ artifactId: id, parts: [{ kind: "text", text: id }] });
  const context = gateContext([artifact("cheap.0"), artifact("draft.0"), artifact("draft.1")], {
    draft: ["draft.0", "draft.1"],
    cheap: ["cheap.0"],
  });
  const gate = (artifactFrom: ApprovalNode["artifactFrom"]): ApprovalNode => ({
    kind: "approval",
    id: "g",
    title: "t",
    ...(artifactFrom !== undefined ? { artifactFrom } : {}),
  });

  it("shows each listed node's artifacts that ran, in the list's order; $taken shows all, as produced", () => {
    expect(reviewedArtifactIds(gate("draft"), context)).toEqual(["draft.0", "draft.1"]);
    expect(reviewedArtifactIds(gate(["expensive", "draft", "cheap"]), context)).toEqual([
      "draft.0",
      "draft.1",
      "cheap.0",
    ]);
    expect(reviewedArtifactIds(gate("$taken"), context)).toEqual(["cheap.0", "draft.0", "draft.1"]);
    expect(reviewedArtifactIds(gate(undefined), context)).toEqual([]);
  });

  const branches = (artifactFrom: unknown): WorkflowDefinition =>
    definition([
      {
        kind: "switch",
        id: "route",
        cases: [{ when: { textContains: "big" }, goto: "expensive" }],
        default: "cheap",
      },
      { kind: "task", id: "expensive", handler: "echo", next: "gate" },
      { kind: "task", id: "cheap", handler: "echo", next: "gate" },
      { kind: "approval", id: "gate", title: "Approve", artifactFrom },
    ]) as unknown as WorkflowDefinition;
  const load = (w: WorkflowDefinition) =>
    loadWorkflowCatalog({ builtinDir: "/nowhere", builtin: [], workflows: [w], handlers: builtinHandlers });

  it("a gate that can show nothing on some path is a warning; a list covering every path or $taken is not", async () => {
    expect((await load(branches("expensive"))).warnings).toEqual([
      `workflows[0]: workflow "quotes", approval gate "gate": on some path none of "expensive" runs before it, so the approver may be shown no artifact (artifactFrom takes a list, or "$taken" for the path the run took)`,
    ]);
    expect((await load(branches(["expensive", "cheap"]))).warnings).toEqual([]);
    expect((await load(branches("$taken"))).warnings).toEqual([]);
  });
});

describe("what one load reports", () => {
  it("a schema error does not hide an unknown variable in another node or a missing handler", () => {
    const problems = loadProblems(
      definition([
        { kind: "task", id: "draft", handler: "ecoh" },
        { kind: "http", id: "crm", url: "https://${CRM_URL}/leads" },
        { kind: "approval", id: "gate", title: "Approve", artifactFrom: "Draft!" },
      ]),
    );
    expect(problems.some((p) => p.includes("nodes/2/artifactFrom"))).toBe(true);
    expect(problems.some((p) => p.includes(`node "crm": url refers to \${CRM_URL}`))).toBe(true);
    expect(problems.some((p) => p.includes(`"ecoh"`))).toBe(true);
  });

  it("a URL the egress guard will refuse is a load problem naming the setting that allows it", async () => {
    const policy = { allowHttpLoopback: false, allowedPorts: [], allowHosts: [], denyHosts: [], privateHosts: [] };
    const w = definition([
      { kind: "http", id: "crm", url: "http://10.0.0.7:8080/leads" },
      { kind: "http", id: "fine", url: "https://api.example.com/leads" },
      { kind: "a2a.invoke", id: "peer", agentCardUrl: "https://127.0.0.1/.well-known/agent-card.json" },
    ]) as unknown as WorkflowDefinition;
    const failure = await loadWorkflowCatalog({
      builtinDir: "/nowhere",
      builtin: [],
      workflows: [w],
      handlers: builtinHandlers,
      egress: {
        http: { ...policy, settings: { privateHosts: "HTTP_NODE_PRIVATE_HOSTS" } },
        peer: { ...policy, settings: { allowedPorts: "A2A_PEER_ALLOWED_PORTS" } },
      },
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowLoadError);
    const problems = (failure as WorkflowLoadError).problems;
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /^workflows\[0\]: workflow "quotes", node "crm": its url will be refused when it runs: .*HTTP_NODE_PRIVATE_HOSTS/,
    );
    expect(problems[1]).toMatch(/node "peer": its agentCardUrl will be refused when it runs: .*loopback/);
  });
});
