import type { Artifact, Message } from "../domain/a2a-types.js";
import type { RunError, TaskContext } from "../machine/task-context.js";
import { cursorOf, inputOfMessage } from "./message-route.js";
import type { WorkflowDefinition, WorkflowNode } from "../workflows/workflow-types.js";

/**
 * Walking a definition, the same for every node kind: where a run starts, what follows a node, what a node reads
 * from its task. Node kinds (engine/nodes/) use these; the engine's decisions (workflow-engine.ts) dispatch to them.
 */

/**
 * What the running task does next, as a node's kind decides it (EngineNodeKind.decide; default `run`). The engine knows
 * these four and nothing of any kind: `complete` ends the run, `fail` fails it, `wait` leaves it until something
 * kicks it again (a timer, a reply, a push), and `run` hands the node to its kind's executor with the decision's
 * `payload`, which only that kind reads (a delay node: start its timer, or fire it).
 */
export type Step<P = unknown> =
  { type: "complete" } | { type: "run"; payload?: P } | { type: "wait" } | { type: "fail"; error: RunError };

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

/** The message a `switch` routes on: the newest from the caller (the first one, for a new task). */
export function incomingMessageOf(context: TaskContext): Message | undefined {
  return (
    context.lastUserMessage ??
    context.history.findLast((m) => m.role === "user") ??
    context.unloggedHistory?.findLast((m) => m.role === "user") ??
    context.request
  );
}

export function idempotencyKeyOf(context: TaskContext, nodeId: string): string {
  return `${context.taskId}:${nodeId}:${(context.visits[nodeId] ?? 0) + 1}`;
}

/** The first message's text and data parts: what the caller asked for. */
export function runInputOf(context: TaskContext): { text: string; data: Record<string, unknown> } {
  return inputOfMessage(context.request);
}

/** The principal the durable timer acts as when an interrupt's deadline passes. */
export const SYSTEM_TIMEOUT = "system:timeout";
