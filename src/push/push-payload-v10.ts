import { taskStateNameV10 } from "../a2a/v10/v10-proto-codec.js";
import type { A2ATaskStateValue } from "../domain/run-status.js";
import type { RunEvent, TaskRecord } from "../store/task-store.js";
import { pushBody, type ArtifactRef } from "./push-payload.js";

/** Content type of an A2A 1.0 push (spec: application/a2a+json); 0.3 pushes stay application/json. */
export const A2A_V10_PUSH_CONTENT_TYPE = "application/a2a+json";

/**
 * The push body for a config registered over A2A 1.0: a StreamResponse `{"statusUpdate": {...}}` in ProtoJSON
 * (`TASK_STATE_*`, no `kind`, no `final`). It carries exactly what the 0.3 body carries (content-free: state,
 * timestamp, `metadata.openwop` ids and artifact references), re-spelled for 1.0.
 */
export function pushBodyV10(task: Pick<TaskRecord, "taskId" | "contextId">, event: RunEvent, artifacts: ArtifactRef[]): string {
  const v03 = JSON.parse(pushBody(task, event, artifacts)) as {
    taskId: string;
    contextId: string;
    status: { state: A2ATaskStateValue; timestamp?: string };
    metadata: Record<string, unknown>;
  };
  return JSON.stringify({
    statusUpdate: {
      taskId: v03.taskId,
      contextId: v03.contextId,
      status: { state: taskStateNameV10(v03.status.state), ...(v03.status.timestamp ? { timestamp: v03.status.timestamp } : {}) },
      metadata: v03.metadata,
    },
  });
}
