// The XState task machine: the A2A projection each state declares, the full state × event table (legal
// events move to the expected state, illegal ones are refused by applyTaskEvent and change nothing), the
// guards, what each event does to the context, and the persisted-snapshot round trip.
//
// The expected values below are written from the issue text (openwop-facts §1 difference 3, §2), not
// read from the machine: the machine is what is being checked.
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import type { Artifact, Message } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import {
  RUN_STATUSES,
  type A2ATaskStateValue,
  type InterruptKind,
  type RunStatus,
} from "../../src/domain/run-status.js";
import { applyTaskEvent, createTaskActor, restoreTaskActor, type TaskActor } from "../../src/machine/task-actor.js";
import type { DurableTimer, PendingInterrupt, TaskContext } from "../../src/machine/task-context.js";
import { TASK_EVENT_TYPES, type TaskEvent, type TaskEventType } from "../../src/machine/task-events.js";
import { taskMachine, type TaskMachineInput } from "../../src/machine/task-machine.js";
import { declaredMetaOf, runStatusOf, stateMetaOf } from "../../src/machine/task-projection.js";

// ------------------------------------------------------------------------------------------ helpers

const T0 = Date.parse("2026-03-01T10:00:00.000Z");
let tick = 0;
/** A fresh, strictly increasing commit time for each event. */
function at(): string {
  tick += 1;
  return new Date(T0 + tick * 1000).toISOString();
}

function userMessage(id: string, text: string): Message {
  return { messageId: id, role: "user", parts: [{ kind: "text", text }], taskId: "task-1", contextId: "ctx-1" };
}

function agentMessage(id: string, text: string): Message {
  return { messageId: id, role: "agent", parts: [{ kind: "text", text }], taskId: "task-1", contextId: "ctx-1" };
}

function textArtifact(artifactId: string, text: string): Artifact {
  return { artifactId, name: artifactId, parts: [{ kind: "text", text }] };
}

const INPUT: TaskMachineInput = {
  taskId: "task-1",
  contextId: "ctx-1",
  workflowId: "approval-gate",
  tenant: "tenant-a",
  firstNode: "prepare",
  message: userMessage("m-first", "Send the quarterly report"),
};

function newActor(input: TaskMachineInput = INPUT): TaskActor {
  return createTaskActor(input);
}

function statusOf(actor: TaskActor): RunStatus {
  return runStatusOf(actor.getSnapshot());
}

function interruptFor(nodeId: string, kind: InterruptKind, expiresAt?: string): PendingInterrupt {
  return {
    interruptId: `int-${nodeId}-${kind}`,
    nodeId,
    kind,
    data:
      kind === "clarification"
        ? { questions: [{ id: "q", question: "Who?" }] }
        : { title: "Approve", actions: ["accept", "reject"] },
    requestedAt: at(),
    ...(expiresAt ? { expiresAt } : {}),
    exchanges: [],
  };
}

/** Well-formed events; node ids are taken from the context so that only the state decides legality. */
const ev = {
  start: (): TaskEvent => ({ type: "START", at: at() }),
  nodeStarted: (nodeId: string): TaskEvent => ({ type: "NODE_STARTED", at: at(), nodeId }),
  nodeCompleted: (
    nodeId: string,
    next: string | null,
    artifacts: Artifact[] = [],
    output: unknown = { ok: nodeId },
  ): TaskEvent => ({
    type: "NODE_COMPLETED",
    at: at(),
    nodeId,
    output,
    artifacts,
    next,
  }),
  nodeProgress: (
    nodeId: string,
    progress: Record<string, unknown> = { peerTaskId: "peer-1", peerState: "working" },
  ): TaskEvent => ({
    type: "NODE_PROGRESS",
    at: at(),
    nodeId,
    progress,
  }),
  artifactChunk: (nodeId: string, text: string, append: boolean, lastChunk = false): TaskEvent => ({
    type: "ARTIFACT_CHUNK",
    at: at(),
    nodeId,
    artifact: { artifactId: `${nodeId}.stream`, name: "stream", parts: [{ kind: "text", text }] },
    append,
    lastChunk,
  }),
  timerSet: (timer: DurableTimer): TaskEvent => ({ type: "TIMER_SET", at: at(), timer }),
  interrupt: (
    nodeId: string,
    kind: InterruptKind,
    options: { timer?: DurableTimer; expiresAt?: string; messageId?: string } = {},
  ): TaskEvent => ({
    type: "INTERRUPT",
    at: at(),
    interrupt: interruptFor(nodeId, kind, options.expiresAt),
    statusMessage: agentMessage(options.messageId ?? `status-${nodeId}-${kind}`, `Waiting at ${nodeId}`),
    ...(options.timer ? { timer: options.timer } : {}),
  }),
  resume: (
    nodeId: string,
    next: string | null,
    options: {
      message?: Message;
      artifacts?: Artifact[];
      output?: unknown;
      resumeValue?: Record<string, unknown>;
      fail?: { code: string; message: string; nodeId?: string };
      statusMessage?: Message;
    } = {},
  ): TaskEvent => ({
    type: "RESUME",
    at: at(),
    nodeId,
    resumeValue: options.resumeValue ?? { action: "accept" },
    resolvedBy: "alice",
    next,
    output: options.output ?? { action: "accept", decidedBy: "alice" },
    ...(options.message ? { message: options.message } : {}),
    ...(options.artifacts ? { artifacts: options.artifacts } : {}),
    ...(options.fail ? { fail: options.fail } : {}),
    ...(options.statusMessage ? { statusMessage: options.statusMessage } : {}),
  }),
  ask: (question: string, message?: Message): TaskEvent => ({
    type: "ASK",
    at: at(),
    question,
    askedBy: "bob",
    statusMessage: agentMessage(`ask-status-${tick}`, "Question recorded"),
    ...(message ? { message } : {}),
  }),
  pause: (): TaskEvent => ({
    type: "PAUSE",
    at: at(),
    by: "op",
    drainPolicy: "drain-current-node",
    statusMessage: { messageId: "p", role: "agent", parts: [{ kind: "text", text: "Paused" }] },
  }),
  unpause: (): TaskEvent => ({ type: "UNPAUSE", at: at(), by: "op" }),
  cancel: (reason = "user asked"): TaskEvent => ({ type: "CANCEL", at: at(), reason, cancelledBy: "carol" }),
  cancelled: (): TaskEvent => ({ type: "CANCELLED", at: at() }),
  complete: (statusMessage?: Message): TaskEvent => ({
    type: "COMPLETE",
    at: at(),
    ...(statusMessage ? { statusMessage } : {}),
  }),
  fail: (code = "handler_failed", statusMessage?: Message): TaskEvent => ({
    type: "FAIL",
    at: at(),
    error: { code, message: `failed with ${code}`, nodeId: "prepare" },
    ...(statusMessage ? { statusMessage } : {}),
  }),
};

