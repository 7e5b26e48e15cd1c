import { randomUUID } from "node:crypto";
import { buildInterrupt } from "../workflow-engine.js";
import type { ApprovalNode, ClarificationNode } from "../../workflows/workflow-types.js";
import type { NodeExecutor, NodeRuntime } from "./node-executor.js";

/**
 * `approval` and `clarification` nodes: raise the interrupt (and its deadline timer, if any) in one transition.
 * The task then waits, passivated, for a reply (`TaskSupervisor.reply` / `resolveInterrupt`) or its deadline.
 */
export function gateNodeExecutor<N extends ApprovalNode | ClarificationNode>(runtime: NodeRuntime): NodeExecutor<N> {
  return {
    async step({ node, live, at }) {
      const built = buildInterrupt(node, live.actor.getSnapshot().context, at, { interruptId: randomUUID(), messageId: randomUUID() });
      runtime.repository.stage(live, { type: "INTERRUPT", at, ...built });
      return true;
    },
  };
}
