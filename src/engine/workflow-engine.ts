import type { Message, Part } from "../domain/a2a-types.js";
import { invalidParams } from "../domain/errors.js";
import { APPROVAL_ACTIONS } from "../domain/run-status.js";
import type { PendingInterrupt, TaskContext } from "../machine/task-context.js";
import { builtinNodeKinds, type NodeKindRegistry } from "./nodes/node-registry.js";
import { findNode, type ReplyOutcome, type Step } from "./workflow-walk.js";
import type { WorkflowDefinition } from "../workflows/workflow-types.js";

/**
 * Pure workflow decisions: what the running task does next, and what a caller's reply means. Each node's kind
 * decides for its nodes (engine/nodes/, through the registry); the supervisor performs the effects and commits
 * the resulting machine events.
 */
export {
  findNode,
  firstNodeOf,
  idempotencyKeyOf,
  incomingMessageOf,
  nodeAfter,
  runInputOf,
  SYSTEM_TIMEOUT,
  type ReplyOutcome,
  type Step,
} from "./workflow-walk.js";

export function nextStep(
  context: TaskContext,
  workflow: WorkflowDefinition,
  kinds: NodeKindRegistry = builtinNodeKinds(),
): Step {
  if (context.cursor === null) return { type: "complete" };
  const node = findNode(workflow, context.cursor);
  if (!node) {
    return {
      type: "fail",
      error: { code: "workflow_invalid", message: `node "${context.cursor}" is not in workflow ${workflow.id}` },
    };
  }
  return kinds.of(node.kind)?.decide?.(node, context) ?? { type: "run" };
}

/** Interprets a resume value for a pending interrupt: the kind of the node that raised it reads it. Invalid values are refused with a clear message. */
export function interpretReply(
  workflow: WorkflowDefinition,
  context: TaskContext,
  interrupt: PendingInterrupt,
  resumeValue: Record<string, unknown>,
  decision: { decidedBy: string; decidedAt: string },
  kinds: NodeKindRegistry = builtinNodeKinds(),
): ReplyOutcome {
  const node = findNode(workflow, interrupt.nodeId);
  const reader = node && kinds.of(node.kind)?.reply;
  if (!node || !reader) throw invalidParams(`node "${interrupt.nodeId}" does not accept replies`);
  return reader.interpret({ node: node as never, workflow, context, interrupt, resumeValue, decision });
}

/**
 * The resume value a reply message carries: a data part (approval action / clarification answers),
 * `metadata.openwop.action`, or plain text (an action word for approvals; else what the node's kind makes of it,
 * e.g. the answer to a single question).
 */
export function resumeValueFromMessage(
  message: Message,
  interrupt: PendingInterrupt,
  workflow: WorkflowDefinition,
  kinds: NodeKindRegistry = builtinNodeKinds(),
): Record<string, unknown> {
  const data = message.parts.find((p): p is Extract<Part, { kind: "data" }> => p.kind === "data")?.data;
  if (data) return data;
  const openwop = message.metadata?.["openwop"];
  if (openwop && typeof openwop === "object" && typeof (openwop as { action?: unknown }).action === "string") {
    return { ...(openwop as Record<string, unknown>) };
  }
  const text = message.parts
    .flatMap((p) => (p.kind === "text" ? [p.text.trim()] : []))
    .join("\n")
    .trim();
  if (!text) throw invalidParams("the reply has no data part and no text to resume the task with");
  // An approval interrupt (the interrupt's kind, whichever node raised it) takes exactly an action word.
  if (interrupt.kind === "approval") {
    const word = text.toLowerCase();
    if ((APPROVAL_ACTIONS as readonly string[]).includes(word)) return { action: word };
    throw invalidParams(
      `the reply to approval gate "${interrupt.nodeId}" needs a data part {"action": ...}; text is accepted only if it is exactly one of ${APPROVAL_ACTIONS.join(", ")}`,
    );
  }
  const node = findNode(workflow, interrupt.nodeId);
  const fromText = node && kinds.of(node.kind)?.reply?.fromText;
  if (!node || !fromText) throw invalidParams(`node "${interrupt.nodeId}" needs a data part to resume`);
  return fromText(text, node as never, interrupt);
}