/**
 * One well-formed event per event type (three for INTERRUPT, one per interrupt kind; two for RESUME, plain
 * and with `fail`), built from the current context: NODE_* name the cursor, RESUME names the pending
 * interrupt's node.
 */
interface EventVariant {
  label: string;
  type: TaskEventType;
  build: (context: TaskContext) => TaskEvent;
}

const cursorOf = (c: TaskContext): string => c.cursor ?? "prepare";

const VARIANTS: EventVariant[] = [
  { label: "START", type: "START", build: () => ev.start() },
  { label: "NODE_STARTED", type: "NODE_STARTED", build: (c) => ev.nodeStarted(cursorOf(c)) },
  { label: "NODE_COMPLETED", type: "NODE_COMPLETED", build: (c) => ev.nodeCompleted(cursorOf(c), "gate") },
  {
    label: "NODE_INTERRUPTED",
    type: "NODE_INTERRUPTED",
    build: (c) => ({ type: "NODE_INTERRUPTED", at: at(), nodeId: cursorOf(c) }),
  },
  { label: "NODE_PROGRESS", type: "NODE_PROGRESS", build: (c) => ev.nodeProgress(cursorOf(c)) },
  { label: "ARTIFACT_CHUNK", type: "ARTIFACT_CHUNK", build: (c) => ev.artifactChunk(cursorOf(c), "a", false) },
  {
    label: "TIMER_SET",
    type: "TIMER_SET",
    build: (c) => ev.timerSet({ nodeId: cursorOf(c), purpose: "delay", dueAt: new Date(T0 + 3_600_000).toISOString() }),
  },
  { label: "INTERRUPT:approval", type: "INTERRUPT", build: (c) => ev.interrupt(cursorOf(c), "approval") },
  { label: "INTERRUPT:clarification", type: "INTERRUPT", build: (c) => ev.interrupt(cursorOf(c), "clarification") },
  { label: "INTERRUPT:external-event", type: "INTERRUPT", build: (c) => ev.interrupt(cursorOf(c), "external-event") },
  { label: "RESUME", type: "RESUME", build: (c) => ev.resume(c.interrupt?.nodeId ?? cursorOf(c), "finalize") },
  {
    // A decision that ends the run (reject without a goto, timeout): resolved and failed in one event.
    label: "RESUME+fail",
    type: "RESUME",
    build: (c) =>
      ev.resume(c.interrupt?.nodeId ?? cursorOf(c), null, {
        output: { action: "reject", decidedBy: "alice" },
        fail: {
          code: "approval_rejected",
          message: "rejected at approval gate",
          nodeId: c.interrupt?.nodeId ?? cursorOf(c),
        },
      }),
  },
  { label: "ASK", type: "ASK", build: () => ev.ask("Why this budget?") },
  { label: "PAUSE", type: "PAUSE", build: () => ev.pause() },
  { label: "UNPAUSE", type: "UNPAUSE", build: () => ev.unpause() },
  {
    label: "RETRY",
    type: "RETRY",
    build: (c) => ({ type: "RETRY", at: at(), by: "op", nodeId: c.error?.nodeId ?? "x" }),
  },
  { label: "RESTART", type: "RESTART", build: (c) => ({ type: "RESTART", at: at(), by: "op", nodeId: cursorOf(c) }) },
  {
    label: "MOVE",
    type: "MOVE",
    build: (c) => ({ type: "MOVE", at: at(), by: "op", fromVersion: "1", toVersion: "2", nodeId: cursorOf(c) }),
  },
  {
    label: "BLOCK",
    type: "BLOCK",
    build: (c) => ({ type: "BLOCK", at: at(), nodeId: cursorOf(c), reason: "handler gone", instance: "i-1" }),
  },
  { label: "CANCEL", type: "CANCEL", build: () => ev.cancel() },
  { label: "CANCELLED", type: "CANCELLED", build: () => ev.cancelled() },
  { label: "COMPLETE", type: "COMPLETE", build: () => ev.complete() },
  { label: "FAIL", type: "FAIL", build: () => ev.fail() },
];

const variant = (label: string): EventVariant => {
  const found = VARIANTS.find((v) => v.label === label);
  if (!found) throw new Error(`no event variant ${label}`);
  return found;
};

