// The pure workflow decisions, run against the real definitions in workflows/{demo,conformance}/: what a running task does
// next (nextStep), the interrupt a waiting node raises (buildInterrupt), what a caller's reply means
// (interpretReply, the OpenWOP 5-action vocabulary and the legacy `decision` form), how a reply message
// becomes a resume value (resumeValueFromMessage), and how bad workflow files are refused.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import type { Artifact, Message } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import { WorkflowLoadError, checkWorkflow, readWorkflowDirectory } from "../../src/engine/workflow-catalog.js";
import { feedbackFor } from "../../src/engine/nodes/gates/approval-node.js";
import { buildInterrupt, offeredActions } from "../../src/engine/nodes/gates/gate-node.js";
import {
  firstNodeOf,
  idempotencyKeyOf,
  interpretReply,
  nextStep,
  resumeValueFromMessage,
  SYSTEM_TIMEOUT,
  type ReplyOutcome,
} from "../../src/engine/workflow-engine.js";
import type {
  ApprovalNode,
  ClarificationNode,
  WorkflowDefinition,
  WorkflowNode,
} from "../../src/workflows/workflow-types.js";
import type { PendingInterrupt, TaskContext } from "../../src/machine/task-context.js";

// ------------------------------------------------------------------------------------------ helpers

let workflows: Map<string, WorkflowDefinition>;

beforeAll(async () => {
  const loaded = [
    ...(await readWorkflowDirectory(join(projectRoot, "workflows", "demo"), builtinHandlers)),
    ...(await readWorkflowDirectory(join(projectRoot, "workflows", "conformance"), builtinHandlers)),
  ];
  workflows = new Map(loaded.map((w) => [w.id, w]));
});

function workflow(id: string): WorkflowDefinition {
  const found = workflows.get(id);
  if (!found) throw new Error(`workflow ${id} is not in workflows/`);
  return found;
}

function node<K extends WorkflowNode["kind"]>(
  w: WorkflowDefinition,
  id: string,
  kind: K,
): Extract<WorkflowNode, { kind: K }> {
  const found = w.nodes.find((n) => n.id === id);
  if (!found || found.kind !== kind) throw new Error(`${w.id} has no ${kind} node ${id}`);
  return found as Extract<WorkflowNode, { kind: K }>;
}

/** A copy of a real workflow with one node changed (and still checked by the loader's rules). */
function withNode(
  w: WorkflowDefinition,
  id: string,
  change: Partial<ApprovalNode> | Partial<ClarificationNode>,
): WorkflowDefinition {
  const changed = { ...w, nodes: w.nodes.map((n) => (n.id === id ? ({ ...n, ...change } as WorkflowNode) : n)) };
  return checkWorkflow(structuredClone(changed), builtinHandlers);
}

function textArtifact(artifactId: string, text: string): Artifact {
  return { artifactId, name: artifactId, parts: [{ kind: "text", text }] };
}

/** Artifacts named as the supervisor names them (`${nodeId}.${index}`) are attributed to their node. */
function byNode(artifacts: Artifact[]): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const a of artifacts) (map[a.artifactId.replace(/\.\d+$/, "")] ??= []).push(a.artifactId);
  return map;
}

function contextOf(w: WorkflowDefinition, overrides: Partial<TaskContext> = {}): TaskContext {
  return {
    artifactsByNode: byNode(overrides.artifacts ?? []),
    taskId: "task-1",
    contextId: "ctx-1",
    workflowId: w.id,
    tenant: "tenant-a",
    cursor: firstNodeOf(w),
    nodeStarted: false,
    attempt: 0,
    visits: {},
    outputs: {},
    artifacts: [],
    request: { messageId: "m-1", role: "user", parts: [{ kind: "text", text: "Send the report" }] },
    historyCount: 1,
    history: [{ messageId: "m-1", role: "user", parts: [{ kind: "text", text: "Send the report" }] }],
    ...overrides,
  };
}

const AT = "2026-03-01T10:00:00.000Z";
const DECISION = { decidedBy: "alice", decidedAt: AT };

function pending(nodeId: string, kind: PendingInterrupt["kind"]): PendingInterrupt {
  return { interruptId: `int-${nodeId}`, nodeId, kind, data: {}, requestedAt: AT, exchanges: [] };
}

/** The invalid-params DomainError fn throws (fails the test if it throws nothing or something else). */
function invalid(fn: () => unknown): DomainError {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  if (thrown === undefined) throw new Error("expected an invalid-params error, got none");
  expect(thrown).toBeInstanceOf(DomainError);
  expect((thrown as DomainError).code).toBe("invalid-params");
  return thrown as DomainError;
}

