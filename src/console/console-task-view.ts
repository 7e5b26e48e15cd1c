import type { Artifact, Message } from "../domain/a2a-types.js";
import type { RunEvent } from "../domain/task-record.js";
import type { TaskContext } from "../machine/task-context.js";
import type { NodeKindRegistry } from "../engine/nodes/node-registry.js";
import type { NodeWaiting } from "../engine/nodes/node-kind.js";
import { originOf } from "../domain/url-origin.js";
import type { WorkflowDefinition, WorkflowNode } from "../workflows/workflow-types.js";

export { originOf };

/** Whom or what a task waits for, in words an operator reads in a list row. */
/** E.g. "an approver: Approve the proposal", "an answer: Who is the audience?", "the timer (due …)". */
export type ConsoleWaitingFor = NodeWaiting;

export interface ConsoleNodeRef {
  id: string;
  kind: string;
  title: string;
}

const TITLE_MAX = 120;

/** The first line of the text the task was created with (or of its data, as JSON), clipped. */
function firstLine(message: Message | undefined): string {
  for (const part of message?.parts ?? []) {
    if (part.kind === "text") {
      const line = part.text
        .split(/\r?\n/)
        .map((l) => l.trim())
        .find((l) => l.length > 0);
      if (line) return line;
    }
  }
  const data = message?.parts.find((p) => p.kind === "data");
  return data && data.kind === "data" ? JSON.stringify(data.data) : "";
}

function clip(text: string, max = TITLE_MAX): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A title a person can read: one the workflow set (a node output's string `title`, the newest node that
 * set one wins), else the skill's name and the first line of the request.
 */
export function titleOf(context: TaskContext, workflow: WorkflowDefinition | undefined): string {
  let set: string | undefined;
  for (const output of Object.values(context.outputs ?? {})) {
    const title = output && typeof output === "object" ? (output as { title?: unknown }).title : undefined;
    if (typeof title === "string" && title.trim()) set = title.trim();
  }
  if (set) return clip(set);
  const name = workflow?.name ?? context.workflowId;
  const line = firstLine(context.request);
  return clip(line ? `${name}: ${line}` : name);
}

export function nodeRef(
  workflow: WorkflowDefinition | undefined,
  nodeId: string | null | undefined,
  kinds: NodeKindRegistry,
): ConsoleNodeRef | null {
  if (!nodeId) return null;
  const node = workflow?.nodes.find((n) => n.id === nodeId);
  return { id: nodeId, kind: node?.kind ?? "unknown", title: (node && nodeTitle(node, kinds)) ?? nodeId };
}

/** A node's label when its definition sets no title: what the node does, in words of its kind (else its id). */
export function nodeTitle(node: WorkflowNode, kinds: NodeKindRegistry): string {
  return node.title ?? kinds.of(node.kind)?.view?.title?.(node as never) ?? node.id;
}

/** What a waiting task waits for; undefined when it waits for nothing (it runs, or it ended). */
export function waitingForOf(
  status: string,
  context: TaskContext,
  workflow: WorkflowDefinition | undefined,
  kinds: NodeKindRegistry,
): ConsoleWaitingFor | undefined {
  const interrupt = context.interrupt;
  // The node's kind says first (a2a.invoke: the peer agent); else the interrupt's kind, the timer, nothing.
  const viewOf = (nodeId: string | null) => {
    const node = nodeId === null ? undefined : workflow?.nodes.find((n) => n.id === nodeId);
    return node && kinds.of(node.kind)?.view?.waitingFor?.(node as never, context, status);
  };
  if (interrupt && status.startsWith("waiting-")) {
    const base = {
      nodeId: interrupt.nodeId,
      since: interrupt.requestedAt,
      ...(interrupt.expiresAt ? { until: interrupt.expiresAt } : {}),
    };
    const byKind = viewOf(interrupt.nodeId);
    if (byKind) return byKind;
    if (interrupt.kind === "approval")
      return {
        kind: "approver",
        label: `an approver: ${String(interrupt.data["title"] ?? interrupt.nodeId)}`,
        ...base,
      };
    if (interrupt.kind === "clarification") {
      const questions = Array.isArray(interrupt.data["questions"])
        ? (interrupt.data["questions"] as Array<{ question?: unknown }>)
        : [];
      return {
        kind: "clarification",
        label: clip(`an answer: ${questions.map((q) => String(q.question ?? "")).join(" · ")}`),
        ...base,
      };
    }
    return { kind: "external", label: "an external event", ...base };
  }
  if (
    context.timer &&
    context.timer.purpose === "delay" &&
    !status.startsWith("waiting-") &&
    status !== "completed" &&
    status !== "failed" &&
    status !== "cancelled"
  ) {
    return {
      kind: "timer",
      label: `the timer (due ${context.timer.dueAt})`,
      nodeId: context.timer.nodeId,
      until: context.timer.dueAt,
    };
  }
  return viewOf(context.cursor);
}