/** Legal event sequences that reach each state from a fresh actor. */
const PATHS: Record<RunStatus, string[]> = {
  pending: [],
  running: ["START", "NODE_STARTED"],
  paused: ["START", "NODE_STARTED", "PAUSE"],
  "waiting-approval": ["START", "INTERRUPT:approval"],
  "waiting-input": ["START", "INTERRUPT:clarification"],
  "waiting-external": ["START", "INTERRUPT:external-event"],
  cancelling: ["START", "NODE_STARTED", "CANCEL"],
  completed: ["START", "NODE_STARTED", "NODE_COMPLETED", "COMPLETE"],
  failed: ["START", "NODE_STARTED", "FAIL"],
  cancelled: ["START", "CANCEL", "CANCELLED"],
};

function driveTo(status: RunStatus): TaskActor {
  const actor = newActor();
  for (const label of PATHS[status]) applyTaskEvent(actor, variant(label).build(actor.getSnapshot().context));
  expect(statusOf(actor), `path to ${status}`).toBe(status);
  return actor;
}

/** The error applyTaskEvent throws (fails the test if it does not throw). */
function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error("expected applyTaskEvent to refuse the event, but it was accepted");
}

/** Asserts the event is refused as unsupported-operation and the actor is left exactly as it was. */
function expectRefused(actor: TaskActor, event: TaskEvent): DomainError {
  const snapshotBefore = actor.getSnapshot();
  const valueBefore = snapshotBefore.value;
  const contextBefore = structuredClone(snapshotBefore.context);
  const error = refusal(() => applyTaskEvent(actor, event));
  expect(error.code).toBe("unsupported-operation");
  expect(error.details).toMatchObject({ status: valueBefore, event: event.type });
  expect(actor.getSnapshot()).toBe(snapshotBefore);
  expect(actor.getSnapshot().value).toBe(valueBefore);
  expect(actor.getSnapshot().context).toEqual(contextBefore);
  return error;
}

// ------------------------------------------------------------------------------ the issue's tables

/** Forward projection (openwop-facts §1 difference 3 / a2a-integration §D.4). */
const PROJECTION: Record<
  RunStatus,
  { a2aState: A2ATaskStateValue; interruptKind?: "approval" | "clarification"; terminal: boolean }
> = {
  pending: { a2aState: "submitted", terminal: false },
  running: { a2aState: "working", terminal: false },
  paused: { a2aState: "working", terminal: false },
  cancelling: { a2aState: "working", terminal: false },
  "waiting-approval": { a2aState: "input-required", interruptKind: "approval", terminal: false },
  "waiting-input": { a2aState: "input-required", interruptKind: "clarification", terminal: false },
  "waiting-external": { a2aState: "input-required", terminal: false },
  completed: { a2aState: "completed", terminal: true },
  failed: { a2aState: "failed", terminal: true },
  cancelled: { a2aState: "canceled", terminal: true },
};

const FROM_WAITING = {
  RESUME: "running",
  "RESUME+fail": "failed",
  CANCEL: "cancelling",
  FAIL: "failed",
  PAUSE: "paused",
  RESTART: "running",
  MOVE: "running",
} as const;

/** The legal transitions (target state per event variant); every other (state, event) pair is illegal. */
const TRANSITIONS: Record<RunStatus, Partial<Record<string, RunStatus>>> = {
  pending: { START: "running", CANCEL: "cancelling", PAUSE: "paused" },
  running: {
    NODE_STARTED: "running",
    NODE_COMPLETED: "running",
    NODE_INTERRUPTED: "running",
    NODE_PROGRESS: "running",
    ARTIFACT_CHUNK: "running",
    TIMER_SET: "running",
    BLOCK: "running",
    "INTERRUPT:approval": "waiting-approval",
    "INTERRUPT:clarification": "waiting-input",
    "INTERRUPT:external-event": "waiting-external",
    PAUSE: "paused",
    CANCEL: "cancelling",
    COMPLETE: "completed",
    FAIL: "failed",
  },
  // Paused while a node ran (drain-current-node): that node's outcome is still recorded, and the task stays paused.
  paused: {
    UNPAUSE: "running",
    CANCEL: "cancelling",
    NODE_COMPLETED: "paused",
    NODE_PROGRESS: "paused",
    ARTIFACT_CHUNK: "paused",
    "INTERRUPT:approval": "paused",
    "INTERRUPT:clarification": "paused",
    "INTERRUPT:external-event": "paused",
    FAIL: "failed",
    RESTART: "paused",
    // MOVE only once no node drains (the paths here pause a running node): refused.
  },
  "waiting-approval": { ...FROM_WAITING, ASK: "waiting-approval" },
  "waiting-input": { ...FROM_WAITING },
  "waiting-external": { ...FROM_WAITING },
  cancelling: { CANCELLED: "cancelled" },
  completed: {},
  failed: { RETRY: "running", RESTART: "running" },
  cancelled: {},
};

// ------------------------------------------------------------------------------------------- tests

describe("task machine states", () => {
  it("are exactly the ten OpenWOP run statuses, starting at pending", () => {
    expect(Object.keys(taskMachine.root.states).sort()).toEqual([...RUN_STATUSES].sort());
    expect(statusOf(newActor())).toBe("pending");
  });

  it("a new task's snapshot is the one XState's own initial step gives (no entry action is skipped)", () => {
    const ours = newActor().getSnapshot();
    const xstates = createActor(taskMachine, { input: INPUT }).getSnapshot();
    expect(ours.value).toBe(xstates.value);
    expect(ours.status).toBe(xstates.status);
    expect(ours.context).toEqual(xstates.context);
    expect(ours.toJSON()).toEqual(xstates.toJSON());
    expect(ours.can({ type: "START", at: "2026-01-01T00:00:00.000Z" })).toBe(true);
  });

  it("the event variants cover every TASK_EVENT_TYPES entry (and nothing else)", () => {
    expect(new Set(VARIANTS.map((v) => v.type))).toEqual(new Set(TASK_EVENT_TYPES));
    expect(TASK_EVENT_TYPES).toHaveLength(20);
  });
});

