import type { Artifact, Message, Part } from "../domain/a2a-types.js";
import { invalidParams } from "../domain/errors.js";
import { APPROVAL_ACTIONS, type ApprovalAction } from "../domain/run-status.js";
import type { DurableTimer, PendingInterrupt, RunError, TaskContext } from "../machine/task-context.js";
import { peerReplyFromText, peerReplyOutcome } from "./nodes/a2a-invoke/a2a-invoke.js";
import { cursorOf, inputOfMessage } from "./message-route.js";
import type { A2AInvokeNode, ApprovalNode, ClarificationNode, DelayNode, SwitchNode, TaskNode, WorkflowDefinition, WorkflowNode } from "../workflows/workflow-types.js";

/**
 * Pure workflow decisions: what the running task does next, and what a caller's reply means. The
 * supervisor performs the effects and commits the resulting machine events.
 */
export type Step =
  | { type: "complete" }
  | { type: "run-task"; node: TaskNode }
  | { type: "start-delay"; node: DelayNode }
  | { type: "wait-timer" }
  | { type: "interrupt"; node: ApprovalNode | ClarificationNode }
  | { type: "invoke-peer"; node: A2AInvokeNode }
  /** Any other kind: its executor decides (a kind added as one module needs no case here). */
  | { type: "run"; node: WorkflowNode }
  | { type: "route"; node: SwitchNode }
  | { type: "fail"; error: RunError };

export function firstNodeOf(workflow: WorkflowDefinition): string | null {
  return workflow.nodes[0]?.id ?? null;
}

/** The node after `nodeId`: its `next` when it names one (`$end` ends the run), else the next in order. */
export function nodeAfter(workflow: WorkflowDefinition, nodeId: string): string | null {
  const index = workflow.nodes.findIndex((n) => n.id === nodeId);
  const node = workflow.nodes[index];
  // Any kind whose schema has `next` (task, http): the field means the same for all of them.
  const next = (node as { next?: unknown } | undefined)?.next;
  if (typeof next === "string") return cursorOf(next);
  return workflow.nodes[index + 1]?.id ?? null;
}

export function findNode(workflow: WorkflowDefinition, nodeId: string): WorkflowNode | undefined {
  return workflow.nodes.find((n) => n.id === nodeId);
}

export function nextStep(context: TaskContext, workflow: WorkflowDefinition): Step {
  if (context.cursor === null) return { type: "complete" };
  const node = findNode(workflow, context.cursor);
  if (!node) {
    return { type: "fail", error: { code: "workflow_invalid", message: `node "${context.cursor}" is not in workflow ${workflow.id}` } };
  }
  switch (node.kind) {
    case "task":
      return { type: "run-task", node };
    case "delay":
      return context.timer?.nodeId === node.id ? { type: "wait-timer" } : { type: "start-delay", node };
    case "approval":
    case "clarification":
      return { type: "interrupt", node };
    case "a2a.invoke":
      return { type: "invoke-peer", node };
    case "switch":
      return { type: "route", node };
    default:
      return { type: "run", node };
  }
}

/** The message a `switch` routes on: the newest from the caller (the first one, for a new task). */
export function incomingMessageOf(context: TaskContext): Message | undefined {
  return context.lastUserMessage ?? context.history.findLast((m) => m.role === "user") ?? context.unloggedHistory?.findLast((m) => m.role === "user") ?? context.request;
}

export function idempotencyKeyOf(context: TaskContext, nodeId: string): string {
  return `${context.taskId}:${nodeId}:${(context.visits[nodeId] ?? 0) + 1}`;
}

/** The first message's text and data parts: what the caller asked for. */
export function runInputOf(context: TaskContext): { text: string; data: Record<string, unknown> } {
  return inputOfMessage(context.request);
}

/** Refine feedback that approval gates sent back to `nodeId`. */
export function feedbackFor(context: TaskContext, workflow: WorkflowDefinition, nodeId: string): string[] {
  const feedback: string[] = [];
  for (const node of workflow.nodes) {
    if (node.kind !== "approval" || refineTarget(node, workflow) !== nodeId) continue;
    const decision = context.outputs[node.id] as { action?: string; refineFeedback?: { text?: string } } | undefined;
    if (decision?.action === "refine" && decision.refineFeedback?.text) feedback.push(decision.refineFeedback.text);
  }
  return feedback;
}

function refineTarget(node: ApprovalNode, workflow: WorkflowDefinition): string | null {
  if (node.onRefine) return node.onRefine.goto;
  if (node.artifactFrom) return node.artifactFrom;
  const index = workflow.nodes.findIndex((n) => n.id === node.id);
  return workflow.nodes[index - 1]?.id ?? null;
}

function agentMessage(taskId: string, contextId: string, messageId: string, parts: Part[]): Message {
  return { messageId, role: "agent", parts, taskId, contextId };
}