function resumed(outcome: ReplyOutcome): Extract<ReplyOutcome, { type: "resume" }> {
  expect(outcome.type).toBe("resume");
  if (outcome.type !== "resume") throw new Error("unreachable");
  return outcome;
}

/** Reply at the approval gate of approval-gate (prepare → gate → finalize, onRefine → prepare). */
function replyAtGate(
  resumeValue: Record<string, unknown>,
  w = workflow("approval-gate"),
  context?: TaskContext,
): ReplyOutcome {
  const ctx = context ?? contextOf(w, { cursor: "gate", artifacts: [textArtifact("prepare.0", "Proposal v1")] });
  return interpretReply(w, ctx, pending("gate", "approval"), resumeValue, DECISION);
}

function message(parts: Message["parts"], metadata?: Record<string, unknown>): Message {
  return { messageId: "reply-1", role: "user", parts, ...(metadata ? { metadata } : {}) };
}

const VOCABULARY = "accept, reject, refine, edit-accept, ask";

/** Schema-valid: node ids may contain '.', so "draft.v2" and "draft" can both exist. */
const PREFIX_COLLISION: WorkflowDefinition = {
  id: "prefix-collision",
  name: "Prefix collision",
  description: "two nodes whose ids share a dotted prefix",
  nodes: [
    { kind: "task", id: "draft.v2", handler: "echo" },
    { kind: "task", id: "draft", handler: "echo" },
    { kind: "approval", id: "gate", title: "Approve the draft", artifactFrom: "draft" },
  ],
};

function prefixCollisionContext(): TaskContext {
  return contextOf(PREFIX_COLLISION, {
    cursor: "gate",
    // The supervisor names handler artifacts `${nodeId}.${index}`.
    artifacts: [textArtifact("draft.v2.0", "the other node's artifact"), textArtifact("draft.0", "the draft")],
  });
}

// ------------------------------------------------------------------------------------------- tests

describe("the real workflow definitions", () => {
  it("all load from workflows/demo and workflows/conformance with the built-in handlers", () => {
    expect([...workflows.keys()].sort()).toEqual([
      "approval-gate",
      "campaign-brief",
      "clarify",
      "conformance-a2a-task-roundtrip",
      "conformance-approval",
      "conformance-cancellable",
      "conformance-delay",
      "conformance-idempotent",
      "conformance-noop",
      "echo",
      "files-and-data",
      "quick-answer",
      "refine",
      "router",
      "streaming-artifact",
    ]);
  });
});

it("the prefix-collision fixture is a valid workflow definition", () => {
  expect(() => checkWorkflow(structuredClone(PREFIX_COLLISION), builtinHandlers)).not.toThrow();
});

describe("nextStep", () => {
  it("a node whose kind decides nothing (task, approval, clarification) → run: its executor decides", () => {
    const echo = workflow("echo");
    expect(nextStep(contextOf(echo), echo)).toEqual({ type: "run" });
    const gate = workflow("approval-gate");
    expect(nextStep(contextOf(gate, { cursor: "gate" }), gate)).toEqual({ type: "run" });
    const clarify = workflow("clarify");
    expect(nextStep(contextOf(clarify), clarify)).toEqual({ type: "run" });
  });

  it("delay node: run with the kind's own payload, start without its timer, fire with it", () => {
    const w = workflow("conformance-delay");
    expect(nextStep(contextOf(w), w)).toEqual({ type: "run", payload: "start" });
    const timer = { nodeId: "wait", purpose: "delay" as const, dueAt: "2026-03-01T10:00:02.000Z" };
    expect(nextStep(contextOf(w, { timer }), w)).toEqual({ type: "run", payload: "fire" });
    // A timer that belongs to another node does not count.
    expect(nextStep(contextOf(w, { timer: { ...timer, nodeId: "done" } }), w)).toEqual({
      type: "run",
      payload: "start",
    });
  });

  it("no cursor → complete", () => {
    const w = workflow("echo");
    expect(nextStep(contextOf(w, { cursor: null }), w)).toEqual({ type: "complete" });
  });

  it("a cursor naming no node of the workflow → fail workflow_invalid", () => {
    const w = workflow("echo");
    const step = nextStep(contextOf(w, { cursor: "ghost" }), w);
    expect(step.type).toBe("fail");
    if (step.type !== "fail") throw new Error("unreachable");
    expect(step.error.code).toBe("workflow_invalid");
    expect(step.error.message).toContain("ghost");
  });

  it("idempotency keys differ per visit of a node", () => {
    const w = workflow("approval-gate");
    expect(idempotencyKeyOf(contextOf(w), "prepare")).toBe("task-1:prepare:1");
    expect(idempotencyKeyOf(contextOf(w, { visits: { prepare: 1 } }), "prepare")).toBe("task-1:prepare:2");
  });
});