describe("forward projection declared on each state's meta", () => {
  describe.each(RUN_STATUSES.map((s) => [s] as const))("%s", (status) => {
    const expected = PROJECTION[status];

    it(`projects to ${expected.a2aState}${expected.interruptKind ? ` + interruptKind ${expected.interruptKind}` : ""}`, () => {
      const meta = declaredMetaOf(status);
      expect(meta.a2aState).toBe(expected.a2aState);
      if (expected.interruptKind) {
        expect(meta.interruptKind).toBe(expected.interruptKind);
      } else {
        expect(meta).not.toHaveProperty("interruptKind");
      }
      expect(typeof meta.description).toBe("string");
      expect(meta.description.length).toBeGreaterThan(0);
    });

    it(expected.terminal ? "is terminal (meta.terminal and a final state node)" : "is not terminal", () => {
      const node = taskMachine.root.states[status];
      expect(node).toBeDefined();
      const meta = node!.meta as Record<string, unknown>;
      if (expected.terminal) {
        expect(meta["terminal"]).toBe(true);
        // failed is terminal on the wire, but not an XState final state: an operator may retry or restart it.
        expect(node!.type).toBe(status === "failed" ? "atomic" : "final");
      } else {
        expect(meta).not.toHaveProperty("terminal");
        expect(node!.type).not.toBe("final");
      }
    });

    it("a live snapshot in this state reads the same projection (stateMetaOf)", () => {
      const actor = driveTo(status);
      const meta = stateMetaOf(actor.getSnapshot());
      expect(meta).toEqual(declaredMetaOf(status));
      expect(meta.a2aState).toBe(expected.a2aState);
      expect(meta.interruptKind).toBe(expected.interruptKind);
      expect(actor.getSnapshot().status).toBe(expected.terminal && status !== "failed" ? "done" : "active");
    });
  });

  it("never projects auth-required or rejected", () => {
    const produced = RUN_STATUSES.map((s) => declaredMetaOf(s).a2aState);
    expect(produced).not.toContain("auth-required");
    expect(produced).not.toContain("rejected");
  });
});

describe("every state × every event", () => {
  for (const status of RUN_STATUSES) {
    describe(status, () => {
      for (const v of VARIANTS) {
        const target = TRANSITIONS[status][v.label];
        if (target) {
          it(`${v.label} is legal → ${target}`, () => {
            const actor = driveTo(status);
            const event = v.build(actor.getSnapshot().context);
            const { before, after } = applyTaskEvent(actor, event);
            expect(runStatusOf(before)).toBe(status);
            expect(runStatusOf(after)).toBe(target);
            expect(statusOf(actor)).toBe(target);
          });
        } else {
          it(`${v.label} is refused (unsupported-operation, actor unchanged)`, () => {
            const actor = driveTo(status);
            const error = expectRefused(actor, v.build(actor.getSnapshot().context));
            expect(error.message).toContain(status);
            expect(error.message).toContain(v.type);
          });
        }
      }
    });
  }

  it("a refused event leaves the actor usable: the next legal event is still applied", () => {
    const actor = driveTo("waiting-approval");
    expectRefused(actor, ev.complete());
    expectRefused(actor, ev.unpause());
    applyTaskEvent(actor, ev.resume("prepare", "finalize"));
    expect(statusOf(actor)).toBe("running");
  });
});

