import { randomUUID } from "node:crypto";
import type { Message, Part } from "../../../domain/a2a-types.js";
import type { DurableTimer, PendingInterrupt, TaskContext } from "../../../machine/task-context.js";
import type { ApprovalAction } from "../../../domain/run-status.js";
import type { ApprovalNode, ClarificationNode } from "../../../workflows/workflow-types.js";
import type { NodeExecutor, NodeRuntime } from "../node-executor.js";
import { reviewedArtifactIds } from "./gate-artifacts.js";

/**
 * `approval` and `clarification` nodes: raise the interrupt (and its deadline timer, if any) in one transition.
 * The task then waits, passivated, for a reply (`TaskSupervisor.reply` / `resolveInterrupt`) or its deadline.
 */
export function gateNodeExecutor<N extends ApprovalNode | ClarificationNode>(runtime: NodeRuntime): NodeExecutor<N> {
  return {
    async step({ node, live, at }) {
      const built = buildInterrupt(node, live.actor.getSnapshot().context, at, {
        interruptId: randomUUID(),
        messageId: randomUUID(),
      });
      runtime.repository.stage(live, { type: "INTERRUPT", at, ...built });
      return true;
    },
  };
}

function agentMessage(taskId: string, contextId: string, messageId: string, parts: Part[]): Message {
  return { messageId, role: "agent", parts, taskId, contextId };
}

/** The interrupt a waiting node raises, the agent's status message, and the deadline timer if any. */
export function buildInterrupt(
  node: ApprovalNode | ClarificationNode,
  context: TaskContext,
  at: string,
  ids: { interruptId: string; messageId: string },
): { interrupt: PendingInterrupt; statusMessage: Message; timer?: DurableTimer } {
  const expiresAt = node.timeoutMs ? new Date(Date.parse(at) + node.timeoutMs).toISOString() : undefined;
  let data: Record<string, unknown>;
  let text: string;
  if (node.kind === "approval") {
    const actions = offeredActions(node);
    data = {
      title: node.title,
      ...(node.description ? { description: node.description } : {}),
      artifactIds: reviewedArtifactIds(node, context),
      actions,
    };
    text = `Approval needed: ${node.title}. Reply with a data part {"action": ${actions.map((a) => `"${a}"`).join(" | ")}}.`;
  } else {
    data = { questions: node.questions.map((q) => ({ id: q.id, question: q.question })) };
    text = `Clarification needed: ${node.questions.map((q) => q.question).join(" ")} Reply with text or a data part {"answers": [{"id", "answer"}]}.`;
  }
  const kind = node.kind === "approval" ? "approval" : "clarification";
  const interrupt: PendingInterrupt = {
    interruptId: ids.interruptId,
    nodeId: node.id,
    kind,
    data,
    requestedAt: at,
    ...(expiresAt ? { expiresAt } : {}),
    exchanges: [],
  };
  const statusMessage = agentMessage(context.taskId, context.contextId, ids.messageId, [
    { kind: "text", text },
    { kind: "data", data: { interrupt: { kind, nodeId: node.id, interruptId: ids.interruptId, ...data } } },
  ]);
  const timer: DurableTimer | undefined = expiresAt
    ? { nodeId: node.id, purpose: "interrupt-timeout", dueAt: expiresAt }
    : undefined;
  return { interrupt, statusMessage, ...(timer ? { timer } : {}) };
}

/** The actions an approval gate offers (all five unless its `actions` narrows them; `edit` is `edit-accept` on the wire). */
export function offeredActions(node: ApprovalNode): ApprovalAction[] {
  const offered = node.actions ?? ["accept", "reject", "refine", "edit", "ask"];
  return offered.map((a) => (a === "edit" ? "edit-accept" : a));
}
