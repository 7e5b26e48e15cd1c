import type { TaskContext } from "../../../machine/task-context.js";
import { TAKEN_PATH, type ApprovalNode } from "../../../workflows/workflow-types.js";

/**
 * What an approval gate puts up for review (`artifactFrom`): one node's artifacts, those of each listed node that
 * ran (in the list's order), or with `$taken` every artifact produced so far on the path this run took, in the
 * order they were produced.
 */
export function reviewedArtifactIds(node: ApprovalNode, context: TaskContext): string[] {
  const from = node.artifactFrom;
  if (from === undefined) return [];
  if (from === TAKEN_PATH) {
    const produced = new Set(Object.values(context.artifactsByNode).flat());
    return context.artifacts.map((a) => a.artifactId).filter((id) => produced.has(id));
  }
  return [...new Set((Array.isArray(from) ? from : [from]).flatMap((id) => context.artifactsByNode[id] ?? []))];
}

/** The one node `artifactFrom` names (a refine goes back to it by default); undefined for a list or `$taken`. */
export function singleArtifactSource(node: ApprovalNode): string | undefined {
  return typeof node.artifactFrom === "string" && node.artifactFrom !== TAKEN_PATH ? node.artifactFrom : undefined;
}
