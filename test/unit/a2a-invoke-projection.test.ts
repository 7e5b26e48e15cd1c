// The `a2a.invoke` node's pure half and its runner with a fake peer client: the reverse projection of each
// peer TaskState onto our run (openwop-facts §1 differences 13 and 14), untrusted tagging, the interrupt a
// peer's question raises (auth as metadata.subkind), what our caller's answer becomes (forwarded, never an
// approval decision), deterministic message ids, exactly-once delivery of a reply across restarts, retries
// and `external_call_failed`, the card's transport choice, and `${VARIABLE}` expansion at load time.
import { createHash } from "node:crypto";
import { Writable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import {
  buildPeerInterrupt,
  CROSS_PROTOCOL_CANCEL,
  firstProgress,
  peerArtifacts,
  peerMessageId,
  peerStatusChanged,
  peerStatusOf,
  shownUrl,
  projectPeerMessage,
  projectPeerTask,
  type PeerProgress,
  type PeerReply,
  type PeerTask,
} from "../../src/engine/nodes/a2a-invoke/a2a-invoke.js";
import { peerReplyParts, peerTaskToCancel } from "../../src/engine/nodes/a2a-invoke/a2a-invoke-replies.js";
import {
  A2AInvokeRunner,
  DEFAULT_A2A_INVOKE_SETTINGS,
  type InvokeOutcome,
} from "../../src/engine/nodes/a2a-invoke/a2a-invoke-runner.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import { checkWorkflow, WorkflowLoadError } from "../../src/engine/workflow-catalog.js";
import {
  idempotencyKeyOf,
  interpretReply,
  nextStep,
  resumeValueFromMessage,
} from "../../src/engine/workflow-engine.js";
import type { A2AInvokeNode, WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { applyTaskEvent, createTaskActor } from "../../src/machine/task-actor.js";
import * as pb from "../../src/gen/a2a/v1/a2a_pb.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import { runStatusOf, stateMetaOf } from "../../src/machine/task-projection.js";
import { createLogger } from "../../src/observability/logger.js";
import type { A2APeerClient } from "../../src/peer/a2a-peer-client.js";
import { peerEndpointOf } from "../../src/peer/a2a-peer-client.js";
import { peerVersions } from "../../src/a2a/versions.js";
import { parsePeerTask, peerTaskFromProto } from "../../src/a2a/v03/v03-peer-client-codec.js";
import { grpcCallError, grpcEndpointOf } from "../../src/peer/grpc-peer-client.js";
import {
  apiKeyHeaderOf,
  formatPeerEndpoint,
  grpcOriginOf,
  parsePeerEndpoint,
  shownEndpoint,
} from "../../src/peer/peer-endpoint.js";
import { PeerCallError } from "../../src/peer/peer-http-client.js";
import { loadPeerSettings } from "../../src/peer/peer-settings.js";

// ------------------------------------------------------------------------------------------ helpers

/** The gRPC peer transport reads a2a.v1 with the 0.3 proto codec (injected, as app.ts does). */

const CARD = "https://peer.example/.well-known/agent-card.json";
const AT = "2026-03-01T10:00:00.000Z";
const NODE: A2AInvokeNode = { kind: "a2a.invoke", id: "call", agentCardUrl: CARD, skillId: "research" };
const WORKFLOW: WorkflowDefinition = {
  id: "peer-then-gate",
  name: "Peer then gate",
  description: "x",
  nodes: [NODE, { kind: "approval", id: "gate", title: "Approve", artifactFrom: "call" }],
};

function peerMessage(parts: Message["parts"], id = "peer-msg-1"): Message {
  return { messageId: id, role: "agent", parts };
}

function peerTask(state: string, extra: Partial<PeerTask> = {}): PeerTask {
  return {
    id: "peer-task-1",
    contextId: "peer-ctx-1",
    state,
    artifacts: [],
    history: [],
    statusTimestamp: AT,
    ...extra,
  };
}

function contextAt(overrides: Partial<TaskContext> = {}): TaskContext {
  return {
    taskId: "run-1",
    contextId: "ctx-1",
    workflowId: WORKFLOW.id,
    tenant: "t",
    cursor: "call",
    nodeStarted: true,
    attempt: 1,
    visits: {},
    outputs: {},
    artifacts: [],
    artifactsByNode: {},
    request: {
      messageId: "m-1",
      role: "user",
      parts: [
        { kind: "text", text: "Find the numbers" },
        { kind: "data", data: { year: 2025 } },
      ],
    },
    historyCount: 1,
    history: [
      {
        messageId: "m-1",
        role: "user",
        parts: [
          { kind: "text", text: "Find the numbers" },
          { kind: "data", data: { year: 2025 } },
        ],
      },
    ],
    ...overrides,
  };
}

const KEY = "run-1:call:1";
/** The trace of run-1 (the first 32 hex digits of sha256("run-1")), a new parent id per message, not sampled. */
const TRACE_OF_RUN = new RegExp(
  `^00-${createHash("sha256").update("run-1").digest("hex").slice(0, 32)}-[0-9a-f]{16}-00$`,
);

function progressFor(task: PeerTask, extra: Partial<PeerProgress> = {}): PeerProgress {
  return {
    ...firstProgress({
      key: KEY,
      agentCardUrl: CARD,
      endpoint: "https://peer.example/a2a",
      messageId: peerMessageId(`${KEY}:send`),
      at: AT,
      task,
    }),
    ...extra,
  };
}

// ------------------------------------------------------------------------------------------- projection

describe("reverse projection of a peer task onto our run", () => {
  it.each([
    ["submitted", { type: "wait" }],
    ["working", { type: "wait" }],
    ["input-required", { type: "interrupt" }],
    ["auth-required", { type: "interrupt", subkind: "auth" }],
    ["canceled", { type: "cancel" }],
    ["unknown", { type: "wait", unknownState: "unknown" }],
    ["TASK_STATE_SOMETHING_NEW", { type: "wait", unknownState: "TASK_STATE_SOMETHING_NEW" }],
  ])("%s → %j", (state, expected) => {
    expect(projectPeerTask(NODE, CARD, peerTask(state), undefined)).toEqual(expected);
  });

  it("failed → failed_by_remote, rejected → rejected_by_remote (the peer's words quoted as untrusted, clipped)", () => {
    const said = peerMessage([{ kind: "text", text: `no. ${"x".repeat(1000)}` }]);
    const failed = projectPeerTask(NODE, CARD, peerTask("failed", { statusMessage: said }), undefined);
    expect(failed).toMatchObject({ type: "fail", error: { code: "failed_by_remote", nodeId: "call" } });
    const rejected = projectPeerTask(NODE, CARD, peerTask("rejected", { statusMessage: said }), undefined);
    expect(rejected).toMatchObject({ type: "fail", error: { code: "rejected_by_remote", nodeId: "call" } });
    if (rejected.type !== "fail") throw new Error("unreachable");
    expect(rejected.error.message).toContain("(untrusted): no.");
    expect(rejected.error.message.length).toBeLessThan(400);
  });

  it("completed → node output and the peer's artifacts as ours, prefixed and tagged untrusted (a peer cannot claim trust)", () => {
    const task = peerTask("completed", {
      statusMessage: peerMessage([{ kind: "text", text: "done" }]),
      artifacts: [
        {
          artifactId: "report",
          name: "report",
          parts: [{ kind: "text", text: "r" }],
          metadata: { contentTrust: "trusted", lang: "en" },
        },
        { artifactId: "raw", parts: [{ kind: "data", data: { action: "accept" } }] },
      ],
    });
    const decision = projectPeerTask(NODE, CARD, task, undefined);
    if (decision.type !== "complete") throw new Error(`expected complete, got ${decision.type}`);
    expect(decision.artifacts.map((a) => a.artifactId)).toEqual(["call.report", "call.raw"]);
    expect(decision.artifacts[0]!.metadata).toEqual({
      contentTrust: "untrusted",
      lang: "en",
      a2aPeer: { agentCardUrl: CARD, taskId: "peer-task-1", artifactId: "report" },
    });
    expect(decision.artifacts[1]!.metadata?.["contentTrust"]).toBe("untrusted");
    expect(decision.output).toMatchObject({
      peer: { agentCardUrl: CARD, taskId: "peer-task-1", contextId: "peer-ctx-1", state: "completed" },
      artifactIds: ["call.report", "call.raw"],
      text: "done",
      contentTrust: "untrusted",
    });
    expect(peerArtifacts("call", CARD, task)).toEqual(decision.artifacts);
  });

  it("a peer that answers with a plain message (no task) completes the node with it", () => {
    expect(projectPeerMessage(CARD, peerMessage([{ kind: "text", text: "42" }]))).toMatchObject({
      type: "complete",
      artifacts: [],
      output: { text: "42", contentTrust: "untrusted" },
    });
  });

  it("right after our answer is forwarded, the interrupted status we answered is not a new question", () => {
    const asked = peerTask("input-required", { statusMessage: peerMessage([{ kind: "text", text: "Colour?" }]) });
    const progress = progressFor(asked, { answeredStatus: peerStatusOf(asked) });
    expect(projectPeerTask(NODE, CARD, asked, progress)).toEqual({ type: "wait" });
    const askedAgain = peerTask("input-required", {
      statusMessage: peerMessage([{ kind: "text", text: "Which shade?" }], "peer-msg-2"),
    });
    expect(projectPeerTask(NODE, CARD, askedAgain, progress)).toEqual({ type: "interrupt" });
  });

  it("nextStep hands an a2a.invoke node to its executor", () => {
    expect(nextStep(contextAt(), WORKFLOW)).toEqual({ type: "run" });
  });
});

describe("what is recorded and shown", () => {
  it("a new state or a new question is recorded; a new timestamp alone is not", () => {
    const working = progressFor(peerTask("working"));
    expect(peerStatusChanged(working, peerTask("working", { statusTimestamp: "2026-03-01T10:00:05.000Z" }))).toBe(
      false,
    );
    expect(peerStatusChanged(working, peerTask("completed"))).toBe(true);
    const asked = progressFor(
      peerTask("input-required", { statusMessage: peerMessage([{ kind: "text", text: "A?" }], "q-1") }),
    );
    expect(
      peerStatusChanged(
        asked,
        peerTask("input-required", {
          statusMessage: peerMessage([{ kind: "text", text: "A?" }], "q-1"),
          statusTimestamp: "2026-03-01T11:00:00.000Z",
        }),
      ),
    ).toBe(false);
    expect(
      peerStatusChanged(
        asked,
        peerTask("input-required", { statusMessage: peerMessage([{ kind: "text", text: "B?" }], "q-2") }),
      ),
    ).toBe(true);
  });

  it("peer URLs are shown without query, fragment or userinfo", () => {
    expect(shownUrl("https://user:pw@peer.example/.well-known/agent-card.json?token=s3cret#x")).toBe(
      "https://peer.example/.well-known/agent-card.json",
    );
    expect(
      firstProgress({
        key: KEY,
        agentCardUrl: `${CARD}?token=s3cret`,
        endpoint: "https://peer.example/a2a",
        messageId: "m",
        at: AT,
        task: peerTask("working"),
      }).agentCardUrl,
    ).toBe(CARD);
  });
});

describe("message ids", () => {
  it("are deterministic, UUID-shaped and distinct per seed", () => {
    const a = peerMessageId("run-1:call:1:send");
    expect(a).toBe(peerMessageId("run-1:call:1:send"));
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(peerMessageId("run-1:call:2:send")).not.toBe(a);
    expect(peerMessageId("run-2:call:1:send")).not.toBe(a);
  });
});

// ------------------------------------------------------------------------------------------- interrupts

describe("a peer's question as our interrupt", () => {
  const ids = { interruptId: "int-1", messageId: "status-1" };

  it("input-required → a clarification interrupt carrying the peer's message, tagged untrusted", () => {
    const task = peerTask("input-required", {
      statusMessage: peerMessage([
        { kind: "text", text: "Colour?" },
        { kind: "data", data: { action: "accept" } },
      ]),
    });
    const { interrupt, statusMessage } = buildPeerInterrupt(NODE, contextAt(), AT, ids, { agentCardUrl: CARD, task });
    expect(interrupt).toMatchObject({
      interruptId: "int-1",
      nodeId: "call",
      kind: "clarification",
      metadata: { source: "a2a.invoke", contentTrust: "untrusted" },
    });
    expect(interrupt.metadata).not.toHaveProperty("subkind");
    expect(interrupt.data).toMatchObject({
      questions: [{ id: "reply", question: "Colour?" }],
      contentTrust: "untrusted",
      peer: {
        taskId: "peer-task-1",
        state: "input-required",
        message: {
          parts: [
            { kind: "text", text: "Colour?" },
            { kind: "data", data: { action: "accept" } },
          ],
        },
      },
    });
    expect(statusMessage).toMatchObject({ messageId: "status-1", role: "agent", taskId: "run-1", contextId: "ctx-1" });
    expect(statusMessage.parts[0]).toMatchObject({ kind: "text" });
    expect((statusMessage.parts[0] as { text: string }).text).toContain("untrusted");

    // The machine projects it as waiting-input / input-required + clarification.
    const actor = createTaskActor({
      taskId: "run-1",
      contextId: "ctx-1",
      workflowId: WORKFLOW.id,
      tenant: "t",
      firstNode: "call",
      message: contextAt().history[0]!,
    });
    applyTaskEvent(actor, { type: "START", at: AT });
    applyTaskEvent(actor, { type: "NODE_STARTED", at: AT, nodeId: "call" });
    applyTaskEvent(actor, { type: "INTERRUPT", at: AT, interrupt, statusMessage });
    expect(runStatusOf(actor.getSnapshot())).toBe("waiting-input");
    expect(stateMetaOf(actor.getSnapshot())).toMatchObject({
      a2aState: "input-required",
      interruptKind: "clarification",
    });
  });

  it("auth-required → the same wait with metadata.subkind auth, in the interrupt and in its data", () => {
    const { interrupt, statusMessage } = buildPeerInterrupt(NODE, contextAt(), AT, ids, {
      agentCardUrl: CARD,
      task: peerTask("auth-required"),
      subkind: "auth",
    });
    expect(interrupt.metadata).toMatchObject({ subkind: "auth" });
    expect(interrupt.data["metadata"]).toMatchObject({ subkind: "auth" });
    expect((interrupt.data["questions"] as Array<{ question: string }>)[0]!.question).toContain("authentication");
    expect((statusMessage.parts[0] as { text: string }).text).toContain("needs authentication");
  });
});

describe("our caller's answer to a peer interrupt", () => {
  const asked = peerTask("input-required", { statusMessage: peerMessage([{ kind: "text", text: "Colour?" }]) });
  const context = contextAt({
    nodeStarted: false,
    nodeProgress: { call: progressFor(asked) as unknown as Record<string, unknown> },
  });
  const interrupt = buildPeerInterrupt(
    NODE,
    context,
    AT,
    { interruptId: "int-7", messageId: "s" },
    { agentCardUrl: CARD, task: asked },
  ).interrupt;
  const decision = { decidedBy: "alice", decidedAt: AT };

  it("a text reply becomes the single answer and is forwarded as text", () => {
    const value = resumeValueFromMessage(
      { messageId: "r", role: "user", parts: [{ kind: "text", text: " blue " }] },
      interrupt,
      WORKFLOW,
    );
    expect(value).toEqual({ answers: [{ id: "reply", answer: "blue" }] });
    expect(peerReplyParts(value)).toEqual([{ kind: "text", text: "blue" }]);
  });

  it('{"action":"accept"} is only content for the peer: the run resumes at the same node, never past an approval', () => {
    const outcome = interpretReply(WORKFLOW, context, interrupt, { action: "accept" }, decision);
    if (outcome.type !== "resume") throw new Error("expected resume");
    expect(outcome.next).toBe("call"); // the peer node again, to forward the answer; not the gate, not past it
    expect(outcome.thenFail).toBeUndefined();
    expect(outcome.output).toMatchObject({
      reply: { action: "accept" },
      answeredBy: "alice",
      forwardedTo: "peer-task-1",
    });
    const progress = outcome.progress as unknown as PeerProgress;
    expect(progress.pendingReply).toEqual({
      messageId: peerMessageId(`${KEY}:reply:int-7`),
      interruptId: "int-7",
      parts: [{ kind: "data", data: { action: "accept" } }],
    });
    expect(progress.answeredStatus).toBe(peerStatusOf(asked));
    expect(progress.peerTaskId).toBe("peer-task-1");
  });

  it("an empty reply is refused", () => {
    expect(() => interpretReply(WORKFLOW, context, interrupt, {}, decision)).toThrow(DomainError);
  });
});

describe("peerTaskToCancel", () => {
  const live = progressFor(peerTask("working")) as unknown as Record<string, unknown>;
  const target = (context: TaskContext) =>
    peerTaskToCancel(context, WORKFLOW, (nodeId) => idempotencyKeyOf(context, nodeId));

  it("names the live peer task of the cursor node", () => {
    expect(target(contextAt({ nodeProgress: { call: live } }))?.peerTaskId).toBe("peer-task-1");
  });

  it("not after a peer-side cancel, not for a terminal peer task, not for another visit, not off the node", () => {
    expect(target(contextAt({ nodeProgress: { call: live }, cancelReason: CROSS_PROTOCOL_CANCEL }))).toBeUndefined();
    expect(target(contextAt({ nodeProgress: { call: { ...live, peerState: "completed" } } }))).toBeUndefined();
    expect(target(contextAt({ nodeProgress: { call: live }, visits: { call: 1 } }))).toBeUndefined();
    expect(target(contextAt({ nodeProgress: { call: live }, cursor: "gate" }))).toBeUndefined();
  });
});

// ------------------------------------------------------------------------------------------- the runner

interface FakeCalls {
  discover: number;
  send: Message[];
  get: number;
  cancel: string[];
}

/** A scripted peer client: `replies` for send, `tasks` for successive getTask calls (the last repeats). */
function fakeClient(script: {
  send?: Array<PeerReply | PeerCallError>;
  tasks?: Array<PeerTask | PeerCallError>;
  discover?: Array<PeerCallError>;
}): { client: A2APeerClient; calls: FakeCalls } {
  const calls: FakeCalls = { discover: 0, send: [], get: 0, cancel: [] };
  const take = <T>(list: T[] | undefined, i: number): T | undefined =>
    list && list.length > 0 ? list[Math.min(i, list.length - 1)] : undefined;
  const client: A2APeerClient = {
    async discover() {
      const failure = script.discover?.[calls.discover];
      calls.discover += 1;
      if (failure) throw failure;
      return { endpoint: "https://peer.example/a2a" };
    },
    async send(_endpoint, message) {
      calls.send.push(message);
      const next = take(script.send, calls.send.length - 1);
      if (next instanceof PeerCallError) throw next;
      return next ?? { kind: "task", task: peerTask("submitted") };
    },
    async getTask() {
      const next = take(script.tasks, calls.get);
      calls.get += 1;
      if (next instanceof PeerCallError) throw next;
      return next ?? peerTask("working");
    },
    async cancelTask(_endpoint, taskId) {
      calls.cancel.push(taskId);
      return peerTask("canceled");
    },
    async close() {},
  };
  return { client, calls };
}

function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  return {
    logger: createLogger("info", stream),
    lines: () =>
      out
        .join("")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const FAST = { ...DEFAULT_A2A_INVOKE_SETTINGS, pollMs: 1, retryBaseMs: 1, retryMaxMs: 2, maxAttempts: 3 };

async function runNode(
  client: A2APeerClient,
  context: TaskContext,
  options: {
    record?: (p: PeerProgress) => boolean;
    node?: A2AInvokeNode;
    logger?: ReturnType<typeof createLogger>;
  } = {},
) {
  const recorded: PeerProgress[] = [];
  const runner = new A2AInvokeRunner(client, FAST, options.logger ?? createLogger("silent"));
  const outcome: InvokeOutcome = await runner.run({
    taskId: "run-1",
    node: options.node ?? NODE,
    context,
    signal: new AbortController().signal,
    record: async (p) => {
      recorded.push(structuredClone(p));
      return options.record ? options.record(p) : true;
    },
  });
  return { outcome, recorded };
}

describe("A2AInvokeRunner", () => {
  it("sends once with the deterministic messageId, the run's input and the skill, records the peer task at once, and completes", async () => {
    const { client, calls } = fakeClient({
      tasks: [
        peerTask("working"),
        peerTask("completed", { artifacts: [{ artifactId: "a", parts: [{ kind: "text", text: "x" }] }] }),
      ],
    });
    const { outcome, recorded } = await runNode(client, contextAt());
    expect(outcome).toMatchObject({ type: "complete", artifacts: [{ artifactId: "call.a" }] });
    expect(calls.send).toHaveLength(1);
    expect(calls.send[0]).toEqual({
      messageId: peerMessageId(`${KEY}:send`),
      role: "user",
      parts: [
        { kind: "text", text: "Find the numbers" },
        { kind: "data", data: { year: 2025 } },
      ],
      // The run's trace, always (no trace named by the creating message: one derived from the run id).
      metadata: { skillId: "research", openwop: { traceparent: expect.stringMatching(TRACE_OF_RUN) } },
    });
    expect(recorded.map((p) => p.peerState)).toEqual(["submitted", "working", "completed"]);
    expect(recorded[0]).toMatchObject({
      key: KEY,
      peerTaskId: "peer-task-1",
      endpoint: "https://peer.example/a2a",
      sentMessageId: peerMessageId(`${KEY}:send`),
    });
  });

  it("the node's `message` replaces the run's input", async () => {
    const { client, calls } = fakeClient({ tasks: [peerTask("completed")] });
    await runNode(client, contextAt(), { node: { ...NODE, message: "Summarize Q3" } });
    expect(calls.send[0]!.parts).toEqual([{ kind: "text", text: "Summarize Q3" }]);
  });

  it("with recorded progress (a restart) it reads the peer task and never sends", async () => {
    const { client, calls } = fakeClient({ tasks: [peerTask("completed")] });
    const { outcome } = await runNode(
      client,
      contextAt({ nodeProgress: { call: progressFor(peerTask("working")) as unknown as Record<string, unknown> } }),
    );
    expect(outcome.type).toBe("complete");
    expect(calls.discover).toBe(0);
    expect(calls.send).toEqual([]);
    expect(calls.get).toBe(1);
  });

  it("a pending reply already in the peer's history (forwarded before a restart) is not sent again", async () => {
    const asked = peerTask("input-required", { statusMessage: peerMessage([{ kind: "text", text: "Colour?" }]) });
    const reply = { messageId: "reply-1", interruptId: "int-1", parts: [{ kind: "text" as const, text: "blue" }] };
    const progress = progressFor(asked, { answeredStatus: peerStatusOf(asked), pendingReply: reply });
    const { client, calls } = fakeClient({
      tasks: [
        { ...asked, history: [{ messageId: "reply-1", role: "user", parts: reply.parts }] },
        peerTask("completed"),
      ],
    });
    const { outcome, recorded } = await runNode(
      client,
      contextAt({ nodeProgress: { call: progress as unknown as Record<string, unknown> } }),
    );
    expect(outcome.type).toBe("complete");
    expect(calls.send).toEqual([]);
    expect(recorded[0]!.pendingReply).toBeUndefined();
    expect(recorded[0]!.sentMessageId).toBe("reply-1");
  });

  it("a pending reply is forwarded once (with the peer's task and context ids) while the peer still waits for it", async () => {
    const asked = peerTask("input-required", { statusMessage: peerMessage([{ kind: "text", text: "Colour?" }]) });
    const reply = { messageId: "reply-1", interruptId: "int-1", parts: [{ kind: "text" as const, text: "blue" }] };
    const progress = progressFor(asked, { answeredStatus: peerStatusOf(asked), pendingReply: reply });
    // The peer first still shows the question we answered (not a new one), then completes.
    const { client, calls } = fakeClient({
      send: [{ kind: "task", task: asked }],
      tasks: [asked, asked, peerTask("completed")],
    });
    const { outcome } = await runNode(
      client,
      contextAt({ nodeProgress: { call: progress as unknown as Record<string, unknown> } }),
    );
    expect(outcome.type).toBe("complete");
    expect(calls.send).toEqual([
      {
        messageId: "reply-1",
        role: "user",
        parts: reply.parts,
        taskId: "peer-task-1",
        contextId: "peer-ctx-1",
        metadata: { openwop: { traceparent: expect.stringMatching(TRACE_OF_RUN) } },
      },
    ]);
  });

  it("a pending reply is dropped (not sent) when the peer has moved on", async () => {
    const asked = peerTask("input-required");
    const progress = progressFor(asked, {
      answeredStatus: peerStatusOf(asked),
      pendingReply: { messageId: "reply-1", interruptId: "int-1", parts: [] },
    });
    const { client, calls } = fakeClient({ tasks: [peerTask("canceled")] });
    const { outcome } = await runNode(
      client,
      contextAt({ nodeProgress: { call: progress as unknown as Record<string, unknown> } }),
    );
    expect(outcome).toEqual({ type: "cancel", agentCardUrl: CARD });
    expect(calls.send).toEqual([]);
  });

  it("when the run stopped while the first send was in flight, the unrecorded peer task is cancelled (best effort)", async () => {
    const { client, calls } = fakeClient({});
    const { outcome } = await runNode(client, contextAt(), { record: () => false });
    expect(outcome).toEqual({ type: "stopped" });
    expect(calls.cancel).toEqual(["peer-task-1"]);
  });

  it("an unknown peer state is waited out with a logged warning", async () => {
    const { logger, lines } = capturingLogger();
    const { client } = fakeClient({ tasks: [peerTask("unknown"), peerTask("unknown"), peerTask("completed")] });
    const { outcome, recorded } = await runNode(client, contextAt(), { logger });
    expect(outcome.type).toBe("complete");
    expect(recorded.map((p) => p.peerState)).toEqual(["submitted", "unknown", "completed"]);
    const warnings = lines().filter((l) => l["level"] === 40 && String(l["msg"]).includes("unknown state"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      peerState: "unknown",
      peerTaskId: "peer-task-1",
      taskId: "run-1",
      nodeId: "call",
    });
  });

  it("retries retryable transport errors, then fails with external_call_failed once the attempts run out", async () => {
    const down = new PeerCallError("cannot reach https://peer.example (ECONNREFUSED)", "connection", true);
    const recovering = fakeClient({ discover: [down, down], tasks: [peerTask("completed")] });
    expect((await runNode(recovering.client, contextAt())).outcome.type).toBe("complete");
    expect(recovering.calls.discover).toBe(3);

    const dead = fakeClient({ discover: [down, down, down, down] });
    const { outcome } = await runNode(dead.client, contextAt());
    expect(dead.calls.discover).toBe(3);
    expect(outcome).toMatchObject({ type: "fail", error: { code: "external_call_failed", nodeId: "call" } });
    if (outcome.type !== "fail") throw new Error("unreachable");
    expect(outcome.error.message).toContain(
      "reading the agent card failed 3 times; last error: cannot reach https://peer.example (ECONNREFUSED)",
    );
  });

  it("a non-retryable answer (a JSON-RPC error) fails at once", async () => {
    const gone = new PeerCallError(
      "the remote agent answered tasks/get with JSON-RPC error -32001 (Task not found)",
      "rpc",
      false,
      -32001,
    );
    const { client, calls } = fakeClient({ tasks: [gone] });
    const { outcome } = await runNode(
      client,
      contextAt({ nodeProgress: { call: progressFor(peerTask("working")) as unknown as Record<string, unknown> } }),
    );
    expect(calls.get).toBe(1);
    expect(outcome).toMatchObject({ type: "fail", error: { code: "external_call_failed" } });
  });

  it("an unset ${VARIABLE} or a missing client fails the node with a clear external_call_failed", async () => {
    const { client } = fakeClient({});
    const unset = await runNode(client, contextAt(), { node: { ...NODE, agentCardUrl: "${A2A_PEER_CARD_URL}" } });
    expect(unset.outcome).toMatchObject({ type: "fail", error: { code: "external_call_failed" } });
    if (unset.outcome.type !== "fail") throw new Error("unreachable");
    expect(unset.outcome.error.message).toContain("A2A_PEER_CARD_URL, which is not set");
    const none = await new A2AInvokeRunner(undefined, FAST, createLogger("silent")).run({
      taskId: "run-1",
      node: NODE,
      context: contextAt(),
      signal: new AbortController().signal,
      record: async () => true,
    });
    expect(none).toMatchObject({
      type: "fail",
      error: { code: "external_call_failed", message: "this host has no A2A client configured" },
    });
  });
});

// ------------------------------------------------------------------------------------------- the wire

describe("agent card interface choice (1.0 preferred, 0.3 only when nothing newer; pins never downgrade)", () => {
  const chosen = (card: unknown, pin: Parameters<typeof peerEndpointOf>[3] = {}) =>
    formatPeerEndpoint(peerEndpointOf(card, CARD, peerVersions(), pin));

  it("uses the 0.3 url/preferredTransport of a 0.3 card, whatever its binding", () => {
    expect(
      peerEndpointOf(
        { name: "P", url: "https://p.example/rpc", preferredTransport: "JSONRPC", protocolVersion: "0.3.0" },
        CARD,
        peerVersions(),
      ),
    ).toEqual({ binding: "jsonrpc", version: "0.3", url: "https://p.example/rpc" });
    const grpcFirst = {
      url: "p.example:443",
      preferredTransport: "GRPC",
      protocolVersion: "0.3",
      additionalInterfaces: [
        { url: "p.example:443", transport: "GRPC" },
        { url: "https://p.example/jsonrpc", transport: "JSONRPC" },
      ],
    };
    expect(chosen(grpcFirst)).toBe("grpc+0.3+https://p.example/");
    const restFirst = {
      url: "https://p.example",
      preferredTransport: "HTTP+JSON",
      protocolVersion: "0.3",
      additionalInterfaces: [{ url: "https://p.example/jsonrpc", transport: "JSONRPC" }],
    };
    expect(chosen(restFirst)).toBe("http+json+0.3+https://p.example/");
  });

  it("prefers a 1.0 interface over a 0.3 one, in the card's order; resolves relative urls against the card", () => {
    const card = {
      url: "https://p.example/legacy",
      protocolVersion: "0.3.0",
      supportedInterfaces: [
        { url: "/a2a/v1", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url: "/a2a/legacy", protocolBinding: "JSONRPC", protocolVersion: "0.3" },
      ],
    };
    expect(chosen(card)).toBe("jsonrpc+1.0+https://peer.example/a2a/v1");
    const grpcFirst = {
      supportedInterfaces: [
        { url: "p.example:9000", protocolBinding: "GRPC", protocolVersion: "0.3" },
        { url: "p.example:9000", protocolBinding: "GRPC", protocolVersion: "1.0", tenant: "acme" },
      ],
    };
    expect(chosen(grpcFirst)).toBe("grpc+1.0+https://p.example:9000/#tenant=acme");
    expect(parsePeerEndpoint(chosen(grpcFirst))).toEqual({
      binding: "grpc",
      version: "1.0",
      url: "https://p.example:9000/",
      tenant: "acme",
    });
  });

  it("a pinned binding keeps the version preference within it; a pinned version or binding the peer does not offer is refused, naming what it offers", () => {
    const card = {
      supportedInterfaces: [
        { url: "/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url: "p.example:9000", protocolBinding: "GRPC", protocolVersion: "0.3" },
      ],
    };
    expect(chosen(card, { binding: "grpc" })).toBe("grpc+0.3+https://p.example:9000/");
    expect(chosen(card, { protocolVersion: "0.3" })).toBe("grpc+0.3+https://p.example:9000/");
    let thrown: unknown;
    try {
      chosen(card, { binding: "http+json" });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PeerCallError);
    expect((thrown as PeerCallError).retryable).toBe(false);
    expect((thrown as PeerCallError).message).toBe(
      "the remote agent does not offer binding HTTP+JSON, which this peer is pinned to (its card offers: JSONRPC 1.0, GRPC 0.3)",
    );
    expect(() =>
      chosen({ url: "https://p.example/rpc", protocolVersion: "0.3.0" }, { protocolVersion: "1.0" }),
    ).toThrow("does not offer A2A 1.0, which this peer is pinned to (its card offers: JSONRPC 0.3.0)");
  });

  it("refuses a card with nothing we speak, and a url that is not http(s)", () => {
    expect(() =>
      chosen({
        supportedInterfaces: [
          { url: "https://p.example", protocolBinding: "SLIMRPC", protocolVersion: "1.0" },
          { url: "https://p.example", protocolBinding: "JSONRPC", protocolVersion: "2.0" },
        ],
      }),
    ).toThrow(
      "offers no A2A 1.0 or 0.3 interface over JSON-RPC, gRPC or HTTP+JSON (its card offers: SLIMRPC 1.0, JSONRPC 2.0)",
    );
    expect(() =>
      peerEndpointOf({ url: "grpc+https://p.example", preferredTransport: "JSONRPC" }, CARD, peerVersions()),
    ).toThrow(/not an http\(s\) URL/);
  });

  it("recorded endpoints: today's names version and binding; those of an older host read as 0.3", () => {
    expect(parsePeerEndpoint("https://p.example/a2a/jsonrpc")).toEqual({
      binding: "jsonrpc",
      version: "0.3",
      url: "https://p.example/a2a/jsonrpc",
    });
    expect(parsePeerEndpoint("grpc+https://p.example:8443")).toEqual({
      binding: "grpc",
      version: "0.3",
      url: "https://p.example:8443/",
    });
    expect(parsePeerEndpoint("http+json+1.0+https://p.example/base")).toEqual({
      binding: "http+json",
      version: "1.0",
      url: "https://p.example/base",
    });
    expect(() => parsePeerEndpoint("jsonrpc+2.0+https://p.example")).toThrow(PeerCallError);
    expect(shownEndpoint("jsonrpc+1.0+https://p.example/a2a?k=v#tenant=t")).toBe("jsonrpc+1.0+https://p.example/a2a");
  });

  it("an API key's header comes from the card's apiKey scheme, 0.3 or 1.0 shape; only header keys", () => {
    expect(
      apiKeyHeaderOf({ securitySchemes: { k: { type: "apiKey", in: "header", name: "X-Key" } } }, peerVersions()),
    ).toBe("X-Key");
    expect(
      apiKeyHeaderOf(
        {
          securitySchemes: {
            b: { httpAuthSecurityScheme: { scheme: "bearer" } },
            k: { apiKeySecurityScheme: { location: "header", name: "X-Api-Key" } },
          },
        },
        peerVersions(),
      ),
    ).toBe("X-Api-Key");
    expect(() =>
      apiKeyHeaderOf({ securitySchemes: { k: { type: "apiKey", in: "query", name: "key" } } }, peerVersions()),
    ).toThrow(/not take the key in a header/);
    expect(() => apiKeyHeaderOf({ securitySchemes: {} }, peerVersions())).toThrow(/declares no apiKey security scheme/);
  });

  it("gRPC targets: bare host:port takes the card's scheme; URLs say TLS (https, grpcs) or h2c (http, grpc); paths are dropped", () => {
    expect(grpcEndpointOf("p.example:50051", CARD)).toBe("grpc+0.3+https://p.example:50051/");
    expect(grpcEndpointOf("127.0.0.1:50051", "http://127.0.0.1:8080/.well-known/agent-card.json", "1.0")).toBe(
      "grpc+1.0+http://127.0.0.1:50051/",
    );
    expect(grpcOriginOf("[::1]:50051", "http://[::1]:8080/card")).toBe("http://[::1]:50051");
    expect(grpcOriginOf("p.example", CARD)).toBe("https://p.example");
    expect(grpcOriginOf("https://p.example:8443/a2a", CARD)).toBe("https://p.example:8443");
    expect(grpcOriginOf("grpcs://p.example:443", CARD)).toBe("https://p.example");
    expect(grpcOriginOf("grpc://127.0.0.1:5000", CARD)).toBe("http://127.0.0.1:5000");
    expect(grpcOriginOf("http://p.example:5000", CARD)).toBe("http://p.example:5000");
    for (const bad of [
      "",
      "dns:///p.example:443",
      "ftp://p.example",
      "p.example:443/path",
      "user@p.example:443",
      "https://user:pw@p.example",
      "p.example:99999",
    ]) {
      expect(() => grpcOriginOf(bad, CARD), bad).toThrow(PeerCallError);
    }
  });

  it("parsePeerTask keeps what it understands and refuses a task without id/contextId/state", () => {
    const task = parsePeerTask({
      kind: "task",
      id: "t",
      contextId: "c",
      status: {
        state: "completed",
        message: {
          kind: "message",
          messageId: "m",
          role: "agent",
          parts: [{ kind: "text", text: "ok" }, { kind: "weird" }],
        },
      },
      artifacts: [
        {
          artifactId: "a",
          parts: [{ kind: "file", file: { uri: "https://f.example/x.pdf", mimeType: "application/pdf" } }],
        },
      ],
    });
    expect(task.statusMessage?.parts).toEqual([{ kind: "text", text: "ok" }]);
    expect(task.artifacts[0]!.parts).toEqual([
      { kind: "file", file: { uri: "https://f.example/x.pdf", mimeType: "application/pdf" } },
    ]);
    expect(() => parsePeerTask({ id: "t", status: {} })).toThrow(PeerCallError);
  });

  it("peerTaskFromProto reads a peer's a2a.v1 Task like parsePeerTask reads JSON: unknown states wait, undecodable parts are dropped", () => {
    const task = peerTaskFromProto(
      create(pb.TaskSchema, {
        id: "t",
        contextId: "c",
        status: create(pb.TaskStatusSchema, {
          state: pb.TaskState.INPUT_REQUIRED,
          update: create(pb.MessageSchema, {
            messageId: "m",
            role: pb.Role.AGENT,
            content: [create(pb.PartSchema, { part: { case: "text", value: "which?" } }), create(pb.PartSchema, {})],
          }),
          timestamp: timestampFromDate(new Date(AT)),
        }),
        artifacts: [
          create(pb.ArtifactSchema, {
            artifactId: "",
            name: "r",
            parts: [
              create(pb.PartSchema, { part: { case: "data", value: create(pb.DataPartSchema, { data: { n: 1 } }) } }),
            ],
            metadata: { x: true },
          }),
        ],
        history: [
          create(pb.MessageSchema, { messageId: "", role: pb.Role.USER }),
          create(pb.MessageSchema, {
            messageId: "u1",
            role: pb.Role.USER,
            content: [create(pb.PartSchema, { part: { case: "text", value: "hi" } })],
          }),
        ],
      }),
    );
    expect(task).toEqual({
      id: "t",
      contextId: "c",
      state: "input-required",
      statusMessage: { messageId: "m", role: "agent", parts: [{ kind: "text", text: "which?" }] },
      statusTimestamp: AT,
      artifacts: [
        { artifactId: "artifact-0", name: "r", parts: [{ kind: "data", data: { n: 1 } }], metadata: { x: true } },
      ],
      history: [{ messageId: "u1", role: "user", parts: [{ kind: "text", text: "hi" }] }],
    });
    expect(
      peerTaskFromProto(
        create(pb.TaskSchema, { id: "t", status: create(pb.TaskStatusSchema, { state: pb.TaskState.UNSPECIFIED }) }),
      ).state,
    ).toBe("unknown");
    expect(() => peerTaskFromProto(create(pb.TaskSchema, { id: "t" }))).toThrow(PeerCallError);
    expect(() =>
      peerTaskFromProto(
        create(pb.TaskSchema, { status: create(pb.TaskStatusSchema, { state: pb.TaskState.COMPLETED }) }),
      ),
    ).toThrow(PeerCallError);
  });

  it("gRPC statuses map to the JSON-RPC client's retry decisions", () => {
    const ctx = { method: "GetTask", where: "grpc+https://p.example", timeoutMs: 100 };
    const decide = (code: Code, cause?: unknown) => {
      const err = grpcCallError(new ConnectError("peer said so", code, undefined, undefined, cause), ctx);
      return [err.kind, err.retryable];
    };
    for (const code of [Code.Unavailable, Code.ResourceExhausted, Code.Internal])
      expect(decide(code), Code[code]).toEqual(["rpc", true]);
    expect(decide(Code.DeadlineExceeded)).toEqual(["timeout", true]);
    for (const code of [Code.NotFound, Code.InvalidArgument, Code.FailedPrecondition, Code.Unimplemented]) {
      expect(decide(code), Code[code]).toEqual(["rpc", false]);
    }
    // Refused credentials say so, and are never retried.
    for (const code of [Code.PermissionDenied, Code.Unauthenticated])
      expect(decide(code), Code[code]).toEqual(["unauthorized", false]);
    expect(grpcCallError(new ConnectError("no key", Code.Unauthenticated), ctx).message).toContain(
      "the credentials for this peer are missing or wrong",
    );
    const refused = Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:443"), { code: "ECONNREFUSED" });
    const unreachable = grpcCallError(
      new ConnectError("connect ECONNREFUSED", Code.Unavailable, undefined, undefined, refused),
      ctx,
    );
    expect(unreachable).toMatchObject({
      kind: "connection",
      retryable: true,
      message: "cannot reach grpc+https://p.example (ECONNREFUSED)",
    });
    const notFound = grpcCallError(new ConnectError("Task not found: t", Code.NotFound), ctx);
    expect(notFound).toMatchObject({
      retryable: false,
      rpcCode: Code.NotFound,
      message: "the remote agent answered GetTask with gRPC status NOT_FOUND (Task not found: t)",
    });
    const tooBig = grpcCallError(
      new ConnectError("message size is larger than configured readMaxBytes 4194304", Code.ResourceExhausted),
      ctx,
    );
    expect(tooBig).toMatchObject({ kind: "protocol", retryable: false });
    const abandoned = new AbortController();
    abandoned.abort();
    expect(
      grpcCallError(new ConnectError("aborted", Code.Canceled), { ...ctx, callerSignal: abandoned.signal }),
    ).toMatchObject({ kind: "aborted", retryable: false });
  });
});

describe("configuration and loading", () => {
  const definition = (agentCardUrl: string) => ({
    id: "p",
    name: "P",
    description: "x",
    nodes: [{ kind: "a2a.invoke", id: "call", agentCardUrl }],
  });

  it("${A2A_PEER_CARD_URL} is expanded at load time when configured, and kept (the node then fails) when not", () => {
    const expanded = checkWorkflow(definition("${A2A_PEER_CARD_URL}"), builtinHandlers, { A2A_PEER_CARD_URL: CARD });
    expect((expanded.nodes[0] as A2AInvokeNode).agentCardUrl).toBe(CARD);
    const unset = checkWorkflow(definition("${A2A_PEER_CARD_URL}"), builtinHandlers, {});
    expect((unset.nodes[0] as A2AInvokeNode).agentCardUrl).toBe("${A2A_PEER_CARD_URL}");
    expect(() => checkWorkflow(definition("${SECRET_TOKEN}"), builtinHandlers, {})).toThrow(WorkflowLoadError);
    expect(() =>
      checkWorkflow(definition("${A2A_PEER_CARD_URL}"), builtinHandlers, { A2A_PEER_CARD_URL: "no url" }),
    ).toThrow(/agentCardUrl/);
  });

  it("A2A_PEER_* settings: defaults, the loopback allowance is test-only, bad values are refused", () => {
    const defaults = loadPeerSettings({}, false);
    if (typeof defaults === "string") throw new Error(defaults);
    expect(defaults.egress).toEqual({
      allowHttpLoopback: false,
      allowedPorts: [],
      allowHosts: [],
      denyHosts: [],
      settings: { allowedPorts: "A2A_PEER_ALLOWED_PORTS" },
    });
    expect(defaults.cardUrl).toBeUndefined();
    const test = loadPeerSettings(
      { A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true", A2A_PEER_CARD_URL: CARD, A2A_PEER_ALLOWED_PORTS: "8443" },
      false,
    );
    if (typeof test === "string") throw new Error(test);
    expect(test.egress).toMatchObject({ allowHttpLoopback: true, allowedPorts: [8443] });
    expect(test.cardUrl).toBe(CARD);
    expect(loadPeerSettings({ A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true" }, true)).toContain(
      "refused when NODE_ENV=production",
    );
    expect(loadPeerSettings({ A2A_PEER_CARD_URL: "ftp://x" }, false)).toContain("A2A_PEER_CARD_URL");
    expect(loadPeerSettings({ A2A_PEER_MAX_ATTEMPTS: "0" }, false)).toContain("A2A_PEER_MAX_ATTEMPTS");
    expect(idempotencyKeyOf(contextAt(), "call")).toBe(KEY);
  });
});