/** The principal the durable timer acts as when an interrupt's deadline passes. */
export const SYSTEM_TIMEOUT = "system:timeout";

export function offeredActions(node: ApprovalNode): ApprovalAction[] {
  const offered = node.actions ?? ["accept", "reject", "refine", "edit", "ask"];
  return offered.map((a) => (a === "edit" ? "edit-accept" : a));
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
      artifactIds: node.artifactFrom ? (context.artifactsByNode[node.artifactFrom] ?? []) : [],
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
  const timer: DurableTimer | undefined = expiresAt ? { nodeId: node.id, purpose: "interrupt-timeout", dueAt: expiresAt } : undefined;
  return { interrupt, statusMessage, ...(timer ? { timer } : {}) };
}

/** What resolving an interrupt does to the run. */
export type ReplyOutcome =
  | {
      type: "resume";
      output: Record<string, unknown>;
      next: string | null;
      artifacts?: Artifact[];
      thenFail?: RunError;
      /** The node's new `nodeProgress` entry, committed with the resume (an a2a.invoke's answer to forward). */
      progress?: Record<string, unknown>;
    }
  | { type: "ask"; question: string };

const LEGACY_DECISIONS: Record<string, (feedback: unknown) => Record<string, unknown>> = {
  approved: () => ({ action: "accept" }),
  rejected: (feedback) => (typeof feedback === "string" && feedback ? { action: "refine", refineFeedback: { scope: "whole", text: feedback } } : { action: "reject" }),
};

/** Interprets a resume value for a pending interrupt. Invalid values are refused with a clear message. */
export function interpretReply(
  workflow: WorkflowDefinition,
  context: TaskContext,
  interrupt: PendingInterrupt,
  resumeValue: Record<string, unknown>,
  decision: { decidedBy: string; decidedAt: string },
): ReplyOutcome {
  const node = findNode(workflow, interrupt.nodeId);
  if (node?.kind === "clarification") return { type: "resume", ...clarificationOutcome(node, workflow, resumeValue, decision) };
  // A remote agent's question: the answer goes to the remote agent. Never an approval decision.
  if (node?.kind === "a2a.invoke") return { type: "resume", ...peerReplyOutcome(node, context, interrupt, resumeValue, decision, idempotencyKeyOf(context, node.id)) };
  if (node?.kind !== "approval") throw invalidParams(`node "${interrupt.nodeId}" does not accept replies`);
  let value = resumeValue;
  const decisionWord = value["decision"];
  if (typeof value["action"] !== "string" && typeof decisionWord === "string" && Object.hasOwn(LEGACY_DECISIONS, decisionWord)) {
    value = { ...value, ...LEGACY_DECISIONS[decisionWord]!(value["feedback"]) };
  }
  const action = value["action"];
  if (typeof action !== "string" || !(APPROVAL_ACTIONS as readonly string[]).includes(action)) {
    throw invalidParams(`the reply to approval gate "${node.id}" needs "action" set to one of ${APPROVAL_ACTIONS.join(", ")}`, {
      nodeId: node.id,
      allowed: APPROVAL_ACTIONS,
    });
  }
  const allowed = offeredActions(node);
  if (!allowed.includes(action as ApprovalAction)) {
    throw invalidParams(`approval gate "${node.id}" does not offer the action "${action}" (offered: ${allowed.join(", ")})`, { nodeId: node.id, allowed });
  }
  const feedback = typeof value["feedback"] === "string" ? value["feedback"] : undefined;
  const base = { action, ...(feedback ? { feedback } : {}), decidedBy: decision.decidedBy, decidedAt: decision.decidedAt };
  switch (action as ApprovalAction) {
    case "ask": {
      const question = [value["question"], feedback].find((q): q is string => typeof q === "string" && q.length > 0);
      if (!question) throw invalidParams(`an "ask" reply needs a "question" (or "feedback") string`);
      return { type: "ask", question };
    }
    case "accept":
      return { type: "resume", output: base, next: nodeAfter(workflow, node.id) };
    case "edit-accept": {
      if (!("editedArtifactData" in value)) throw invalidParams(`an "edit-accept" reply needs "editedArtifactData"`);
      const edited = value["editedArtifactData"];
      const part: Part = typeof edited === "string" ? { kind: "text", text: edited } : { kind: "data", data: { value: edited } };
      const reviewed = node.artifactFrom ? (context.artifactsByNode[node.artifactFrom] ?? []) : [];
      const artifacts = context.artifacts
        .filter((a) => a.artifactId === reviewed[0])
        .map((a) => ({ ...a, parts: [part], metadata: { ...a.metadata, editedBy: decision.decidedBy } }));
      return { type: "resume", output: { ...base, edited: true }, next: nodeAfter(workflow, node.id), artifacts };
    }
    case "refine": {
      const target = refineTarget(node, workflow);
      if (!target) throw invalidParams(`approval gate "${node.id}" has nothing to refine`);
      const refineFeedback = normalizeRefineFeedback(value["refineFeedback"], feedback);
      return { type: "resume", output: { ...base, refineFeedback }, next: target };
    }
    case "reject": {
      // Only the host's own deadline may reject "by timeout"; a caller's reject is a reject.
      const reason = value["reason"] === "timeout" && decision.decidedBy === SYSTEM_TIMEOUT ? "timeout" : undefined;
      const output = { ...base, ...(reason ? { reason } : {}) };
      if (typeof node.onReject === "object") return { type: "resume", output, next: node.onReject.goto };
      const thenFail: RunError = reason
        ? { code: "approval_timeout", message: `approval gate "${node.id}" timed out and was rejected`, nodeId: node.id }
        : { code: "approval_rejected", message: `rejected at approval gate "${node.id}"`, nodeId: node.id };
      return { type: "resume", output, next: null, thenFail };
    }
  }
}