describe("guards", () => {
  it("NODE_COMPLETED is refused while the cursor node has not been started", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    expect(actor.getSnapshot().context.cursor).toBe("prepare");
    expect(actor.getSnapshot().context.nodeStarted).toBe(false);
    expectRefused(actor, ev.nodeCompleted("prepare", "gate"));
  });

  it("NODE_COMPLETED for a node that is not the started cursor is refused", () => {
    const actor = driveTo("running");
    expect(actor.getSnapshot().context.cursor).toBe("prepare");
    expectRefused(actor, ev.nodeCompleted("finalize", null));
    // The started cursor itself is accepted.
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "gate"));
    expect(actor.getSnapshot().context.cursor).toBe("gate");
  });

  it("a node cannot be completed twice", () => {
    const actor = driveTo("running");
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "prepare"));
    // The cursor names prepare again (a loop), but it has not been started again.
    expectRefused(actor, ev.nodeCompleted("prepare", "gate"));
  });

  for (const [status, kind] of [
    ["waiting-approval", "approval"],
    ["waiting-input", "clarification"],
    ["waiting-external", "external-event"],
  ] as const) {
    it(`RESUME with the wrong nodeId is refused in ${status}`, () => {
      const actor = newActor();
      applyTaskEvent(actor, ev.start());
      applyTaskEvent(actor, ev.interrupt("gate", kind));
      expect(statusOf(actor)).toBe(status);
      expectRefused(actor, ev.resume("prepare", "finalize"));
      expectRefused(actor, ev.resume("GATE", "finalize"));
      expectRefused(actor, ev.resume("prepare", null, { fail: { code: "approval_rejected", message: "rejected" } }));
      applyTaskEvent(actor, ev.resume("gate", "finalize"));
      expect(statusOf(actor)).toBe("running");
    });
  }

  it("NODE_PROGRESS is only accepted for the started cursor node", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    expectRefused(actor, ev.nodeProgress("prepare")); // not started yet
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expectRefused(actor, ev.nodeProgress("finalize")); // not the cursor
    applyTaskEvent(actor, ev.nodeProgress("prepare"));
    expect(actor.getSnapshot().context.nodeProgress).toEqual({
      prepare: { peerTaskId: "peer-1", peerState: "working" },
    });
  });

  it("ARTIFACT_CHUNK is only accepted for the started cursor node; append adds parts, a new first chunk restarts the artifact", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    expectRefused(actor, ev.artifactChunk("prepare", "a", false)); // not started yet
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expectRefused(actor, ev.artifactChunk("finalize", "a", false)); // not the cursor
    applyTaskEvent(actor, ev.artifactChunk("prepare", "a", false));
    applyTaskEvent(actor, ev.artifactChunk("prepare", "b", true));
    applyTaskEvent(actor, ev.artifactChunk("prepare", "c", true, true));
    const texts = () =>
      actor.getSnapshot().context.artifacts.map((a) => a.parts.map((p) => (p.kind === "text" ? p.text : "")).join(""));
    expect(texts()).toEqual(["abc"]);
    expect(actor.getSnapshot().context.artifactsByNode).toEqual({ prepare: ["prepare.stream"] });
    // A handler run again after a crash starts the artifact over (append false) instead of doubling it.
    applyTaskEvent(actor, ev.artifactChunk("prepare", "x", false));
    expect(texts()).toEqual(["x"]);
  });

  it("INTERRUPT of a kind the machine has no waiting state for is refused", () => {
    const actor = driveTo("running");
    const event = ev.interrupt("prepare", "approval");
    if (event.type !== "INTERRUPT") throw new Error("unreachable");
    expectRefused(actor, { ...event, interrupt: { ...event.interrupt, kind: "custom" as InterruptKind } });
  });
});

