import type { Part } from "../domain/a2a-types.js";

/** Declarative workflow definitions (schemas/workflow.schema.json). */
export interface TaskNode {
  kind: "task";
  id: string;
  title?: string;
  handler: string;
  params?: Record<string, unknown>;
  retry?: { maxAttempts: number };
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

export type WorkflowNode = TaskNode | ApprovalNode | ClarificationNode | DelayNode | A2AInvokeNode;

export interface WorkflowDefinition {
  id: string;
  name: string;
  description: string;
  version?: string;
  tags?: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
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
}

export interface HandlerArtifact {
  artifactId?: string;
  name: string;
  description?: string;
  parts: Part[];
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
