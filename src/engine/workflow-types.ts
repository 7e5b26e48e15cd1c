import type { Part } from "../domain/a2a-types.js";

/** Declarative workflow definitions (schemas/workflow.schema.json). */
export interface TaskNode {
  kind: "task";
  id: string;
  title?: string;
  handler: string;
  params?: Record<string, unknown>;
  retry?: { maxAttempts: number };
  /** Where the run goes after this node: a node id, or `$end` (ends a `switch` branch); the next node by default. */
  next?: string;
}

export interface ApprovalNode {
  kind: "approval";
  id: string;
  title: string;
  description?: string;
  /** Node whose artifacts are put up for approval (and edited by edit-accept). */
  artifactFrom?: string;
  actions?: Array<"accept" | "reject" | "refine" | "edit" | "ask">;
  timeoutMs?: number;
  onReject?: "fail" | { goto: string };
  onRefine?: { goto: string };
}

export interface ClarificationNode {
  kind: "clarification";
  id: string;
  title?: string;
  questions: Array<{ id: string; question: string; required?: boolean }>;
  timeoutMs?: number;
}

export interface DelayNode {
  kind: "delay";
  id: string;
  title?: string;
  durationMs: number;
}

/** Calls an external A2A agent (the host as an A2A client) and projects the peer's task into the run. */
export interface A2AInvokeNode {
  kind: "a2a.invoke";
  id: string;
  title?: string;
  /**
   * The peer's agent card. May be `${VARIABLE}` (e.g. `${A2A_PEER_CARD_URL}`), expanded from configuration
   * when the workflow is loaded; a variable that is not configured stays unexpanded and the node fails with
   * `external_call_failed` when it runs.
   */
  agentCardUrl: string;
  /** Sent to the peer as `message.metadata.skillId`. */
  skillId?: string;
  /** Text sent to the peer; without it the run's input (text and data parts) is forwarded. */
  message?: string;
  /** How long the peer may take to reach a terminal or input state after each message we send. */
  timeoutMs?: number;
}

/**
 * What a `switch` case tests on the incoming message; every field given must hold. `metadata` and `data`
 * map dotted paths (into `message.metadata`, or the merged data parts) to the value they must equal.
 */
export interface SwitchCondition {
  messageIdPrefix?: string;
  /** Case-insensitive substring of the message's text parts. */
  textContains?: string;
  /** A regular expression (JavaScript syntax, case-insensitive) tested on the message's text parts. */
  textMatches?: string;
  metadata?: Record<string, unknown>;
  data?: Record<string, unknown>;
}

/** Routes on the incoming message: the first matching case's `goto`, else `default`, else the next node. */
export interface SwitchNode {
  kind: "switch";
  id: string;
  title?: string;
  cases: Array<{ when: SwitchCondition; goto: string }>;
  default?: string;
}

/** A `goto`/`next` target that ends the run. */
export const END_TARGET = "$end";

export type WorkflowNode = TaskNode | ApprovalNode | ClarificationNode | DelayNode | A2AInvokeNode | SwitchNode;

export interface WorkflowDefinition {
  id: string;
  name: string;
  description: string;
  version?: string;
  tags?: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
  /**
   * The skill answers `message/send` with a Message instead of a Task: it runs its task and switch nodes at
   * once, stores nothing and creates no task (A2A "Message or Task").
   */
  stateless?: boolean;
  nodes: WorkflowNode[];
}

/** What a task handler sees. Node execution is at-least-once: use `idempotencyKey` for external effects. */
export interface HandlerContext {
  taskId: string;
  runId: string;
  nodeId: string;
  /** Stable per (run, node, visit): the same after a crash-and-retry of this execution. */
  idempotencyKey: string;
  attempt: number;
  params: Record<string, unknown>;
  input: { text: string; data: Record<string, unknown> };
  outputs: Readonly<Record<string, unknown>>;
  /** Refine feedback addressed to this node by an approval gate, newest last. */
  feedback: string[];
  signal: AbortSignal;
  /**
   * Streams a piece of an artifact: committed (and shown to streams, tasks/get) before it resolves. Rejects
   * when the run no longer runs this node. A stateless skill gathers the chunks into its answer.
   */
  emitArtifactChunk(chunk: ArtifactChunk): Promise<void>;
}

export interface HandlerArtifact {
  artifactId?: string;
  name: string;
  description?: string;
  parts: Part[];
}

/** One piece of an artifact a handler streams: the first (`append` false) starts it, later ones add parts. */
export interface ArtifactChunk {
  artifactId: string;
  name?: string;
  parts: Part[];
  append: boolean;
  lastChunk: boolean;
}

export interface HandlerResult {
  output?: unknown;
  artifacts?: HandlerArtifact[];
}

export interface TaskHandler {
  (ctx: HandlerContext): Promise<HandlerResult>;
  /**
   * True when the handler has no effect outside this host (it computes its result from its context alone).
   * Its node.started is then written together with the transitions before it; any other handler gets a
   * store write of its own for node.started before it runs.
   */
  pure?: boolean;
}

/** A handler failure with a stable code recorded on the failed run. */
export class HandlerError extends Error {
  override readonly name = "HandlerError";
  constructor(readonly code: string, message: string, readonly retryable = false) {
    super(message);
  }
}
