import { cursorOf, switchTarget } from "../message-route.js";
import { isOutputTest } from "../output-condition.js";
import { incomingMessageOf, nodeAfter } from "../workflow-walk.js";
import type { SwitchNode } from "../../workflows/workflow-types.js";
import type { NodeExecutor, NodeRuntime } from "./node-executor.js";
import type { NodeGraphEdge, EngineNodeKind } from "./node-kind.js";

/** The kind, for the registry: routes at once (a stateless skill may hold it); its cases are the graph's edges. */
export const switchNodeKind: EngineNodeKind<SwitchNode> = {
  stateless: {
    async run(node, { workflow, message, outputs }) {
      const { target } = switchTarget(node, { message, outputs, nodeIds: workflow.nodes.map((n) => n.id) });
      return { next: target === undefined ? nodeAfter(workflow, node.id) : cursorOf(target) };
    },
  },
  executor: (runtime) => switchNodeExecutor(runtime),
  view: {
    edges: (node, { after }): NodeGraphEdge[] => [
      ...node.cases.map((c): NodeGraphEdge => ({
        from: node.id,
        to: c.goto,
        kind: "case",
        condition: conditionText(c.when as Record<string, unknown>),
      })),
      { from: node.id, to: node.default ?? after, kind: "default", condition: "default" },
    ],
  },
};

/** A case's condition in words, for the graph's edge label. */
function conditionText(when: Record<string, unknown>): string {
  const words: string[] = [];
  for (const [key, value] of Object.entries(when)) {
    if (key === "messageIdPrefix") words.push(`messageId ^${String(value)}`);
    else if (key === "textContains") words.push(`text ∋ "${String(value)}"`);
    else if (key === "textMatches") words.push(`text ~ /${String(value)}/`);
    else if (key === "output" && value && typeof value === "object")
      words.push(...Object.entries(value).map(([path, v]) => outputText(path, v)));
    else if (value && typeof value === "object")
      words.push(...Object.entries(value).map(([path, v]) => `${key}.${path} = ${JSON.stringify(v)}`));
  }
  return words.join(" & ") || "always";
}

const OPERATOR_WORDS: Record<string, string> = { $eq: "=", $ne: "≠", $gt: ">", $gte: "≥", $lt: "<", $lte: "≤" };

/** One `output` entry in words: `quote.total > 1000`, `quote.rush exists`. */
function outputText(path: string, expected: unknown): string {
  if (!isOutputTest(expected)) return `${path} = ${JSON.stringify(expected)}`;
  return Object.entries(expected)
    .map(([op, v]) =>
      op === "$exists"
        ? `${path} ${v ? "exists" : "absent"}`
        : `${path} ${OPERATOR_WORDS[op] ?? op} ${JSON.stringify(v)}`,
    )
    .join(" & ");
}

/** `switch` nodes: route on the incoming message and earlier nodes' outputs; the chosen case is the node's output (no effect to run). */
export function switchNodeExecutor(runtime: NodeRuntime): NodeExecutor<SwitchNode> {
  return {
    async step({ taskId, node, live, workflow, at }) {
      const context = live.actor.getSnapshot().context;
      const { target, matched } = switchTarget(node, {
        message: incomingMessageOf(context),
        outputs: context.outputs,
        nodeIds: workflow.nodes.map((n) => n.id),
      });
      const next = target === undefined ? nodeAfter(workflow, node.id) : cursorOf(target);
      await runtime.repository.commit(taskId, { type: "NODE_STARTED", at, nodeId: node.id });
      await runtime.repository.commit(taskId, {
        type: "NODE_COMPLETED",
        at,
        nodeId: node.id,
        output: { matched, next },
        artifacts: [],
        next,
      });
      return true;
    },
  };
}