describe("buildInterrupt", () => {
  it("approval: offers all five actions by default, with edit offered as edit-accept", () => {
    const w = workflow("approval-gate");
    const gate = node(w, "gate", "approval");
    expect(gate.actions).toBeUndefined();
    const context = contextOf(w, {
      cursor: "gate",
      artifacts: [textArtifact("prepare.0", "Proposal"), textArtifact("other.0", "unrelated")],
    });
    const built = buildInterrupt(gate, context, AT, { interruptId: "int-1", messageId: "msg-1" });
    expect(built.interrupt).toEqual({
      interruptId: "int-1",
      nodeId: "gate",
      kind: "approval",
      data: {
        title: "Approve the proposal",
        artifactIds: ["prepare.0"],
        actions: ["accept", "reject", "refine", "edit-accept", "ask"],
      },
      requestedAt: AT,
      exchanges: [],
    });
    expect(built.interrupt.data["actions"]).not.toContain("edit");
    expect(built.interrupt).not.toHaveProperty("expiresAt");
    expect(built).not.toHaveProperty("timer");

    const status = built.statusMessage;
    expect(status).toMatchObject({ messageId: "msg-1", role: "agent", taskId: "task-1", contextId: "ctx-1" });
    const text = status.parts.find((p) => p.kind === "text");
    expect(text?.kind === "text" && text.text).toContain("Approve the proposal");
    expect(text?.kind === "text" && text.text).toContain('"edit-accept"');
    const data = status.parts.find((p) => p.kind === "data");
    expect(data?.kind === "data" && data.data["interrupt"]).toMatchObject({
      kind: "approval",
      nodeId: "gate",
      interruptId: "int-1",
    });
  });

  it("approval: the conformance gate offers only accept and reject", () => {
    const w = workflow("conformance-approval");
    const gate = node(w, "gate", "approval");
    expect(offeredActions(gate)).toEqual(["accept", "reject"]);
    const built = buildInterrupt(gate, contextOf(w), AT, { interruptId: "int-1", messageId: "msg-1" });
    expect(built.interrupt.data["actions"]).toEqual(["accept", "reject"]);
    // No artifactFrom: nothing is put up for approval.
    expect(built.interrupt.data["artifactIds"]).toEqual([]);
  });

  it("approval: an explicit 'edit' action is offered as 'edit-accept'", () => {
    const gate: ApprovalNode = { ...node(workflow("approval-gate"), "gate", "approval"), actions: ["accept", "edit"] };
    expect(offeredActions(gate)).toEqual(["accept", "edit-accept"]);
  });

  it("approval with timeoutMs: expiresAt = at + timeoutMs and an interrupt-timeout timer at that time", () => {
    const w = withNode(workflow("approval-gate"), "gate", { timeoutMs: 90_000 });
    const gate = node(w, "gate", "approval");
    const built = buildInterrupt(gate, contextOf(w, { cursor: "gate" }), AT, {
      interruptId: "int-1",
      messageId: "msg-1",
    });
    expect(built.interrupt.expiresAt).toBe("2026-03-01T10:01:30.000Z");
    expect(built.timer).toEqual({ nodeId: "gate", purpose: "interrupt-timeout", dueAt: "2026-03-01T10:01:30.000Z" });
  });

  it("approval: only the artifacts of artifactFrom are put up (campaign-brief final sign-off)", () => {
    const w = workflow("campaign-brief");
    const signoff = node(w, "final-signoff", "approval");
    const context = contextOf(w, {
      cursor: "final-signoff",
      artifacts: [textArtifact("draft.0", "brief"), textArtifact("plan-channels.0", "plan")],
    });
    const built = buildInterrupt(signoff, context, AT, { interruptId: "int-2", messageId: "msg-2" });
    expect(built.interrupt.data["artifactIds"]).toEqual(["plan-channels.0"]);
    expect(built.interrupt.data["title"]).toBe("Sign off the channel plan");
  });

  // BUG (src/engine/workflow-engine.ts:101 and :183): artifacts are matched to `artifactFrom` by the
  // prefix `${artifactFrom}.`, but node ids may contain '.', so the artifacts of node "draft.v2" are
  // taken for those of node "draft".
  it("approval: artifactFrom does not pick up the artifacts of a node whose id merely starts with it", () => {
    const built = buildInterrupt(node(PREFIX_COLLISION, "gate", "approval"), prefixCollisionContext(), AT, {
      interruptId: "int-1",
      messageId: "msg-1",
    });
    expect(built.interrupt.data["artifactIds"]).toEqual(["draft.0"]);
  });

  it("clarification: lists the questions and asks for text or answers", () => {
    const w = workflow("clarify");
    const ask = node(w, "ask-audience", "clarification");
    const built = buildInterrupt(ask, contextOf(w), AT, { interruptId: "int-3", messageId: "msg-3" });
    expect(built.interrupt).toEqual({
      interruptId: "int-3",
      nodeId: "ask-audience",
      kind: "clarification",
      data: { questions: [{ id: "audience", question: "Who is the audience for this message?" }] },
      requestedAt: AT,
      exchanges: [],
    });
    expect(built).not.toHaveProperty("timer");
    const text = built.statusMessage.parts.find((p) => p.kind === "text");
    expect(text?.kind === "text" && text.text).toContain("Who is the audience for this message?");
    const data = built.statusMessage.parts.find((p) => p.kind === "data");
    expect(data?.kind === "data" && data.data["interrupt"]).toMatchObject({
      kind: "clarification",
      nodeId: "ask-audience",
    });
  });

  it("clarification with timeoutMs gets a deadline and a timer too", () => {
    const w = withNode(workflow("clarify"), "ask-audience", { timeoutMs: 5_000 });
    const built = buildInterrupt(node(w, "ask-audience", "clarification"), contextOf(w), AT, {
      interruptId: "i",
      messageId: "m",
    });
    expect(built.interrupt.expiresAt).toBe("2026-03-01T10:00:05.000Z");
    expect(built.timer).toEqual({
      nodeId: "ask-audience",
      purpose: "interrupt-timeout",
      dueAt: "2026-03-01T10:00:05.000Z",
    });
  });
});

