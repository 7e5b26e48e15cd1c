import type { Part } from "../../../domain/a2a-types.js";
import { DomainError, invalidParams } from "../../../domain/errors.js";
import type { PendingInterrupt, TaskContext } from "../../../machine/task-context.js";
import type { A2AInvokeNode, WorkflowDefinition } from "../../../workflows/workflow-types.js";
import {
  CROSS_PROTOCOL_CANCEL,
  isTerminalPeerState,
  peerMessageId,
  peerProgressOf,
  PEER_REPLY_QUESTION_ID,
  type PeerProgress,
} from "./a2a-invoke.js";

/*
 * Our side of a peer's question (input-required, auth-required), after a2a-invoke.ts raised it as our interrupt:
 * our caller's answer, forwarded to the peer exactly once, and the peer task our own cancel cancels too. Pure.
 */

/** The resume value of a text reply to a peer interrupt (a data part is taken as it is). */
export function peerReplyFromText(text: string): Record<string, unknown> {
  return { answers: [{ id: PEER_REPLY_QUESTION_ID, answer: text }] };
}

/** What our caller's answer is forwarded to the peer as: a single text answer as text, anything else as data. */
export function peerReplyParts(resumeValue: Record<string, unknown>): Part[] {
  const answers = resumeValue["answers"];
  if (Object.keys(resumeValue).length === 1 && Array.isArray(answers) && answers.length === 1) {
    const answer = (answers[0] as { answer?: unknown } | null)?.answer;
    if (typeof answer === "string") return [{ kind: "text", text: answer }];
  }
  return [{ kind: "data", data: resumeValue }];
}

/**
 * Our caller answered a peer interrupt: the run resumes at the same node, which forwards the answer to the
 * peer's task. The answer is recorded in the node's progress (as `pendingReply`) in the same commit as the
 * resume, with a messageId derived from the interrupt, so it is delivered exactly once even across a restart.
 */
export function peerReplyOutcome(
  node: A2AInvokeNode,
  context: TaskContext,
  interrupt: PendingInterrupt,
  resumeValue: Record<string, unknown>,
  decision: { decidedBy: string; decidedAt: string },
  key: string,
): { output: Record<string, unknown>; next: string; progress: Record<string, unknown> } {
  if (Object.keys(resumeValue).length === 0)
    throw invalidParams(`the reply to "${node.id}" is empty; send text or a data part to forward to the remote agent`);
  const progress = peerProgressOf(context, node.id, key);
  if (!progress) throw new DomainError("internal", `node "${node.id}" has no remote task to forward the reply to`);
  const pendingReply = {
    messageId: peerMessageId(`${key}:reply:${interrupt.interruptId}`),
    interruptId: interrupt.interruptId,
    parts: peerReplyParts(resumeValue),
  };
  const next: PeerProgress = { ...progress, answeredStatus: progress.peerStatus, pendingReply };
  return {
    output: {
      reply: resumeValue,
      answeredBy: decision.decidedBy,
      answeredAt: decision.decidedAt,
      forwardedTo: progress.peerTaskId,
    },
    next: node.id,
    progress: next as unknown as Record<string, unknown>,
  };
}

/** The peer task our cancel should cancel too (best effort), if the run is cancelled while it is live. */
export function peerTaskToCancel(
  context: TaskContext,
  workflow: WorkflowDefinition | undefined,
  key: (nodeId: string) => string,
): PeerProgress | undefined {
  if (context.cancelReason === CROSS_PROTOCOL_CANCEL || !workflow || context.cursor === null) return undefined;
  const node = workflow.nodes.find((n) => n.id === context.cursor);
  if (node?.kind !== "a2a.invoke") return undefined;
  const progress = peerProgressOf(context, node.id, key(node.id));
  return progress && !isTerminalPeerState(progress.peerState) ? progress : undefined;
}
