import type { NodeGraphEdge } from "../engine/nodes/node-kind.js";
import type { NodeKindRegistry } from "../engine/nodes/node-registry.js";
import { END_TARGET, type WorkflowDefinition } from "../workflows/workflow-types.js";
import { nodeTitle } from "./console-task-view.js";

/** One node of a workflow's graph as the console draws it; `$end` stands for the end of the run. */
export interface ConsoleGraphNode {
  id: string;
  kind: string;
  title: string;
  /** The line under the title, in words of its kind (an http node: its method and target host); default: the kind (and id). */
  label?: string;
  /** a2a.invoke: the peer agent (scheme, host and port only). */
  remote?: { agent: string; skillId?: string };
}

/** Why the run takes an edge: `next`, a switch `case` (with its condition) or `default`, an approval's `accept`, `refine` or `reject`. */
export type ConsoleGraphEdge = NodeGraphEdge;

export interface ConsoleWorkflowGraph {
  id: string;
  name: string;
  description: string;
  nodes: ConsoleGraphNode[];
  edges: ConsoleGraphEdge[];
}

const END: ConsoleGraphNode = { id: END_TARGET, kind: "end", title: "end" };

/**
 * The workflow's own graph, read from its definition the way the engine walks it: `next` (or the following node)
 * by default, else the edges the node's kind draws (a switch's cases and default, an approval's accept, refine
 * loop and reject).
 */
export function workflowGraphOf(workflow: WorkflowDefinition, kinds: NodeKindRegistry): ConsoleWorkflowGraph {
  const nodes: ConsoleGraphNode[] = workflow.nodes.map((node) => {
    const view = kinds.of(node.kind)?.view;
    const remote = view?.remote?.(node as never);
    const label = view?.label?.(node as never);
    return {
      id: node.id,
      kind: node.kind,
      title: nodeTitle(node, kinds),
      ...(label ? { label } : {}),
      ...(remote ? { remote } : {}),
    };
  });
  const edges: ConsoleGraphEdge[] = [];
  const after = (index: number): string => {
    const next = (workflow.nodes[index] as { next?: unknown }).next;
    if (typeof next === "string") return next;
    return workflow.nodes[index + 1]?.id ?? END_TARGET;
  };
  workflow.nodes.forEach((node, index) => {
    const drawn = kinds
      .of(node.kind)
      ?.view?.edges?.(node as never, { after: after(index), before: workflow.nodes[index - 1]?.id });
    edges.push(...(drawn ?? [{ from: node.id, to: after(index), kind: "next" }]));
  });
  return {
    id: workflow.id,
    name: workflow.name,
    description: workflow.description,
    nodes: edges.some((e) => e.to === END_TARGET) ? [...nodes, END] : nodes,
    edges,
  };
}