describe("interpretReply at an approval gate", () => {
  it("accept → resume at the next node, recording who decided and when", () => {
    const outcome = resumed(replyAtGate({ action: "accept", feedback: "looks good" }));
    expect(outcome).toEqual({
      type: "resume",
      output: { action: "accept", feedback: "looks good", decidedBy: "alice", decidedAt: AT },
      next: "finalize",
    });
  });

  it("decidedBy comes from the authenticated caller, never from the message", () => {
    const outcome = resumed(replyAtGate({ action: "accept", decidedBy: "mallory" }));
    expect(outcome.output["decidedBy"]).toBe("alice");
  });

  it("reject → the run fails with approval_rejected (onReject defaults to fail)", () => {
    const outcome = resumed(replyAtGate({ action: "reject", feedback: "not now" }));
    expect(outcome.next).toBeNull();
    expect(outcome.output).toMatchObject({ action: "reject", feedback: "not now", decidedBy: "alice" });
    expect(outcome.thenFail).toMatchObject({ code: "approval_rejected", nodeId: "gate" });
  });

  it("reject with onReject goto → continues at that node, no failure", () => {
    const w = withNode(workflow("approval-gate"), "gate", { onReject: { goto: "prepare" } });
    const outcome = resumed(replyAtGate({ action: "reject" }, w));
    expect(outcome.next).toBe("prepare");
    expect(outcome.thenFail).toBeUndefined();
  });

  it("reject with reason timeout from the host's timer → approval_timeout (auto-reject when the gate times out)", () => {
    const w = workflow("approval-gate");
    const ctx = contextOf(w, { cursor: "gate", artifacts: [textArtifact("prepare.0", "Proposal v1")] });
    const outcome = resumed(
      interpretReply(
        w,
        ctx,
        pending("gate", "approval"),
        { action: "reject", reason: "timeout" },
        { decidedBy: SYSTEM_TIMEOUT, decidedAt: AT },
      ),
    );
    expect(outcome.output["reason"]).toBe("timeout");
    expect(outcome.thenFail).toMatchObject({ code: "approval_timeout", nodeId: "gate" });
  });

  it("a caller cannot pass its reject off as a timeout", () => {
    const outcome = resumed(replyAtGate({ action: "reject", reason: "timeout" }));
    expect(outcome.output["reason"]).toBeUndefined();
    expect(outcome.thenFail).toMatchObject({ code: "approval_rejected" });
  });

  it("refine with feedback → back to onRefine.goto with refineFeedback {scope: whole, text}", () => {
    const outcome = resumed(replyAtGate({ action: "refine", feedback: "make it shorter" }));
    expect(outcome.next).toBe("prepare");
    expect(outcome.thenFail).toBeUndefined();
    expect(outcome.output).toMatchObject({
      action: "refine",
      refineFeedback: { scope: "whole", text: "make it shorter" },
    });
  });

  it("refine with a structured refineFeedback keeps it", () => {
    const refineFeedback = { scope: "section", sectionPath: "timeline", text: "two weeks" };
    const outcome = resumed(replyAtGate({ action: "refine", refineFeedback }));
    expect(outcome.output["refineFeedback"]).toEqual(refineFeedback);
  });

  it("refine at the campaign sign-off goes back to plan-channels", () => {
    const w = workflow("campaign-brief");
    const context = contextOf(w, { cursor: "final-signoff" });
    const outcome = resumed(
      interpretReply(
        w,
        context,
        pending("final-signoff", "approval"),
        { action: "refine", feedback: "add events" },
        DECISION,
      ),
    );
    expect(outcome.next).toBe("plan-channels");
  });

  it("refine goes to onRefine.goto even when artifactFrom names another node", () => {
    const w = withNode(workflow("campaign-brief"), "final-signoff", { onRefine: { goto: "draft" } });
    const context = contextOf(w, { cursor: "final-signoff" });
    const outcome = resumed(
      interpretReply(
        w,
        context,
        pending("final-signoff", "approval"),
        { action: "refine", feedback: "rethink" },
        DECISION,
      ),
    );
    expect(outcome.next).toBe("draft");
  });

  it("refine without onRefine goes back to artifactFrom, else to the node before the gate", () => {
    const base = workflow("campaign-brief");
    const noGoto = {
      ...base,
      nodes: base.nodes.map((n) => (n.id === "final-signoff" ? { ...n, onRefine: undefined } : n)),
    };
    const refine = (w: WorkflowDefinition): string | null =>
      resumed(
        interpretReply(
          w,
          contextOf(w),
          pending("final-signoff", "approval"),
          { action: "refine", feedback: "x" },
          DECISION,
        ),
      ).next;
    expect(refine(withNode(noGoto, "final-signoff", { artifactFrom: "draft" }))).toBe("draft");
    expect(refine(withNode(noGoto, "final-signoff", { artifactFrom: undefined }))).toBe("plan-channels");
  });

  it("refine without feedback is refused; a bad scope is refused", () => {
    expect(invalid(() => replyAtGate({ action: "refine" })).message).toContain("refineFeedback");
    expect(invalid(() => replyAtGate({ action: "refine", refineFeedback: { scope: "everything" } })).message).toContain(
      "scope",
    );
  });

  it("refine feedback is handed to the refined node (feedbackFor)", () => {
    const w = workflow("approval-gate");
    const outcome = resumed(replyAtGate({ action: "refine", feedback: "shorter" }));
    const context = contextOf(w, { cursor: "prepare", outputs: { gate: outcome.output } });
    expect(feedbackFor(context, w, "prepare")).toEqual(["shorter"]);
    expect(feedbackFor(context, w, "finalize")).toEqual([]);
  });

  it("edit-accept → replaces the artifact of artifactFrom with the edited data and continues", () => {
    const context = contextOf(workflow("approval-gate"), {
      cursor: "gate",
      artifacts: [textArtifact("other.0", "unrelated"), textArtifact("prepare.0", "Proposal v1")],
    });
    const outcome = resumed(
      replyAtGate({ action: "edit-accept", editedArtifactData: "Proposal, edited" }, undefined, context),
    );
    expect(outcome.next).toBe("finalize");
    expect(outcome.thenFail).toBeUndefined();
    expect(outcome.output).toMatchObject({ action: "edit-accept", decidedBy: "alice" });
    expect(outcome.artifacts).toHaveLength(1);
    const [edited] = outcome.artifacts!;
    expect(edited!.artifactId).toBe("prepare.0");
    expect(edited!.parts).toEqual([{ kind: "text", text: "Proposal, edited" }]);
    expect(edited!.metadata).toMatchObject({ editedBy: "alice" });
  });

  it("edit-accept with structured data puts it in a data part", () => {
    const edited = { title: "New title", budget: 10 };
    const outcome = resumed(replyAtGate({ action: "edit-accept", editedArtifactData: edited }));
    const part = outcome.artifacts?.[0]?.parts[0];
    expect(part?.kind).toBe("data");
    if (part?.kind !== "data") throw new Error("unreachable");
    // Either the object itself or wrapped as {value}; the edited data must be carried unchanged.
    expect([part.data, part.data["value"]]).toContainEqual(edited);
  });

  // BUG (src/engine/workflow-engine.ts:183): same prefix match as buildInterrupt; edit-accept replaces
  // the first artifact whose id starts with `${artifactFrom}.`, here the one of node "draft.v2".
  it("edit-accept replaces the artifact of artifactFrom, not one of a node whose id merely starts with it", () => {
    const outcome = resumed(
      interpretReply(
        PREFIX_COLLISION,
        prefixCollisionContext(),
        pending("gate", "approval"),
        { action: "edit-accept", editedArtifactData: "edited" },
        DECISION,
      ),
    );
    expect(outcome.artifacts?.map((a) => a.artifactId)).toEqual(["draft.0"]);
  });

  it("edit-accept without editedArtifactData is refused", () => {
    expect(invalid(() => replyAtGate({ action: "edit-accept" })).message).toContain("editedArtifactData");
  });

  it("ask → stays waiting with the question (from question, else feedback); needs one", () => {
    expect(replyAtGate({ action: "ask", question: "What does it cost?" })).toEqual({
      type: "ask",
      question: "What does it cost?",
    });
    expect(replyAtGate({ action: "ask", feedback: "Who else approves?" })).toEqual({
      type: "ask",
      question: "Who else approves?",
    });
    expect(invalid(() => replyAtGate({ action: "ask" })).message).toContain("question");
    expect(invalid(() => replyAtGate({ action: "ask", question: "" })).message).toContain("question");
  });

  it("legacy decision: approved → accept", () => {
    const outcome = resumed(replyAtGate({ decision: "approved" }));
    expect(outcome.output["action"]).toBe("accept");
    expect(outcome.next).toBe("finalize");
  });

  it("legacy decision: rejected without feedback → reject (fails the run)", () => {
    const outcome = resumed(replyAtGate({ decision: "rejected" }));
    expect(outcome.output["action"]).toBe("reject");
    expect(outcome.thenFail?.code).toBe("approval_rejected");
  });

  it("legacy decision: rejected with feedback → refine {scope: whole, text}", () => {
    const outcome = resumed(replyAtGate({ decision: "rejected", feedback: "too long" }));
    expect(outcome.output).toMatchObject({ action: "refine", refineFeedback: { scope: "whole", text: "too long" } });
    expect(outcome.next).toBe("prepare");
  });

  it("an explicit action wins over a legacy decision", () => {
    const outcome = resumed(replyAtGate({ action: "accept", decision: "rejected" }));
    expect(outcome.output["action"]).toBe("accept");
  });

  it("an action the gate does not offer is refused, naming what it offers (conformance-approval)", () => {
    const w = workflow("conformance-approval");
    for (const resumeValue of [
      { action: "refine", feedback: "x" },
      { action: "edit-accept", editedArtifactData: "x" },
      { action: "ask", question: "x" },
    ]) {
      const error = invalid(() => replyAtGate(resumeValue, w, contextOf(w)));
      expect(error.message).toContain(`"${resumeValue.action}"`);
      expect(error.message).toContain("offered: accept, reject");
      expect(error.details).toMatchObject({ nodeId: "gate", allowed: ["accept", "reject"] });
    }
    expect(resumed(replyAtGate({ action: "accept" }, w, contextOf(w))).next).toBe("done");
    expect(resumed(replyAtGate({ action: "reject" }, w, contextOf(w))).thenFail?.code).toBe("approval_rejected");
  });

  it("an invalid action is refused with a message listing the 5-action vocabulary", () => {
    for (const resumeValue of [{ action: "approve" }, { action: "edit" }, { action: 1 }, {}, { decision: "maybe" }]) {
      const error = invalid(() => replyAtGate(resumeValue));
      expect(error.message).toContain(VOCABULARY);
      expect(error.message).toContain('"gate"');
    }
  });

  // BUG (src/engine/workflow-engine.ts:154): LEGACY_DECISIONS is a plain object literal looked up with
  // the caller's string, so Object.prototype members are found: `decision: "valueOf"` (or
  // "hasOwnProperty", "toLocaleString", "__proto__") calls that function and throws a TypeError, which
  // becomes an internal error instead of invalid-params.
  it("a legacy decision naming an Object.prototype member is refused as invalid-params, not a crash", () => {
    for (const decision of ["valueOf", "hasOwnProperty", "toLocaleString", "__proto__", "toString", "constructor"]) {
      const error = invalid(() => replyAtGate({ decision }));
      expect(error.message).toContain(VOCABULARY);
    }
  });

  it("a node that is not a gate does not accept replies", () => {
    const w = workflow("approval-gate");
    expect(
      invalid(() => interpretReply(w, contextOf(w), pending("prepare", "approval"), { action: "accept" }, DECISION))
        .message,
    ).toContain("prepare");
  });
});