describe("context effects", () => {
  it("starts with the input: cursor at the first node, the first message in history, nothing else", () => {
    const context = newActor().getSnapshot().context;
    expect(context).toMatchObject({
      taskId: "task-1",
      contextId: "ctx-1",
      workflowId: "approval-gate",
      tenant: "tenant-a",
      cursor: "prepare",
      nodeStarted: false,
      attempt: 0,
      visits: {},
      outputs: {},
      artifacts: [],
      history: [INPUT.message],
    });
    expect(context.interrupt).toBeUndefined();
    expect(context.timer).toBeUndefined();
    expect(context.error).toBeUndefined();
  });

  it("START records startedAt", () => {
    const actor = newActor();
    const start = ev.start();
    applyTaskEvent(actor, start);
    expect(actor.getSnapshot().context.startedAt).toBe(start.at);
  });

  it("attempt counts executions of the same node and resets on another node / on completion", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expect(actor.getSnapshot().context).toMatchObject({ cursor: "prepare", nodeStarted: true, attempt: 1 });
    applyTaskEvent(actor, ev.nodeStarted("prepare")); // crash + retry of the same node
    expect(actor.getSnapshot().context.attempt).toBe(2);
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expect(actor.getSnapshot().context.attempt).toBe(3);
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "finalize"));
    expect(actor.getSnapshot().context).toMatchObject({ cursor: "finalize", nodeStarted: false, attempt: 0 });
    applyTaskEvent(actor, ev.nodeStarted("finalize"));
    expect(actor.getSnapshot().context.attempt).toBe(1);
  });

  it("NODE_INTERRUPTED makes the first death a suspect's (uncharged) and counts later ones (run alone), apart from attempt; completion clears both", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    expect(() => applyTaskEvent(actor, { type: "NODE_INTERRUPTED", at: at(), nodeId: "prepare" })).toThrow(); // not started: nothing died
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expect(actor.getSnapshot().context.crashes).toBeUndefined(); // absent reads as 0 (also on snapshots from before the field)
    applyTaskEvent(actor, { type: "NODE_INTERRUPTED", at: at(), nodeId: "prepare" });
    // Died not run alone: not charged, the node is a suspect and no longer started (a second death before it runs again is none).
    expect(actor.getSnapshot().context).toMatchObject({ suspect: true, nodeStarted: false, attempt: 1 });
    expect(actor.getSnapshot().context.crashes).toBeUndefined();
    expect(() => applyTaskEvent(actor, { type: "NODE_INTERRUPTED", at: at(), nodeId: "prepare" })).toThrow();
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    applyTaskEvent(actor, { type: "NODE_INTERRUPTED", at: at(), nodeId: "prepare" });
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    applyTaskEvent(actor, { type: "NODE_INTERRUPTED", at: at(), nodeId: "prepare" });
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expect(actor.getSnapshot().context).toMatchObject({ suspect: true, crashes: 2, attempt: 4, nodeStarted: true });
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "finalize"));
    expect(actor.getSnapshot().context.crashes).toBeUndefined();
    expect(actor.getSnapshot().context.suspect).toBeUndefined();
  });

  it("NODE_COMPLETED records the output, counts the visit and moves the cursor", () => {
    const actor = driveTo("running");
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "gate", [], { proposal: "p1" }));
    const context = actor.getSnapshot().context;
    expect(context.outputs).toEqual({ prepare: { proposal: "p1" } });
    expect(context.visits).toEqual({ prepare: 1 });
    expect(context.cursor).toBe("gate");
  });

  it("a refine loop: visits count per node, artifacts merge by artifactId, history grows", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    applyTaskEvent(
      actor,
      ev.nodeCompleted("prepare", "gate", [
        textArtifact("prepare.0", "draft v1"),
        textArtifact("prepare.1", "notes v1"),
      ]),
    );
    expect(actor.getSnapshot().context.artifacts.map((a) => a.artifactId)).toEqual(["prepare.0", "prepare.1"]);

    // Interrupt: the status message joins the history.
    applyTaskEvent(actor, ev.interrupt("gate", "approval", { messageId: "status-1" }));
    let context = actor.getSnapshot().context;
    expect(context.history.map((m) => m.messageId)).toEqual(["m-first", "status-1"]);
    expect(context.statusMessage?.messageId).toBe("status-1");
    expect(context.interrupt?.nodeId).toBe("gate");
    expect(context.nodeStarted).toBe(false);

    // Refine: the reply joins the history, the interrupt and status message are cleared, the cursor goes back.
    applyTaskEvent(
      actor,
      ev.resume("gate", "prepare", {
        message: userMessage("reply-1", "shorter please"),
        output: { action: "refine", refineFeedback: { scope: "whole", text: "shorter please" } },
      }),
    );
    context = actor.getSnapshot().context;
    expect(statusOf(actor)).toBe("running");
    expect(context.history.map((m) => m.messageId)).toEqual(["m-first", "status-1", "reply-1"]);
    expect(context.interrupt).toBeUndefined();
    expect(context.statusMessage).toBeUndefined();
    expect(context.cursor).toBe("prepare");
    expect(context.outputs["gate"]).toMatchObject({ action: "refine" });

    // Second visit of prepare: the same artifactId replaces the old artifact, in place.
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    expect(actor.getSnapshot().context.attempt).toBe(1);
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "gate", [textArtifact("prepare.0", "draft v2")]));
    context = actor.getSnapshot().context;
    expect(context.visits).toEqual({ prepare: 2 });
    expect(context.artifacts).toEqual([textArtifact("prepare.0", "draft v2"), textArtifact("prepare.1", "notes v1")]);

    // Accept with an edited artifact (edit-accept): merged by id as well; a RESUME without message adds no history.
    applyTaskEvent(actor, ev.interrupt("gate", "approval", { messageId: "status-2" }));
    applyTaskEvent(actor, ev.resume("gate", "finalize", { artifacts: [textArtifact("prepare.0", "edited by alice")] }));
    context = actor.getSnapshot().context;
    expect(context.artifacts).toEqual([
      textArtifact("prepare.0", "edited by alice"),
      textArtifact("prepare.1", "notes v1"),
    ]);
    expect(context.history.map((m) => m.messageId)).toEqual(["m-first", "status-1", "reply-1", "status-2"]);

    // A new artifact id is appended.
    applyTaskEvent(actor, ev.nodeStarted("finalize"));
    applyTaskEvent(actor, ev.nodeCompleted("finalize", null, [textArtifact("finalize.0", "done")]));
    context = actor.getSnapshot().context;
    expect(context.artifacts.map((a) => a.artifactId)).toEqual(["prepare.0", "prepare.1", "finalize.0"]);
    expect(context.visits).toEqual({ prepare: 2, finalize: 1 });
    expect(context.cursor).toBeNull();

    const complete = ev.complete(agentMessage("final-status", "Done"));
    applyTaskEvent(actor, complete);
    context = actor.getSnapshot().context;
    expect(statusOf(actor)).toBe("completed");
    expect(context.endedAt).toBe(complete.at);
    expect(context.history.at(-1)?.messageId).toBe("final-status");
    expect(context.statusMessage?.messageId).toBe("final-status");
  });

  it("ASK keeps the approval pending, accumulates the exchange and grows the history", () => {
    const actor = driveTo("waiting-approval");
    const interruptBefore = actor.getSnapshot().context.interrupt!;
    const historyBefore = actor.getSnapshot().context.history.length;
    const ask = ev.ask("What does it cost?", userMessage("q-1", "What does it cost?"));
    applyTaskEvent(actor, ask);
    const context = actor.getSnapshot().context;
    expect(statusOf(actor)).toBe("waiting-approval");
    expect(context.interrupt?.interruptId).toBe(interruptBefore.interruptId);
    expect(context.interrupt?.exchanges).toEqual([{ question: "What does it cost?", askedBy: "bob", askedAt: ask.at }]);
    expect(context.history).toHaveLength(historyBefore + 2);
    expect(context.history.at(-2)?.messageId).toBe("q-1");
    expect(context.history.at(-1)?.role).toBe("agent");
    if (ask.type !== "ASK") throw new Error("unreachable");
    expect(context.statusMessage).toEqual(ask.statusMessage);

    applyTaskEvent(actor, ev.ask("And when?"));
    expect(actor.getSnapshot().context.interrupt?.exchanges.map((e) => e.question)).toEqual([
      "What does it cost?",
      "And when?",
    ]);
  });

  it("NODE_PROGRESS replaces the node's entry; INTERRUPT keeps it, RESUME with progress replaces it, NODE_COMPLETED clears it", () => {
    const actor = driveTo("running");
    expect(actor.getSnapshot().context.nodeProgress).toBeUndefined();
    applyTaskEvent(actor, ev.nodeProgress("prepare", { peerTaskId: "p-1", peerState: "submitted" }));
    applyTaskEvent(actor, ev.nodeProgress("prepare", { peerTaskId: "p-1", peerState: "input-required" }));
    expect(actor.getSnapshot().context.nodeProgress).toEqual({
      prepare: { peerTaskId: "p-1", peerState: "input-required" },
    });
    const contextBefore = structuredClone(actor.getSnapshot().context);
    // node.progress changes nothing else: same status, cursor, attempt, history.
    expect(statusOf(actor)).toBe("running");
    expect(contextBefore).toMatchObject({ cursor: "prepare", nodeStarted: true, attempt: 1 });

    applyTaskEvent(actor, ev.interrupt("prepare", "clarification"));
    expect(actor.getSnapshot().context.nodeProgress?.["prepare"]).toEqual({
      peerTaskId: "p-1",
      peerState: "input-required",
    });
    const resume = ev.resume("prepare", "prepare", { resumeValue: { answers: [] } });
    if (resume.type !== "RESUME") throw new Error("unreachable");
    applyTaskEvent(actor, {
      ...resume,
      progress: { peerTaskId: "p-1", peerState: "input-required", pendingReply: { messageId: "r-1" } },
    });
    expect(statusOf(actor)).toBe("running");
    expect(actor.getSnapshot().context.cursor).toBe("prepare");
    expect(actor.getSnapshot().context.nodeProgress?.["prepare"]).toMatchObject({ pendingReply: { messageId: "r-1" } });

    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "gate"));
    expect(actor.getSnapshot().context.nodeProgress).toEqual({});
  });

  it("a RESUME without progress leaves the node's progress alone", () => {
    const actor = driveTo("running");
    applyTaskEvent(actor, ev.nodeProgress("prepare", { peerTaskId: "p-2" }));
    applyTaskEvent(actor, ev.interrupt("prepare", "approval"));
    applyTaskEvent(actor, ev.resume("prepare", "finalize"));
    expect(actor.getSnapshot().context.nodeProgress).toEqual({ prepare: { peerTaskId: "p-2" } });
  });

  it("TIMER_SET sets the timer and NODE_COMPLETED clears it", () => {
    const actor = driveTo("running");
    const timer: DurableTimer = { nodeId: "prepare", purpose: "delay", dueAt: "2026-03-01T11:00:00.000Z" };
    applyTaskEvent(actor, ev.timerSet(timer));
    expect(actor.getSnapshot().context.timer).toEqual(timer);
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "gate"));
    expect(actor.getSnapshot().context.timer).toBeUndefined();
  });

  it("an interrupt deadline timer is set by INTERRUPT and cleared by RESUME", () => {
    const actor = driveTo("running");
    const timer: DurableTimer = { nodeId: "gate", purpose: "interrupt-timeout", dueAt: "2026-03-02T10:00:00.000Z" };
    applyTaskEvent(actor, ev.interrupt("gate", "approval", { timer, expiresAt: timer.dueAt }));
    expect(actor.getSnapshot().context.timer).toEqual(timer);
    expect(actor.getSnapshot().context.interrupt?.expiresAt).toBe(timer.dueAt);
    applyTaskEvent(actor, ev.resume("gate", "finalize"));
    expect(actor.getSnapshot().context.timer).toBeUndefined();
  });

  it("CANCEL records the reason and clears the timer; CANCELLED clears the interrupt and records endedAt", () => {
    const actor = driveTo("running");
    const timer: DurableTimer = { nodeId: "gate", purpose: "interrupt-timeout", dueAt: "2026-03-02T10:00:00.000Z" };
    applyTaskEvent(actor, ev.interrupt("gate", "approval", { timer }));
    applyTaskEvent(actor, ev.cancel("no longer needed"));
    expect(statusOf(actor)).toBe("cancelling");
    expect(actor.getSnapshot().context.cancelReason).toBe("no longer needed");
    expect(actor.getSnapshot().context.timer).toBeUndefined();
    const cancelled = ev.cancelled();
    applyTaskEvent(actor, cancelled);
    const context = actor.getSnapshot().context;
    expect(statusOf(actor)).toBe("cancelled");
    expect(context.interrupt).toBeUndefined();
    expect(context.statusMessage).toBeUndefined();
    expect(context.timer).toBeUndefined();
    expect(context.nodeStarted).toBe(false);
    expect(context.endedAt).toBe(cancelled.at);
  });

  it("FAIL records the error, endedAt and the status message, and clears interrupt and timer", () => {
    const actor = driveTo("running");
    const timer: DurableTimer = { nodeId: "gate", purpose: "interrupt-timeout", dueAt: "2026-03-02T10:00:00.000Z" };
    applyTaskEvent(actor, ev.interrupt("gate", "approval", { timer }));
    const historyBefore = actor.getSnapshot().context.history.length;
    const fail = ev.fail("approval_timeout", agentMessage("fail-status", "Timed out"));
    applyTaskEvent(actor, fail);
    const context = actor.getSnapshot().context;
    expect(statusOf(actor)).toBe("failed");
    expect(context.error).toEqual({
      code: "approval_timeout",
      message: "failed with approval_timeout",
      nodeId: "prepare",
    });
    expect(context.endedAt).toBe(fail.at);
    expect(context.interrupt).toBeUndefined();
    expect(context.timer).toBeUndefined();
    expect(context.history).toHaveLength(historyBefore + 1);
    expect(context.history.at(-1)?.messageId).toBe("fail-status");
  });

  it("RESUME with fail resolves and fails in one event: decision recorded, error set, interrupt cleared", () => {
    const actor = driveTo("running");
    const timer: DurableTimer = { nodeId: "gate", purpose: "interrupt-timeout", dueAt: "2026-03-02T10:00:00.000Z" };
    applyTaskEvent(actor, ev.interrupt("gate", "approval", { timer, messageId: "status-1" }));
    const error = { code: "approval_rejected", message: 'rejected at approval gate "gate"', nodeId: "gate" };
    const resume = ev.resume("gate", null, {
      message: userMessage("reply-1", "no"),
      output: { action: "reject", decidedBy: "alice" },
      fail: error,
      statusMessage: agentMessage("fail-status", "Rejected"),
    });
    applyTaskEvent(actor, resume);
    const context = actor.getSnapshot().context;
    expect(statusOf(actor)).toBe("failed");
    expect(stateMetaOf(actor.getSnapshot()).a2aState).toBe("failed");
    expect(context.error).toEqual(error);
    expect(context.endedAt).toBe(resume.at);
    expect(context.outputs["gate"]).toEqual({ action: "reject", decidedBy: "alice" });
    expect(context.interrupt).toBeUndefined();
    expect(context.timer).toBeUndefined();
    expect(context.cursor).toBeNull();
    expect(context.statusMessage?.messageId).toBe("fail-status");
    expect(context.history.map((m) => m.messageId)).toEqual(["m-first", "status-1", "reply-1", "fail-status"]);
  });

  it("FAIL without a status message does not grow the history", () => {
    const actor = driveTo("running");
    const historyBefore = actor.getSnapshot().context.history;
    applyTaskEvent(actor, ev.fail("boom"));
    expect(actor.getSnapshot().context.history).toEqual(historyBefore);
    expect(actor.getSnapshot().context.error?.code).toBe("boom");
  });

  it("PAUSE / UNPAUSE keep the context (the run resumes where it stopped)", () => {
    const actor = driveTo("running");
    const contextBefore = structuredClone(actor.getSnapshot().context);
    applyTaskEvent(actor, ev.pause());
    expect(actor.getSnapshot().context.paused).toMatchObject({ from: "running", by: "op", drain: true });
    applyTaskEvent(actor, ev.unpause());
    expect(statusOf(actor)).toBe("running");
    expect(actor.getSnapshot().context).toEqual(contextBefore);
  });
});

