import type { PushBody } from "../push-status-facts.js";
import { pushStatusFacts } from "../push-status-facts.js";

/** The 0.3 push body: a TaskStatusUpdateEvent (`kind: "status-update"`, `final`), content-free. */
export const v03PushBody: PushBody = {
  contentType: "application/json",
  encode(task, event, artifacts) {
    const facts = pushStatusFacts(task, event, artifacts);
    return JSON.stringify({
      kind: "status-update",
      taskId: facts.taskId,
      contextId: facts.contextId,
      status: { state: facts.state, timestamp: facts.timestamp },
      final: facts.final,
      metadata: facts.metadata,
    });
  },
};