describe("interpretReply at a clarification", () => {
  const reply = (resumeValue: Record<string, unknown>, w = workflow("clarify")): ReplyOutcome =>
    interpretReply(w, contextOf(w), pending("ask-audience", "clarification"), resumeValue, DECISION);

  it("answers → resume at the next node with the answers and who answered", () => {
    expect(resumed(reply({ answers: [{ id: "audience", answer: "developers" }] }))).toEqual({
      type: "resume",
      output: { answers: [{ id: "audience", answer: "developers" }], answeredBy: "alice", answeredAt: AT },
      next: "compose",
    });
  });

  it("a missing required answer is refused", () => {
    expect(invalid(() => reply({ answers: [] })).message).toContain("missing answers for: audience");
  });

  it("an unknown question id is refused, listing the questions", () => {
    const error = invalid(() =>
      reply({
        answers: [
          { id: "budget", answer: 5 },
          { id: "audience", answer: "x" },
        ],
      }),
    );
    expect(error.message).toContain('"budget"');
    expect(error.message).toContain("audience");
  });

  it("answers that are not a list of {id, answer} are refused", () => {
    expect(invalid(() => reply({ answers: "developers" })).message).toContain("answers");
    expect(invalid(() => reply({})).message).toContain("answers");
    expect(invalid(() => reply({ answers: [{ id: "audience" }] })).message).toContain("answers[0]");
    expect(invalid(() => reply({ answers: [null] })).message).toContain("answers[0]");
  });

  it("an optional question may be left out", () => {
    const w = withNode(workflow("clarify"), "ask-audience", {
      questions: [
        { id: "audience", question: "Who?" },
        { id: "tone", question: "Which tone?", required: false },
      ],
    });
    expect(resumed(reply({ answers: [{ id: "audience", answer: "devs" }] }, w)).next).toBe("compose");
    expect(invalid(() => reply({ answers: [{ id: "tone", answer: "dry" }] }, w)).message).toContain("audience");
  });
});

