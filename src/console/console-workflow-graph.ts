import { END_TARGET, type WorkflowDefinition, type WorkflowNode } from "../workflows/workflow-types.js";
import { nodeTitle, originOf } from "./console-task-view.js";

/** One node of a workflow's graph as the console draws it; `$end` stands for the end of the run. */
export interface ConsoleGraphNode {
  id: string;
  kind: WorkflowNode["kind"] | "end";
  title: string;
  /** a2a.invoke: the peer agent (scheme, host and port only). */
  remote?: { agent: string; skillId?: string };
}

export interface ConsoleGraphEdge {
  from: string;
  to: string;
  /** Why the run takes this edge: `next`, a switch `case` (with its condition) or `default`, an approval's `accept`, `refine` or `reject`. */
  kind: "next" | "case" | "default" | "accept" | "refine" | "reject";
  /** Words for the edge's label: the switch condition, "refine", "reject". */
  condition?: string;
}

export interface ConsoleWorkflowGraph {
  id: string;
  name: string;
  description: string;
  nodes: ConsoleGraphNode[];
  edges: ConsoleGraphEdge[];
}

const END: ConsoleGraphNode = { id: END_TARGET, kind: "end", title: "end" };

/**
 * The workflow's own graph, read from its definition the way the engine walks it (workflow-engine.ts):
 * `next` (or the following node), switch cases and default, an approval's accept, refine loop (`onRefine`,
 * else the reviewed node, else the one before) and reject (`onReject.goto`, else the run fails: no edge).
 */
export function workflowGraphOf(workflow: WorkflowDefinition): ConsoleWorkflowGraph {
  const nodes: ConsoleGraphNode[] = workflow.nodes.map((node) => ({
    id: node.id,
    kind: node.kind,
    title: nodeTitle(node),
    ...(node.kind === "a2a.invoke" ? { remote: { agent: originOf(node.agentCardUrl), ...(node.skillId ? { skillId: node.skillId } : {}) } } : {}),
  }));
  const edges: ConsoleGraphEdge[] = [];
  const after = (index: number): string => {
    const next = (workflow.nodes[index] as { next?: unknown }).next;
    if (typeof next === "string") return next;
    return workflow.nodes[index + 1]?.id ?? END_TARGET;
  };
  workflow.nodes.forEach((node, index) => {
    switch (node.kind) {
      case "switch":
        for (const c of node.cases) edges.push({ from: node.id, to: c.goto, kind: "case", condition: conditionText(c.when as Record<string, unknown>) });
        edges.push({ from: node.id, to: node.default ?? after(index), kind: "default", condition: "default" });
        break;
      case "approval": {
        edges.push({ from: node.id, to: after(index), kind: "accept", condition: "accept" });
        const actions = node.actions ?? ["accept", "reject", "refine", "edit", "ask"];
        const refine = node.onRefine?.goto ?? node.artifactFrom ?? workflow.nodes[index - 1]?.id;
        if (actions.includes("refine") && refine) edges.push({ from: node.id, to: refine, kind: "refine", condition: "refine" });
        if (typeof node.onReject === "object") edges.push({ from: node.id, to: node.onReject.goto, kind: "reject", condition: "reject" });
        break;
      }
      default:
        edges.push({ from: node.id, to: after(index), kind: "next" });
    }
  });
  return { id: workflow.id, name: workflow.name, description: workflow.description, nodes: edges.some((e) => e.to === END_TARGET) ? [...nodes, END] : nodes, edges };
}

function conditionText(when: Record<string, unknown>): string {
  const words: string[] = [];
  for (const [key, value] of Object.entries(when)) {
    if (key === "messageIdPrefix") words.push(`messageId ^${String(value)}`);
    else if (key === "textContains") words.push(`text ∋ "${String(value)}"`);
    else if (key === "textMatches") words.push(`text ~ /${String(value)}/`);
    else if (value && typeof value === "object") words.push(...Object.entries(value).map(([path, v]) => `${key}.${path} = ${JSON.stringify(v)}`));
  }
  return words.join(" & ") || "always";
}