describe("persistence round trip", () => {
  function roundTrip(actor: TaskActor): TaskActor {
    const persisted = taskMachine.getPersistedSnapshot(actor.getSnapshot());
    const json = JSON.stringify(persisted);
    return restoreTaskActor(JSON.parse(json));
  }

  const normalized = (context: TaskContext): unknown => JSON.parse(JSON.stringify(context));

  for (const status of RUN_STATUSES) {
    it(`${status}: restores the same state and context and accepts the same next events`, () => {
      const actor = driveTo(status);
      if (status === "waiting-approval") applyTaskEvent(actor, ev.ask("Before I decide: why?"));
      const restored = roundTrip(actor);
      expect(statusOf(restored)).toBe(status);
      expect(restored.getSnapshot().status).toBe(actor.getSnapshot().status);
      expect(normalized(restored.getSnapshot().context)).toEqual(normalized(actor.getSnapshot().context));
      expect(stateMetaOf(restored.getSnapshot())).toEqual(stateMetaOf(actor.getSnapshot()));

      for (const v of VARIANTS) {
        const event = v.build(actor.getSnapshot().context);
        const legal = TRANSITIONS[status][v.label] !== undefined;
        expect(actor.getSnapshot().can(event), `${status} original can ${v.label}`).toBe(legal);
        expect(restored.getSnapshot().can(event), `${status} restored can ${v.label}`).toBe(legal);
      }

      // Apply each legal event to a fresh copy of both and compare the results.
      for (const [label, target] of Object.entries(TRANSITIONS[status])) {
        const a = roundTrip(actor);
        const b = roundTrip(restored);
        const event = variant(label).build(a.getSnapshot().context);
        applyTaskEvent(a, event);
        applyTaskEvent(b, event);
        expect(statusOf(a)).toBe(target);
        expect(statusOf(b)).toBe(target);
        expect(normalized(b.getSnapshot().context)).toEqual(normalized(a.getSnapshot().context));
      }
    });
  }

  it("a restored approval wait still enforces the guard and resumes with the right node", () => {
    const actor = newActor();
    applyTaskEvent(actor, ev.start());
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    applyTaskEvent(actor, ev.nodeCompleted("prepare", "gate", [textArtifact("prepare.0", "v1")]));
    applyTaskEvent(actor, ev.interrupt("gate", "approval"));
    const restored = roundTrip(actor);
    expect(restored.getSnapshot().context.interrupt?.nodeId).toBe("gate");
    expect(restored.getSnapshot().context.visits).toEqual({ prepare: 1 });
    expectRefused(restored, ev.resume("prepare", "finalize"));
    applyTaskEvent(restored, ev.resume("gate", "finalize"));
    expect(statusOf(restored)).toBe("running");
    expect(restored.getSnapshot().context.cursor).toBe("finalize");
    expect(restored.getSnapshot().context.artifacts).toEqual([textArtifact("prepare.0", "v1")]);
  });

  it("a restored running node keeps nodeStarted/attempt, so completion is still guarded", () => {
    const actor = driveTo("running");
    applyTaskEvent(actor, ev.nodeStarted("prepare"));
    const restored = roundTrip(actor);
    expect(restored.getSnapshot().context).toMatchObject({ cursor: "prepare", nodeStarted: true, attempt: 2 });
    expectRefused(restored, ev.nodeCompleted("gate", null));
    applyTaskEvent(restored, ev.nodeCompleted("prepare", "gate"));
    expect(restored.getSnapshot().context.cursor).toBe("gate");
  });
});