describe("resumeValueFromMessage", () => {
  const gate = (): [PendingInterrupt, WorkflowDefinition] => [pending("gate", "approval"), workflow("approval-gate")];

  it("takes the data part (the A2A reply form), even next to text", () => {
    const data = { action: "accept", feedback: "looks good" };
    expect(
      resumeValueFromMessage(
        message([
          { kind: "text", text: "reject" },
          { kind: "data", data },
        ]),
        ...gate(),
      ),
    ).toEqual(data);
  });

  it("takes metadata.openwop.action when there is no data part", () => {
    const value = resumeValueFromMessage(
      message([{ kind: "text", text: "see metadata" }], { openwop: { action: "reject", feedback: "no" } }),
      ...gate(),
    );
    expect(value).toMatchObject({ action: "reject", feedback: "no" });
  });

  it("takes a text reply that is exactly an action word (trimmed, any case)", () => {
    expect(resumeValueFromMessage(message([{ kind: "text", text: "  Accept \n" }]), ...gate())).toEqual({
      action: "accept",
    });
    expect(resumeValueFromMessage(message([{ kind: "text", text: "reject" }]), ...gate())).toEqual({
      action: "reject",
    });
  });

  it("refuses free text for an approval, naming the vocabulary", () => {
    const error = invalid(() =>
      resumeValueFromMessage(message([{ kind: "text", text: "yes, looks good" }]), ...gate()),
    );
    expect(error.message).toContain(VOCABULARY);
    expect(error.message).toContain('"gate"');
  });

  it("refuses a reply with neither data nor text", () => {
    invalid(() => resumeValueFromMessage(message([]), ...gate()));
    invalid(() => resumeValueFromMessage(message([{ kind: "text", text: "   " }]), ...gate()));
    invalid(() =>
      resumeValueFromMessage(message([{ kind: "file", file: { uri: "https://example.com/a.pdf" } }]), ...gate()),
    );
  });

  it("a text reply answers a single clarification question", () => {
    const w = workflow("clarify");
    const value = resumeValueFromMessage(
      message([{ kind: "text", text: "Developers" }]),
      pending("ask-audience", "clarification"),
      w,
    );
    expect(value).toEqual({ answers: [{ id: "audience", answer: "Developers" }] });
    // …and interpretReply accepts it.
    expect(
      resumed(interpretReply(w, contextOf(w), pending("ask-audience", "clarification"), value, DECISION)).next,
    ).toBe("compose");
  });

  it("a text reply is refused when the clarification asks several questions", () => {
    const w = withNode(workflow("clarify"), "ask-audience", {
      questions: [
        { id: "audience", question: "Who?" },
        { id: "tone", question: "Which tone?" },
      ],
    });
    const error = invalid(() =>
      resumeValueFromMessage(message([{ kind: "text", text: "devs" }]), pending("ask-audience", "clarification"), w),
    );
    expect(error.message).toContain("answers");
  });

  it("a data part with answers is taken for a clarification", () => {
    const data = { answers: [{ id: "audience", answer: "ops" }] };
    expect(
      resumeValueFromMessage(
        message([{ kind: "data", data }]),
        pending("ask-audience", "clarification"),
        workflow("clarify"),
      ),
    ).toEqual(data);
  });
});

