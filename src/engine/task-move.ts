import { DomainError, invalidParams } from "../domain/errors.js";
import type { RunStatus } from "../domain/run-status.js";
import type { TaskEvent } from "../machine/task-events.js";
import type { LiveTask } from "./task-repository.js";
import { stateError } from "./steering-errors.js";
import { unwalkable, type PinnedDefinition } from "./workflow-versions.js";
import { findNode } from "./workflow-walk.js";

/** Moving a task to another version of its workflow (TaskSteering.move). */
export interface MoveRequest {
  /** The version to go on in: one a deploy has served (so it is stored). */
  toVersion: string;
  /** The task's current node → the node of `toVersion` it goes on from; entries for other nodes are ignored. */
  nodes: Readonly<Record<string, string>>;
  reason?: string;
}

const MOVABLE: ReadonlySet<RunStatus> = new Set<RunStatus>([
  "waiting-approval",
  "waiting-input",
  "waiting-external",
  "paused",
]);

/**
 * The MOVE event for a task, or the refusal: only a waiting or paused task (not one whose node is still draining
 * a pause) moves, to a stored version other than its own, from its current node to the node the mapping names,
 * which that version must have, of the same kind.
 */
export function moveEventFor(args: {
  live: LiveTask;
  status: RunStatus;
  from: PinnedDefinition;
  to: PinnedDefinition | undefined;
  request: MoveRequest;
  by: string;
  at: string;
}): TaskEvent {
  const { live, status, from, to, request } = args;
  const { taskId, workflowId } = live.record;
  const context = live.actor.getSnapshot().context;
  if (!MOVABLE.has(status))
    throw stateError(taskId, status, `it is ${status}; only a waiting or paused task moves (pause it first)`, "moved");
  if (context.nodeStarted)
    throw stateError(taskId, status, "its node is still running (the pause drains it); move it once it ends", "moved");
  const cursor = context.cursor;
  if (cursor === null) throw stateError(taskId, status, "it has no current node", "moved");
  if (!to?.workflow)
    throw invalidParams(
      `workflow "${workflowId}" has no version "${request.toVersion}" stored (a version is stored when a deploy that serves it starts)`,
      { taskId, workflowId, toVersion: request.toVersion },
    );
  if (to.version === from.version)
    throw invalidParams(`task ${taskId} already runs version "${to.version}" of "${workflowId}"; restart it instead`, {
      taskId,
      toVersion: request.toVersion,
    });
  if (!from.workflow) throw unwalkable(from, taskId);
  const mapped = Object.hasOwn(request.nodes, cursor) ? request.nodes[cursor] : undefined;
  if (typeof mapped !== "string")
    throw invalidParams(`the node mapping names no target for the task's current node "${cursor}"`, {
      taskId,
      nodeId: cursor,
    });
  const current = findNode(from.workflow, cursor);
  const target = findNode(to.workflow, mapped);
  if (!target)
    throw invalidParams(
      `version "${to.version}" of "${workflowId}" has no node "${mapped}"; its nodes: ${to.workflow.nodes.map((n) => n.id).join(", ")}`,
      { taskId, nodeId: mapped, toVersion: to.version },
    );
  if (!current || current.kind !== target.kind)
    throw new DomainError(
      "invalid-params",
      `node "${cursor}" is a ${current?.kind ?? "missing"} node, but "${mapped}" of version "${to.version}" is a ${target.kind} node: a task moves only to a node of the same kind`,
      { taskId, nodeId: mapped, toVersion: to.version },
    );
  return {
    type: "MOVE",
    at: args.at,
    by: args.by,
    ...(from.version !== undefined ? { fromVersion: from.version } : {}),
    toVersion: to.version!,
    nodeId: mapped,
    ...(request.reason !== undefined ? { reason: request.reason } : {}),
  };
}
