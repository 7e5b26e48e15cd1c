import { assign, setup } from "xstate";
import type { Artifact, Message } from "../domain/a2a-types.js";
import type { A2ATaskStateValue, InterruptKind } from "../domain/run-status.js";
import type { PausableStatus, TaskContext } from "./task-context.js";
import type { TaskEvent } from "./task-events.js";
import { initialContext, type TaskMachineInput } from "./task-machine-input.js";

export { initialContext, type TaskMachineInput };

/**
 * What each lifecycle state means on the A2A wire. Declared on the states themselves (`meta`), so the
 * visualizer export, the store projection and every codec read the same definition.
 */
export interface TaskStateMeta {
  a2aState: A2ATaskStateValue;
  /** Present only on states that wait for a human answer. waiting-external has none on purpose. */
  interruptKind?: Extract<InterruptKind, "approval" | "clarification">;
  terminal?: true;
  description: string;
}

/** Context helpers of the actions; exported so the code export (machine-export-module.ts) can inline them. */
export function mergeArtifacts(current: Artifact[], incoming: Artifact[] | undefined): Artifact[] {
  if (!incoming || incoming.length === 0) return current;
  const byId = new Map(current.map((a) => [a.artifactId, a]));
  for (const artifact of incoming) byId.set(artifact.artifactId, artifact);
  return [...byId.values()];
}

/** A streamed chunk: the first starts (or restarts) the artifact, an `append` chunk adds its parts. */
export function mergeArtifactChunk(current: Artifact[], chunk: Artifact, append: boolean): Artifact[] {
  const existing = current.find((a) => a.artifactId === chunk.artifactId);
  if (!append || !existing) return mergeArtifacts(current, [chunk]);
  return current.map((a) => (a === existing ? { ...existing, parts: [...existing.parts, ...chunk.parts] } : a));
}

export function withProgress(
  current: TaskContext["nodeProgress"],
  nodeId: string,
  progress: Record<string, unknown> | undefined,
): Pick<TaskContext, "nodeProgress"> {
  if (progress === undefined) {
    if (!current || !(nodeId in current)) return {};
    const { [nodeId]: _dropped, ...rest } = current;
    return { nodeProgress: rest };
  }
  return { nodeProgress: { ...current, [nodeId]: progress } };
}

/**
 * How many of the newest history messages the context keeps (the rest are read from the event log). At least
 * the most one transition appends (two), so the log events of a transition can take its messages from here.
 */
export const RECENT_HISTORY = 8;

/** Appends to the A2A history: counted, and kept in the context's window of the newest messages. */
export function appendMessages(
  context: Pick<TaskContext, "history" | "historyCount">,
  ...messages: Array<Message | undefined>
): Partial<Pick<TaskContext, "history" | "historyCount" | "lastUserMessage">> {
  const added = messages.filter((m): m is Message => m !== undefined);
  if (added.length === 0) return {};
  const history = [...context.history, ...added];
  const fromUser = added.findLast((m) => m.role === "user");
  return {
    history: history.length > RECENT_HISTORY ? history.slice(history.length - RECENT_HISTORY) : history,
    historyCount: context.historyCount + added.length,
    ...(fromUser ? { lastUserMessage: fromUser } : {}),
  };
}

/**
 * The version of the machine definition, stored with every persisted snapshot. Raise it when a change to
 * the states or the context would misread snapshots written before, and teach `restorePersistedSnapshot`
 * (persisted-task-snapshot.ts) to migrate the older version on purpose.
 */
export const TASK_MACHINE_VERSION = 2;

