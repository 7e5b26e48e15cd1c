import type { Part } from "../../../domain/a2a-types.js";
import { invalidParams } from "../../../domain/errors.js";
import { APPROVAL_ACTIONS, type ApprovalAction } from "../../../domain/run-status.js";
import type { RunError, TaskContext } from "../../../machine/task-context.js";
import { nodeAfter, SYSTEM_TIMEOUT, type ReplyOutcome } from "../../workflow-walk.js";
import type { ApprovalNode, WorkflowDefinition } from "../../../workflows/workflow-types.js";
import type { NodeGraphEdge, EngineNodeKind } from "../node-kind.js";
import { reviewedArtifactIds, singleArtifactSource } from "./gate-artifacts.js";
import { gateNodeExecutor, offeredActions } from "./gate-node.js";

/**
 * `approval` nodes: a gate that raises an approval interrupt and waits for a decision (accept, reject, refine,
 * edit-accept, ask). Its refine loop sends the run back to the reviewed node, which reads the feedback (feedbackFor).
 */
export const approvalNodeKind: EngineNodeKind<ApprovalNode> = {
  reply: {
    byNodeId: true,
    interpret: ({ node, workflow, context, resumeValue, decision }) =>
      approvalOutcome(node, workflow, context, resumeValue, decision),
  },
  executor: (runtime) => gateNodeExecutor(runtime),
  view: { edges: approvalEdges },
};

/** accept to the next node, the refine loop (when offered) and reject's goto (else the run fails: no edge). */
function approvalEdges(
  node: ApprovalNode,
  { after, before }: { after: string; before: string | undefined },
): NodeGraphEdge[] {
  const edges: NodeGraphEdge[] = [{ from: node.id, to: after, kind: "accept", condition: "accept" }];
  const actions = node.actions ?? ["accept", "reject", "refine", "edit", "ask"];
  const refine = node.onRefine?.goto ?? singleArtifactSource(node) ?? before;
  if (actions.includes("refine") && refine)
    edges.push({ from: node.id, to: refine, kind: "refine", condition: "refine" });
  if (typeof node.onReject === "object")
    edges.push({ from: node.id, to: node.onReject.goto, kind: "reject", condition: "reject" });
  return edges;
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
  const source = singleArtifactSource(node);
  if (source) return source;
  const index = workflow.nodes.findIndex((n) => n.id === node.id);
  return workflow.nodes[index - 1]?.id ?? null;
}

const LEGACY_DECISIONS: Record<string, (feedback: unknown) => Record<string, unknown>> = {
  approved: () => ({ action: "accept" }),
  rejected: (feedback) =>
    typeof feedback === "string" && feedback
      ? { action: "refine", refineFeedback: { scope: "whole", text: feedback } }
      : { action: "reject" },
};

/** What a reply to an approval gate does: the OpenWOP 5-action vocabulary (and the legacy `decision` form). */
function approvalOutcome(
  node: ApprovalNode,
  workflow: WorkflowDefinition,
  context: TaskContext,
  resumeValue: Record<string, unknown>,
  decision: { decidedBy: string; decidedAt: string },
): ReplyOutcome {
  let value = resumeValue;
  const decisionWord = value["decision"];
  if (
    typeof value["action"] !== "string" &&
    typeof decisionWord === "string" &&
    Object.hasOwn(LEGACY_DECISIONS, decisionWord)
  ) {
    value = { ...value, ...LEGACY_DECISIONS[decisionWord]!(value["feedback"]) };
  }
  const action = value["action"];
  if (typeof action !== "string" || !(APPROVAL_ACTIONS as readonly string[]).includes(action)) {
    throw invalidParams(
      `the reply to approval gate "${node.id}" needs "action" set to one of ${APPROVAL_ACTIONS.join(", ")}`,
      {
        nodeId: node.id,
        allowed: APPROVAL_ACTIONS,
      },
    );
  }
  const allowed = offeredActions(node);
  if (!allowed.includes(action as ApprovalAction)) {
    throw invalidParams(
      `approval gate "${node.id}" does not offer the action "${action}" (offered: ${allowed.join(", ")})`,
      { nodeId: node.id, allowed },
    );
  }
  const feedback = typeof value["feedback"] === "string" ? value["feedback"] : undefined;
  const base = {
    action,
    ...(feedback ? { feedback } : {}),
    decidedBy: decision.decidedBy,
    decidedAt: decision.decidedAt,
  };
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
      const part: Part =
        typeof edited === "string" ? { kind: "text", text: edited } : { kind: "data", data: { value: edited } };
      const reviewed = reviewedArtifactIds(node, context);
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
        ? {
            code: "approval_timeout",
            message: `approval gate "${node.id}" timed out and was rejected`,
            nodeId: node.id,
          }
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