function normalizeRefineFeedback(raw: unknown, feedback: string | undefined): Record<string, unknown> {
  if (raw && typeof raw === "object" && !Array.isArray(raw)) {
    const scope = (raw as { scope?: unknown }).scope;
    if (scope !== undefined && scope !== "whole" && scope !== "section" && scope !== "items") {
      throw invalidParams(`refineFeedback.scope must be "whole", "section" or "items"`);
    }
    return { scope: scope ?? "whole", ...(raw as Record<string, unknown>) };
  }
  if (feedback) return { scope: "whole", text: feedback };
  throw invalidParams(`a "refine" reply needs "refineFeedback" (or a "feedback" string)`);
}

function clarificationOutcome(
  node: ClarificationNode,
  workflow: WorkflowDefinition,
  resumeValue: Record<string, unknown>,
  decision: { decidedBy: string; decidedAt: string },
): { output: Record<string, unknown>; next: string | null } {
  const raw = resumeValue["answers"];
  if (!Array.isArray(raw)) throw invalidParams(`the reply to "${node.id}" needs "answers": [{"id", "answer"}] (or a text reply)`);
  const known = new Set(node.questions.map((q) => q.id));
  const answers = raw.map((a: unknown, i) => {
    if (!a || typeof a !== "object" || typeof (a as { id?: unknown }).id !== "string" || !("answer" in a)) {
      throw invalidParams(`answers[${i}] must be {"id": string, "answer": value}`);
    }
    const { id, answer } = a as { id: string; answer: unknown };
    if (!known.has(id)) throw invalidParams(`answers[${i}].id "${id}" is not a question of "${node.id}" (questions: ${[...known].join(", ")})`);
    return { id, answer };
  });
  const missing = node.questions.filter((q) => q.required !== false && !answers.some((a) => a.id === q.id));
  if (missing.length > 0) throw invalidParams(`missing answers for: ${missing.map((q) => q.id).join(", ")}`);
  return { output: { answers, answeredBy: decision.decidedBy, answeredAt: decision.decidedAt }, next: nodeAfter(workflow, node.id) };
}

/**
 * The resume value a reply message carries: a data part (approval action / clarification answers),
 * `metadata.openwop.action`, or plain text (an action word for approvals, the answer for a single question).
 */
export function resumeValueFromMessage(message: Message, interrupt: PendingInterrupt, workflow: WorkflowDefinition): Record<string, unknown> {
  const data = message.parts.find((p): p is Extract<Part, { kind: "data" }> => p.kind === "data")?.data;
  if (data) return data;
  const openwop = message.metadata?.["openwop"];
  if (openwop && typeof openwop === "object" && typeof (openwop as { action?: unknown }).action === "string") {
    return { ...(openwop as Record<string, unknown>) };
  }
  const text = message.parts.flatMap((p) => (p.kind === "text" ? [p.text.trim()] : [])).join("\n").trim();
  if (!text) throw invalidParams("the reply has no data part and no text to resume the task with");
  if (interrupt.kind === "approval") {
    const word = text.toLowerCase();
    if ((APPROVAL_ACTIONS as readonly string[]).includes(word)) return { action: word };
    throw invalidParams(`the reply to approval gate "${interrupt.nodeId}" needs a data part {"action": ...}; text is accepted only if it is exactly one of ${APPROVAL_ACTIONS.join(", ")}`);
  }
  const node = findNode(workflow, interrupt.nodeId);
  if (node?.kind === "a2a.invoke") return peerReplyFromText(text);
  if (node?.kind !== "clarification") throw invalidParams(`node "${interrupt.nodeId}" needs a data part to resume`);
  if (node.questions.length === 1 && node.questions[0]) return { answers: [{ id: node.questions[0].id, answer: text }] };
  throw invalidParams(`node "${interrupt.nodeId}" asks several questions; answer with a data part {"answers": [{"id", "answer"}]}`);
}