/**
 * The nodes the task went through, in order: every logged event names the node it happened at (a task
 * node starts, a gate suspends, a delay sets its timer), so consecutive repeats collapse into one visit and
 * a refine loop shows as the node entered again.
 */
export function nodePathOf(events: readonly Pick<RunEvent, "type" | "nodeId">[]): string[] {
  const path: string[] = [];
  for (const event of events) if (event.nodeId && path.at(-1) !== event.nodeId) path.push(event.nodeId);
  return path;
}

/** The peer task of each a2a.invoke node that has one, from the node's progress events. */
export function remoteTasksOf(
  events: readonly Pick<RunEvent, "type" | "nodeId" | "payload">[],
): Record<string, { peerTaskId: string; agent: string; peerState?: string }> {
  const remote: Record<string, { peerTaskId: string; agent: string; peerState?: string }> = {};
  for (const event of events) {
    if (event.type !== "node.progress" || !event.nodeId) continue;
    const progress = event.payload["progress"] as Record<string, unknown> | undefined;
    const peerTaskId = progress?.["peerTaskId"];
    if (typeof peerTaskId !== "string") continue;
    const state = progress?.["peerState"];
    remote[event.nodeId] = {
      peerTaskId,
      agent: originOf(String(progress?.["agentCardUrl"] ?? progress?.["endpoint"] ?? "")),
      ...(typeof state === "string" ? { peerState: state } : {}),
    };
  }
  return remote;
}

/** What the pending interrupt asks, as a form: labelled fields (clarification) or actions over the artifact under review (approval). */
export type ConsoleInterruptForm =
  | { kind: "questions"; fields: Array<{ id: string; label: string; required: boolean }>; remote: boolean }
  | { kind: "approval"; title: string; description?: string; actions: string[]; artifacts: Artifact[] };

export function interruptFormOf(
  context: TaskContext,
  workflow: WorkflowDefinition | undefined,
  kinds: NodeKindRegistry,
): ConsoleInterruptForm | undefined {
  const interrupt = context.interrupt;
  if (!interrupt) return undefined;
  const node = workflow?.nodes.find((n) => n.id === interrupt.nodeId);
  if (interrupt.kind === "approval") {
    const ids = Array.isArray(interrupt.data["artifactIds"]) ? (interrupt.data["artifactIds"] as string[]) : [];
    const description = typeof interrupt.data["description"] === "string" ? interrupt.data["description"] : undefined;
    return {
      kind: "approval",
      title: String(interrupt.data["title"] ?? interrupt.nodeId),
      ...(description ? { description } : {}),
      actions: Array.isArray(interrupt.data["actions"])
        ? (interrupt.data["actions"] as string[])
        : ["accept", "reject"],
      artifacts: context.artifacts.filter((a) => ids.includes(a.artifactId)),
    };
  }
  const questions = Array.isArray(interrupt.data["questions"])
    ? (interrupt.data["questions"] as Array<{ id?: unknown; question?: unknown }>)
    : [];
  // Which questions the node marks optional (a node that asks questions lists them).
  const asked = (node as { questions?: Array<{ id: string; required?: boolean }> } | undefined)?.questions;
  const required = new Map(Array.isArray(asked) ? asked.map((q) => [q.id, q.required !== false]) : []);
  return {
    kind: "questions",
    // A node that calls another agent (its kind shows a remote): the question is the remote agent's.
    remote: node !== undefined && kinds.of(node.kind)?.view?.remote?.(node as never) !== undefined,
    fields: questions.map((q) => ({
      id: String(q.id),
      label: String(q.question ?? q.id),
      required: required.get(String(q.id)) ?? true,
    })),
  };
}

const SECRET_KEY =
  /token|secret|password|passwd|credential|authorization|api[-_]?key|cookie|signature|private[-_]?key/i;
export const REDACTED = "[redacted]";

/**
 * A copy of `value` with secrets replaced: every field whose name says it holds one (tokens, credentials,
 * passwords, keys…) and the userinfo of any URL. Event payloads are shown to operators in full otherwise.
 */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        SECRET_KEY.test(k) && v !== null && v !== undefined && v !== false ? REDACTED : redactSecrets(v, depth + 1),
      ]),
    );
  }
  if (typeof value === "string" && /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*@/i.test(value))
    return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, `$1${REDACTED}@`);
  return value;
}
