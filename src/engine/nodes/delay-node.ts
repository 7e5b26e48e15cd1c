import type { DelayNode } from "../../workflows/workflow-types.js";
import { nodeAfter } from "../workflow-walk.js";
import type { NodeExecutor, NodeRuntime } from "./node-executor.js";
import type { EngineNodeKind } from "./node-kind.js";

/** What a delay node's step does: start its timer, or fire it once it is due. */
type DelayStep = "start" | "fire";

/** The kind, for the registry: start the timer, or fire it; shown as "wait Ns". */
export const delayNodeKind: EngineNodeKind<DelayNode, unknown, DelayStep> = {
  decide: (node, context) => ({ type: "run", payload: context.timer?.nodeId === node.id ? "fire" : "start" }),
  executor: (runtime) => delayNodeExecutor(runtime),
  view: { title: (node) => `wait ${Math.round(node.durationMs / 1000)}s` },
};

/**
 * `delay` nodes: a durable timer stored with its due time (XState's `after` is not part of a persisted
 * snapshot). Until it is due the task is passivated; the timer scheduler kicks it when it is.
 */
export function delayNodeExecutor(runtime: NodeRuntime): NodeExecutor<DelayNode, DelayStep> {
  return {
    async step({ node, step, live, workflow, at }) {
      const { repository } = runtime;
      if (step.payload === "fire") {
        const timer = live.actor.getSnapshot().context.timer!;
        if (Date.parse(timer.dueAt) > runtime.clock().getTime()) return false;
        repository.stage(live, {
          type: "NODE_COMPLETED",
          at,
          nodeId: timer.nodeId,
          output: { firedAt: at },
          artifacts: [],
          next: nodeAfter(workflow, timer.nodeId),
        });
        return true;
      }
      repository.stage(live, { type: "NODE_STARTED", at, nodeId: node.id });
      repository.stage(live, {
        type: "TIMER_SET",
        at,
        timer: { nodeId: node.id, purpose: "delay", dueAt: new Date(Date.parse(at) + node.durationMs).toISOString() },
      });
      return true;
    },
  };
}
