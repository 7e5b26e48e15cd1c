import { cursorOf, switchTarget } from "../message-route.js";
import { incomingMessageOf, nodeAfter } from "../workflow-engine.js";
import type { SwitchNode } from "../../workflows/workflow-types.js";
import type { NodeExecutor, NodeRuntime } from "./node-executor.js";

/** `switch` nodes: route on the incoming message; the chosen case is the node's output (no effect to run). */
export function switchNodeExecutor(runtime: NodeRuntime): NodeExecutor<SwitchNode> {
  return {
    async step({ taskId, node, live, workflow, at }) {
      const { target, matched } = switchTarget(node, incomingMessageOf(live.actor.getSnapshot().context));
      const next = target === undefined ? nodeAfter(workflow, node.id) : cursorOf(target);
      await runtime.repository.commit(taskId, { type: "NODE_STARTED", at, nodeId: node.id });
      await runtime.repository.commit(taskId, { type: "NODE_COMPLETED", at, nodeId: node.id, output: { matched, next }, artifacts: [], next });
      return true;
    },
  };
}
