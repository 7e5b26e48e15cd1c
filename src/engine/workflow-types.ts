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

export type WorkflowNode = TaskNode | ApprovalNode | ClarificationNode | DelayNode;

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

export type TaskHandler = (ctx: HandlerContext) => Promise<HandlerResult>;

/** A handler failure with a stable code recorded on the failed run. */
export class HandlerError extends Error {
  override readonly name = "HandlerError";
  constructor(readonly code: string, message: string, readonly retryable = false) {
    super(message);
  }
}