export const taskMachine = setup({
  types: {
    context: {} as TaskContext,
    events: {} as TaskEvent,
    input: {} as TaskMachineInput,
  },
  guards: {
    isApprovalInterrupt: ({ event }) => event.type === "INTERRUPT" && event.interrupt.kind === "approval",
    isClarificationInterrupt: ({ event }) => event.type === "INTERRUPT" && event.interrupt.kind === "clarification",
    isExternalInterrupt: ({ event }) => event.type === "INTERRUPT" && event.interrupt.kind === "external-event",
    startsCursorNode: ({ context, event }) => event.type === "NODE_STARTED" && context.cursor === event.nodeId,
    interruptsRunningNode: ({ context, event }) =>
      event.type === "NODE_INTERRUPTED" && context.nodeStarted && context.cursor === event.nodeId,
    completesRunningNode: ({ context, event }) =>
      event.type === "NODE_COMPLETED" && context.nodeStarted && context.cursor === event.nodeId,
    progressesRunningNode: ({ context, event }) =>
      (event.type === "NODE_PROGRESS" || event.type === "ARTIFACT_CHUNK") &&
      context.nodeStarted &&
      context.cursor === event.nodeId,
    drainsRunningNode: ({ context, event }) => {
      if (context.paused?.drain !== true || !context.nodeStarted) return false;
      if (event.type === "INTERRUPT" || event.type === "FAIL") return true;
      return (
        (event.type === "NODE_COMPLETED" || event.type === "NODE_PROGRESS" || event.type === "ARTIFACT_CHUNK") &&
        context.cursor === event.nodeId
      );
    },
    blocksCursorNode: ({ context, event }) => event.type === "BLOCK" && context.cursor === event.nodeId,
    notDraining: ({ context }) => !context.nodeStarted,
    pausedFrom: ({ context }, params: { status: PausableStatus }) => context.paused?.from === params.status,
    retriesFailedNode: ({ context, event }) =>
      event.type === "RETRY" && context.error?.nodeId !== undefined && context.error.nodeId === event.nodeId,
    resolvesPendingInterrupt: ({ context, event }) =>
      event.type === "RESUME" && context.interrupt !== undefined && context.interrupt.nodeId === event.nodeId,
    resolvesAndFails: ({ context, event }) =>
      event.type === "RESUME" &&
      event.fail !== undefined &&
      context.interrupt !== undefined &&
      context.interrupt.nodeId === event.nodeId,
  },
  actions: {
    recordStart: assign({ startedAt: ({ event }) => event.at }),
    recordNodeStarted: assign(({ context, event }) => {
      if (event.type !== "NODE_STARTED") return {};
      const sameNode = context.cursor === event.nodeId;
      return {
        cursor: event.nodeId,
        nodeStarted: true,
        attempt: sameNode ? context.attempt + 1 : 1,
        blocked: undefined,
      };
    }),
    // The first unexplained death makes the node a suspect (uncharged); a suspect ran alone, so its death is charged.
    // The node is no longer started: its next execution is a new node.started, written when it runs again.
    recordNodeInterrupted: assign(({ context }) =>
      context.suspect
        ? { crashes: (context.crashes ?? 0) + 1, nodeStarted: false }
        : { suspect: true, nodeStarted: false },
    ),
    recordNodeCompleted: assign(({ context, event }) => {
      if (event.type !== "NODE_COMPLETED") return {};
      return {
        outputs: { ...context.outputs, [event.nodeId]: event.output },
        visits: { ...context.visits, [event.nodeId]: (context.visits[event.nodeId] ?? 0) + 1 },
        artifacts: mergeArtifacts(context.artifacts, event.artifacts),
        artifactsByNode:
          event.artifacts.length > 0
            ? { ...context.artifactsByNode, [event.nodeId]: event.artifacts.map((a) => a.artifactId) }
            : context.artifactsByNode,
        cursor: event.next,
        nodeStarted: false,
        attempt: 0,
        crashes: undefined,
        suspect: undefined,
        timer: undefined,
        ...withProgress(context.nodeProgress, event.nodeId, undefined),
      };
    }),
    recordNodeProgress: assign(({ context, event }) =>
      event.type === "NODE_PROGRESS" ? withProgress(context.nodeProgress, event.nodeId, event.progress) : {},
    ),
    recordArtifactChunk: assign(({ context, event }) => {
      if (event.type !== "ARTIFACT_CHUNK") return {};
      const ids = context.artifactsByNode[event.nodeId] ?? [];
      return {
        artifacts: mergeArtifactChunk(context.artifacts, event.artifact, event.append),
        artifactsByNode: ids.includes(event.artifact.artifactId)
          ? context.artifactsByNode
          : { ...context.artifactsByNode, [event.nodeId]: [...ids, event.artifact.artifactId] },
      };
    }),
    recordTimer: assign({ timer: ({ event }) => (event.type === "TIMER_SET" ? event.timer : undefined) }),
    recordInterrupt: assign(({ context, event }) => {
      if (event.type !== "INTERRUPT") return {};
      return {
        interrupt: event.interrupt,
        statusMessage: event.statusMessage,
        timer: event.timer,
        nodeStarted: false,
        ...appendMessages(context, event.statusMessage),
      };
    }),
    recordResume: assign(({ context, event }) => {
      if (event.type !== "RESUME") return {};
      return {
        outputs: { ...context.outputs, [event.nodeId]: event.output },
        artifacts: mergeArtifacts(context.artifacts, event.artifacts),
        ...appendMessages(context, event.message),
        interrupt: undefined,
        timer: undefined,
        statusMessage: undefined,
        cursor: event.next,
        nodeStarted: false,
        attempt: 0,
        crashes: undefined,
        suspect: undefined,
        ...(event.progress ? withProgress(context.nodeProgress, event.nodeId, event.progress) : {}),
      };
    }),
    recordAsk: assign(({ context, event }) => {
      if (event.type !== "ASK" || !context.interrupt) return {};
      const exchange = { question: event.question, askedBy: event.askedBy, askedAt: event.at };
      return {
        interrupt: { ...context.interrupt, exchanges: [...context.interrupt.exchanges, exchange] },
        statusMessage: event.statusMessage,
        ...appendMessages(context, event.message, event.statusMessage),
      };
    }),
    recordPause: assign(({ context, event }, params: { from: PausableStatus }) => {
      if (event.type !== "PAUSE") return {};
      const drain = event.drainPolicy === "drain-current-node" && params.from === "running" && context.nodeStarted;
      return {
        paused: {
          from: params.from,
          at: event.at,
          by: event.by,
          ...(event.reason !== undefined ? { reason: event.reason } : {}),
          drain,
          ...(context.statusMessage ? { statusMessage: context.statusMessage } : {}),
        },
        statusMessage: event.statusMessage,
      };
    }),
    recordUnpause: assign(({ context }) => ({ statusMessage: context.paused?.statusMessage, paused: undefined })),
    /** A drained node's interrupt: the task waits once resumed; the pause keeps its own status message. */
    recordDrainedInterrupt: assign(({ context, event }) => {
      if (event.type !== "INTERRUPT" || !context.paused) return {};
      const from: PausableStatus =
        event.interrupt.kind === "approval"
          ? "waiting-approval"
          : event.interrupt.kind === "clarification"
            ? "waiting-input"
            : "waiting-external";
      return {
        interrupt: event.interrupt,
        timer: event.timer,
        nodeStarted: false,
        paused: { ...context.paused, from, drain: false, statusMessage: event.statusMessage },
        ...appendMessages(context, event.statusMessage),
      };
    }),
    recordDrained: assign(({ context }) =>
      context.paused && !context.nodeStarted ? { paused: { ...context.paused, from: "running", drain: false } } : {},
    ),
    clearPause: assign({ paused: undefined }),
    /** Retry: the failed node runs again; its attempt count goes on, its visit (and idempotency key) stays. */
    recordRetry: assign({
      error: undefined,
      endedAt: undefined,
      statusMessage: undefined,
      nodeStarted: false,
      crashes: undefined,
    }),
    /**
     * Restart: the run goes on from `nodeId`, a new visit; outputs, artifacts and the log stay as they are. A move
     * does the same in another version of the workflow.
     */
    recordRestart: assign(({ context, event }) => {
      if (event.type !== "RESTART" && event.type !== "MOVE") return {};
      return {
        ...(event.type === "MOVE" ? { workflowVersion: event.toVersion } : {}),
        blocked: undefined,
        cursor: event.nodeId,
        nodeStarted: false,
        attempt: event.nodeId === context.cursor ? context.attempt : 0,
        crashes: undefined,
        interrupt: undefined,
        timer: undefined,
        error: undefined,
        endedAt: undefined,
        statusMessage: context.paused ? context.statusMessage : undefined,
        ...(context.paused
          ? { paused: { ...context.paused, from: "running" as const, drain: false, statusMessage: undefined } }
          : {}),
        ...withProgress(context.nodeProgress, event.nodeId, undefined),
      };
    }),
    recordBlock: assign(({ event }) =>
      event.type === "BLOCK"
        ? { blocked: { nodeId: event.nodeId, reason: event.reason, at: event.at, instance: event.instance } }
        : {},
    ),
    recordCancelRequest: assign(({ event }) =>
      event.type === "CANCEL" ? { cancelReason: event.reason, timer: undefined } : {},
    ),
    recordCancelled: assign({
      endedAt: ({ event }) => event.at,
      interrupt: undefined,
      timer: undefined,
      statusMessage: undefined,
      nodeStarted: false,
      blocked: undefined,
    }),
    recordComplete: assign(({ context, event }) => {
      if (event.type !== "COMPLETE") return {};
      return {
        endedAt: event.at,
        statusMessage: event.statusMessage,
        ...appendMessages(context, event.statusMessage),
      };
    }),
    recordFail: assign(({ context, event }) => {
      if (event.type !== "FAIL" && !(event.type === "RESUME" && event.fail)) return {};
      const error = event.type === "FAIL" ? event.error : event.fail!;
      return {
        endedAt: event.at,
        error,
        interrupt: undefined,
        timer: undefined,
        blocked: undefined,
        nodeStarted: false,
        statusMessage: event.statusMessage,
        ...appendMessages(context, event.statusMessage),
      };
    }),
  },
}).createMachine({
  id: "task",
  initial: "pending",
  context: ({ input }) => initialContext(input),
  states: {
    pending: {
      meta: { a2aState: "submitted", description: "Accepted and stored; the run has not started." },
      on: {
        START: { target: "running", actions: "recordStart" },
        PAUSE: { target: "paused", actions: { type: "recordPause", params: { from: "pending" } } },
        CANCEL: { target: "cancelling", actions: "recordCancelRequest" },
      },
    },
    running: {
      meta: { a2aState: "working", description: "The engine is executing workflow nodes." },
      on: {
        NODE_STARTED: { guard: "startsCursorNode", actions: "recordNodeStarted" },
        NODE_INTERRUPTED: { guard: "interruptsRunningNode", actions: "recordNodeInterrupted" },
        NODE_COMPLETED: { guard: "completesRunningNode", actions: "recordNodeCompleted" },
        NODE_PROGRESS: { guard: "progressesRunningNode", actions: "recordNodeProgress" },
        ARTIFACT_CHUNK: { guard: "progressesRunningNode", actions: "recordArtifactChunk" },
        TIMER_SET: { actions: "recordTimer" },
        BLOCK: { guard: "blocksCursorNode", actions: "recordBlock" },
        INTERRUPT: [
          { guard: "isApprovalInterrupt", target: "waiting-approval", actions: "recordInterrupt" },
          { guard: "isClarificationInterrupt", target: "waiting-input", actions: "recordInterrupt" },
          { guard: "isExternalInterrupt", target: "waiting-external", actions: "recordInterrupt" },
        ],
        PAUSE: { target: "paused", actions: { type: "recordPause", params: { from: "running" } } },
        CANCEL: { target: "cancelling", actions: "recordCancelRequest" },
        COMPLETE: { target: "completed", actions: "recordComplete" },
        FAIL: { target: "failed", actions: "recordFail" },
      },
    },
    paused: {
      meta: {
        a2aState: "working",
        description: "Paused by an operator: runs no node, fires no timer, takes no reply until resumed.",
      },
      on: {
        UNPAUSE: (["pending", "running", "waiting-approval", "waiting-input", "waiting-external"] as const).map(
          (status) => ({
            guard: { type: "pausedFrom" as const, params: { status } },
            target: status,
            actions: "recordUnpause" as const,
          }),
        ),
        // drain-current-node: the node running at the pause still reports its outcome.
        NODE_COMPLETED: {
          guard: "drainsRunningNode",
          actions: ["recordNodeCompleted", "recordDrained"],
        },
        NODE_PROGRESS: { guard: "drainsRunningNode", actions: "recordNodeProgress" },
        ARTIFACT_CHUNK: { guard: "drainsRunningNode", actions: "recordArtifactChunk" },
        INTERRUPT: { guard: "drainsRunningNode", actions: "recordDrainedInterrupt" },
        FAIL: { guard: "drainsRunningNode", target: "failed", actions: ["clearPause", "recordFail"] },
        RESTART: { actions: "recordRestart" },
        MOVE: { guard: "notDraining", actions: "recordRestart" },
        CANCEL: { target: "cancelling", actions: ["clearPause", "recordCancelRequest"] },
      },
    },
    "waiting-approval": {
      meta: { a2aState: "input-required", interruptKind: "approval", description: "Waiting at an approval gate." },
      on: {
        RESUME: [
          { guard: "resolvesAndFails", target: "failed", actions: ["recordResume", "recordFail"] },
          { guard: "resolvesPendingInterrupt", target: "running", actions: "recordResume" },
        ],
        ASK: { actions: "recordAsk" },
        PAUSE: { target: "paused", actions: { type: "recordPause", params: { from: "waiting-approval" } } },
        RESTART: { target: "running", actions: "recordRestart" },
        MOVE: { target: "running", actions: "recordRestart" },
        CANCEL: { target: "cancelling", actions: "recordCancelRequest" },
        FAIL: { target: "failed", actions: "recordFail" },
      },
    },
    "waiting-input": {
      meta: {
        a2aState: "input-required",
        interruptKind: "clarification",
        description: "Waiting for answers to clarification questions.",
      },
      on: {
        RESUME: [
          { guard: "resolvesAndFails", target: "failed", actions: ["recordResume", "recordFail"] },
          { guard: "resolvesPendingInterrupt", target: "running", actions: "recordResume" },
        ],
        PAUSE: { target: "paused", actions: { type: "recordPause", params: { from: "waiting-input" } } },
        RESTART: { target: "running", actions: "recordRestart" },
        MOVE: { target: "running", actions: "recordRestart" },
        CANCEL: { target: "cancelling", actions: "recordCancelRequest" },
        FAIL: { target: "failed", actions: "recordFail" },
      },
    },
    "waiting-external": {
      meta: { a2aState: "input-required", description: "Waiting for an external event." },
      on: {
        RESUME: [
          { guard: "resolvesAndFails", target: "failed", actions: ["recordResume", "recordFail"] },
          { guard: "resolvesPendingInterrupt", target: "running", actions: "recordResume" },
        ],
        PAUSE: { target: "paused", actions: { type: "recordPause", params: { from: "waiting-external" } } },
        RESTART: { target: "running", actions: "recordRestart" },
        MOVE: { target: "running", actions: "recordRestart" },
        CANCEL: { target: "cancelling", actions: "recordCancelRequest" },
        FAIL: { target: "failed", actions: "recordFail" },
      },
    },
    cancelling: {
      meta: { a2aState: "working", description: "Cancel requested; in-flight work is being stopped." },
      on: { CANCELLED: { target: "cancelled", actions: "recordCancelled" } },
    },
    completed: {
      type: "final",
      meta: { a2aState: "completed", terminal: true, description: "Finished successfully." },
    },
    // Not an XState final state: an operator may retry the failed node or restart from an earlier one.
    failed: {
      meta: { a2aState: "failed", terminal: true, description: "Finished with an error." },
      on: {
        RETRY: { guard: "retriesFailedNode", target: "running", actions: "recordRetry" },
        RESTART: { target: "running", actions: "recordRestart" },
      },
    },
    cancelled: {
      type: "final",
      meta: { a2aState: "canceled", terminal: true, description: "Cancelled before it finished." },
    },
  },
});

export type TaskMachine = typeof taskMachine;