describe("readWorkflowDirectory refuses a bad workflow file with its path and the reason", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "workflow-engine-test-"));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  let counter = 0;
  /** Writes one file into a fresh directory and returns the load error. */
  async function loadError(fileName: string, content: string): Promise<{ error: WorkflowLoadError; path: string }> {
    counter += 1;
    const dir = join(root, `case-${counter}`);
    await mkdir(dir);
    const path = join(dir, fileName);
    await writeFile(path, content, "utf8");
    let thrown: unknown;
    try {
      await readWorkflowDirectory(dir, builtinHandlers);
    } catch (error) {
      thrown = error;
    }
    expect(thrown, `${fileName} should be refused`).toBeInstanceOf(WorkflowLoadError);
    const error = thrown as WorkflowLoadError;
    expect(error.problems.length).toBeGreaterThan(0);
    for (const problem of error.problems) expect(problem.startsWith(`${path}: `), problem).toBe(true);
    return { error, path };
  }

  const header = "id: bad\nname: Bad\ndescription: a broken definition\n";

  it("an unknown node kind", async () => {
    const { error } = await loadError("unknown-kind.yaml", `${header}nodes:\n  - { kind: loop, id: again }\n`);
    expect(error.message).toContain("nodes/0/kind: must be equal to one of the allowed values");
    expect(error.message).toContain('"task", "approval", "clarification", "delay"');
  });

  it("an a2a.invoke agentCardUrl naming a variable workflows may not use", async () => {
    const { error } = await loadError(
      "a2a-invoke.yaml",
      `${header}nodes:\n  - { kind: a2a.invoke, id: call, agentCardUrl: "\${HOME}/card" }\n`,
    );
    expect(error.message).toContain('node "call"');
    expect(error.message).toContain("${HOME}");
    expect(error.message).toContain("known: A2A_PEER_CARD_URL");
  });

  it("an a2a.invoke without agentCardUrl, or with one that is not a URI", async () => {
    expect(
      (await loadError("no-url.yaml", `${header}nodes:\n  - { kind: a2a.invoke, id: call }\n`)).error.message,
    ).toContain("agentCardUrl");
    expect(
      (
        await loadError(
          "bad-url.yaml",
          `${header}nodes:\n  - { kind: a2a.invoke, id: call, agentCardUrl: "not a url" }\n`,
        )
      ).error.message,
    ).toContain("nodes/0/agentCardUrl");
  });

  it("duplicate node ids", async () => {
    const { error } = await loadError(
      "duplicate.yaml",
      `${header}nodes:\n  - { kind: task, id: step, handler: noop }\n  - { kind: task, id: step, handler: echo }\n`,
    );
    expect(error.message).toContain("nodes/1/id");
    expect(error.message).toContain("duplicate node id 'step'");
  });

  it("a task handler that is not registered", async () => {
    const { error } = await loadError(
      "missing-handler.yaml",
      `${header}nodes:\n  - { kind: task, id: work, handler: does-not-exist }\n`,
    );
    expect(error.message).toContain('node "work"');
    expect(error.message).toContain('no handler named "does-not-exist"');
  });

  it("an onRefine goto to an unknown node", async () => {
    const { error } = await loadError(
      "bad-goto.yaml",
      `${header}nodes:\n  - { kind: task, id: draft, handler: noop }\n  - { kind: approval, id: gate, title: Gate, onRefine: { goto: nowhere } }\n`,
    );
    expect(error.message).toContain("nodes/1/onRefine/goto");
    expect(error.message).toContain("unknown node id 'nowhere'");
  });

  it("an onReject goto to an unknown node (JSON file)", async () => {
    const definition = {
      id: "bad",
      name: "Bad",
      description: "x",
      nodes: [{ kind: "approval", id: "gate", title: "Gate", onReject: { goto: "missing" } }],
    };
    const { error } = await loadError("bad-reject.json", JSON.stringify(definition));
    expect(error.message).toContain("nodes/0/onReject/goto");
    expect(error.message).toContain("unknown node id 'missing'");
  });

  it("a file that is not valid YAML / JSON", async () => {
    expect((await loadError("broken.yml", "id: [unclosed\n")).error.message).toMatch(/Flow sequence|end with a \]/);
    expect((await loadError("broken.json", "{ nope")).error.message).toMatch(/JSON/);
  });

  it("a valid file next to the bad ones loads (the refusal is about the content)", async () => {
    const dir = join(root, "good");
    await mkdir(dir);
    await writeFile(join(dir, "ok.yaml"), `${header}nodes:\n  - { kind: task, id: work, handler: noop }\n`, "utf8");
    await writeFile(join(dir, "README.md"), "not a definition", "utf8");
    const loaded = await readWorkflowDirectory(dir, builtinHandlers);
    expect(loaded.map((w) => w.id)).toEqual(["bad"]);
  });
});
