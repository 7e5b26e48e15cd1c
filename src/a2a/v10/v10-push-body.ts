import type { PushBody } from "../push-status-facts.js";
import { pushStatusFacts } from "../push-status-facts.js";
import { taskStateNameV10 } from "./v10-proto-codec.js";

/**
 * The 1.0 push body: a StreamResponse `{"statusUpdate": {...}}` in ProtoJSON (`TASK_STATE_*`, no `kind`, no
 * `final`), `application/a2a+json`; the same content-free facts as 0.3.
 */
export const v10PushBody: PushBody = {
  contentType: "application/a2a+json",
  encode(task, event, artifacts) {
    const facts = pushStatusFacts(task, event, artifacts);
    return JSON.stringify({
      statusUpdate: {
        taskId: facts.taskId,
        contextId: facts.contextId,
        status: { state: taskStateNameV10(facts.state), ...(facts.timestamp ? { timestamp: facts.timestamp } : {}) },
        metadata: facts.metadata,
      },
    });
  },
};
