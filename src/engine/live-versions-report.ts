import type { Logger } from "../observability/logger.js";
import type { LiveVersion, WorkflowVersions } from "./workflow-versions.js";

/**
 * At start and in `check`: one line per definition version that live runs use, with their count, and one warning per
 * node of such a version that needs what this deploy lacks (a handler, peer, variable or node kind), naming the
 * workflow, the version and the node. Such runs do not fail: they wait at that node for an instance that has it.
 */
export async function reportLiveVersions(versions: WorkflowVersions, logger: Logger): Promise<LiveVersion[]> {
  const live = await versions.live();
  for (const v of live) {
    const runs = `${v.liveRuns} live run${v.liveRuns === 1 ? "" : "s"}`;
    logger.info(
      {
        event: "workflow.version.live",
        workflowId: v.workflowId,
        version: v.version,
        liveRuns: v.liveRuns,
        deployed: v.deployed,
      },
      `workflow "${v.workflowId}" version "${v.version}": ${runs}${v.deployed ? " (the deployed version)" : " (an earlier version: its runs keep it)"}`,
    );
    for (const lack of v.lacks)
      logger.warn(
        {
          event: "workflow.version.lacks",
          workflowId: v.workflowId,
          version: v.version,
          nodeId: lack.nodeId,
          reason: lack.reason,
        },
        `workflow "${v.workflowId}" version "${v.version}" (${runs}) needs what this deploy lacks: ${lack.reason}; a run reaching node "${lack.nodeId}" waits there for an instance that has it`,
      );
  }
  return live;
}
