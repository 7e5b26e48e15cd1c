import { didYouMean } from "../domain/closest-name.js";
import type { NodeKindRegistry } from "./nodes/node-registry.js";
import { isOutputTest, outputKeyParts } from "./output-condition.js";
import { END_TARGET, TAKEN_PATH, type WorkflowDefinition } from "../workflows/workflow-types.js";

/**
 * Load-time checks that follow the workflow's paths (the edges each node's kind draws, as the console's graph
 * shows them): what a switch's `output` condition may read, and whether an approval gate can come up empty.
 */

/**
 * The top-level keys of what the built-in kinds other than `task` and `http` put in their output (their node
 * modules under engine/nodes/ write them); a handler's, a service's or a plugin kind's output is its own affair,
 * so any path into it is accepted.
 */
const OUTPUT_KEYS: Readonly<Record<string, readonly string[]>> = {
  approval: ["action", "feedback", "decidedBy", "decidedAt", "edited", "refineFeedback", "reason"],
  clarification: ["answers", "answeredBy", "answeredAt"],
  delay: ["firedAt"],
  switch: ["matched", "next"],
  "a2a.invoke": [
    "peer",
    "artifactIds",
    "message",
    "text",
    "contentTrust",
    "reply",
    "answeredBy",
    "answeredAt",
    "forwardedTo",
  ],
};

/** Kinds that never produce artifacts of their own (an approval's edit only changes one it was shown). */
const NO_ARTIFACTS = new Set(["switch", "delay", "approval", "clarification"]);

/** Each node's successors: `$end` left out. */
export function successorsOf(workflow: WorkflowDefinition, kinds: NodeKindRegistry): Map<string, string[]> {
  const after = (index: number): string => {
    const next = (workflow.nodes[index] as { next?: unknown }).next;
    return typeof next === "string" ? next : (workflow.nodes[index + 1]?.id ?? END_TARGET);
  };
  const successors = new Map<string, string[]>();
  workflow.nodes.forEach((node, index) => {
    const drawn = kinds
      .of(node.kind)
      ?.view?.edges?.(node as never, { after: after(index), before: workflow.nodes[index - 1]?.id });
    const targets = (drawn ?? [{ to: after(index) }]).map((e) => e.to).filter((to) => to !== END_TARGET);
    successors.set(node.id, [...new Set(targets)]);
  });
  return successors;
}

/** The nodes reachable from the first one without passing through any of `avoid` (which are not entered). */
function reachable(workflow: WorkflowDefinition, successors: Map<string, string[]>, avoid: ReadonlySet<string>) {
  const start = workflow.nodes[0]?.id;
  const seen = new Set<string>();
  const queue = start !== undefined && !avoid.has(start) ? [start] : [];
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    for (const to of successors.get(id) ?? []) if (!avoid.has(to) && !seen.has(to)) queue.push(to);
  }
  return seen;
}

/** The nodes that can have completed before `target` runs: reachable from the start, with a path on to `target`. */
function canRunBefore(workflow: WorkflowDefinition, successors: Map<string, string[]>, target: string): Set<string> {
  const fromStart = reachable(workflow, successors, new Set());
  const leadsToTarget = new Set<string>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const [from, tos] of successors)
      if (!leadsToTarget.has(from) && tos.some((to) => to === target || leadsToTarget.has(to))) {
        leadsToTarget.add(from);
        grew = true;
      }
  }
  return new Set([...leadsToTarget].filter((id) => fromStart.has(id)));
}

/**
 * Every `output` condition of every switch: the key names a node (the longest id that fits), one that can have
 * run before the switch, and a path its kind can produce; a test does not mix `$` operators with other keys.
 */
export function outputConditionProblems(workflow: WorkflowDefinition, kinds: NodeKindRegistry): string[] {
  const problems: string[] = [];
  const ids = workflow.nodes.map((n) => n.id);
  const successors = successorsOf(workflow, kinds);
  for (const node of workflow.nodes) {
    if (node.kind !== "switch") continue;
    let before: Set<string> | undefined;
    node.cases.forEach((c, i) => {
      for (const [key, expected] of Object.entries(c.when.output ?? {})) {
        const where = `switch "${node.id}" case ${i + 1}: output "${key}"`;
        const parts = outputKeyParts(key, ids);
        if (!parts) {
          problems.push(`${where} names no node of this workflow${didYouMean(key.split(".")[0]!, ids)}`);
          continue;
        }
        before ??= canRunBefore(workflow, successors, node.id);
        const source = workflow.nodes.find((n) => n.id === parts.nodeId)!;
        if (!before.has(parts.nodeId)) {
          problems.push(`${where} reads node "${parts.nodeId}", which cannot have run before this switch`);
          continue;
        }
        const keys = OUTPUT_KEYS[source.kind];
        const first = parts.path[0];
        if (keys && first !== undefined && !keys.includes(first))
          problems.push(
            `${where}: the output of node "${source.id}" (${source.kind}) never has "${first}"${didYouMean(first, keys)} (it has ${keys.join(", ")})`,
          );
        if (isMixed(expected))
          problems.push(
            `${where} mixes "$" tests with other keys: write either a test ({"$gt": 1}) or a value to equal`,
          );
      }
    });
  }
  return problems;
}

function isMixed(expected: unknown): boolean {
  if (typeof expected !== "object" || expected === null || Array.isArray(expected) || isOutputTest(expected))
    return false;
  return Object.keys(expected).some((k) => k.startsWith("$"));
}

/**
 * Approval gates that can show nothing: a path from the start reaches the gate without passing any node its
 * `artifactFrom` names (for `$taken`, any node of a kind that can produce artifacts). Warnings: the definition
 * loads, since a branch may mean to skip the review's subject.
 */
export function emptyGateWarnings(workflow: WorkflowDefinition, kinds: NodeKindRegistry): string[] {
  const warnings: string[] = [];
  let successors: Map<string, string[]> | undefined;
  for (const node of workflow.nodes) {
    if (node.kind !== "approval" || node.artifactFrom === undefined) continue;
    successors ??= successorsOf(workflow, kinds);
    const from = node.artifactFrom;
    const sources =
      from === TAKEN_PATH
        ? workflow.nodes.filter((n) => !NO_ARTIFACTS.has(n.kind)).map((n) => n.id)
        : Array.isArray(from)
          ? from
          : [from];
    if (!reachable(workflow, successors, new Set(sources)).has(node.id)) continue;
    const named =
      from === TAKEN_PATH
        ? "no node that can produce an artifact"
        : `none of ${sources.map((s) => `"${s}"`).join(", ")}`;
    warnings.push(
      `approval gate "${node.id}": on some path ${named} runs before it, so the approver may be shown no artifact (artifactFrom takes a list, or "$taken" for the path the run took)`,
    );
  }
  return warnings;
}
