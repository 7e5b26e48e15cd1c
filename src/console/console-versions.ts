import { DomainError } from "../domain/errors.js";
import type { LiveVersion, WorkflowVersions } from "../engine/workflow-versions.js";
import { workflowGraphOf, type ConsoleWorkflowGraph } from "./console-workflow-graph.js";

/** A workflow's graph as one version has it, and the versions its live runs use. */
export interface ConsoleWorkflowView extends ConsoleWorkflowGraph {
  /** The version drawn: the one asked for, else the deployed one. */
  version: string;
  /** Whether it is the version new runs take. */
  deployed: boolean;
  /** The version new runs take. */
  deployedVersion?: string;
  /** This workflow's versions that runs not yet ended use, with their counts and what this instance lacks for them. */
  versions: Array<Pick<LiveVersion, "version" | "deployed" | "liveRuns" | "endedRuns" | "storedAt" | "lacks">>;
}

/** GET /console/api/workflows/{skillId}?version=: the version's graph (docs/workflows.md "Changing a workflow"). */
export async function workflowView(
  versions: WorkflowVersions,
  skillId: string,
  version?: string,
): Promise<ConsoleWorkflowView> {
  const drawn = version ?? versions.deployedVersion(skillId);
  const pinned = drawn === undefined ? undefined : await versions.find(skillId, drawn);
  if (!pinned?.workflow || drawn === undefined)
    throw new DomainError(
      "not-found",
      version === undefined ? `workflow "${skillId}" not found` : `workflow "${skillId}" has no version "${version}"`,
      { skillId, ...(version !== undefined ? { version } : {}) },
    );
  const live = (await versions.live()).filter((v) => v.workflowId === skillId);
  return {
    ...workflowGraphOf(pinned.workflow, versions.kinds),
    version: drawn,
    deployed: pinned.deployed,
    ...(versions.deployedVersion(skillId) !== undefined ? { deployedVersion: versions.deployedVersion(skillId) } : {}),
    versions: live.map(({ version: v, deployed, liveRuns, endedRuns, storedAt, lacks }) => ({
      version: v,
      deployed,
      liveRuns,
      endedRuns,
      storedAt,
      lacks,
    })),
  };
}
