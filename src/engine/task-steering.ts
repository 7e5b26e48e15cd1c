import { randomUUID } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import type { Message } from "../domain/a2a-types.js";
import { DomainError, invalidParams } from "../domain/errors.js";
import type { RunStatus } from "../domain/run-status.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { PausableStatus } from "../machine/task-context.js";
import type { DrainPolicy, TaskEvent } from "../machine/task-events.js";
import { runStatusOf } from "../machine/task-projection.js";
import type { LiveTask, TaskRepository } from "./task-repository.js";
import { stateError } from "./steering-errors.js";
import { moveEventFor, type MoveRequest } from "./task-move.js";
export type { MoveRequest };
import { unwalkable, type WorkflowVersions } from "./workflow-versions.js";
import { findNode } from "./workflow-walk.js";

export interface TaskSteeringOptions {
  repository: TaskRepository;
  /** The definition each task walks (its pinned version), and the stored versions a move may go to. */
  versions: WorkflowVersions;
  now(): string;
  /** The task has work again (resumed, retried, restarted): drive it. */
  kick(taskId: string): void;
  /** An `immediate` pause: the node work this instance runs for the task stops (its result is dropped). */
  abortInFlight(taskId: string): void;
}

const PAUSABLE: ReadonlySet<RunStatus> = new Set<PausableStatus>([
  "pending",
  "running",
  "waiting-approval",
  "waiting-input",
  "waiting-external",
]);
const RESTARTABLE: ReadonlySet<RunStatus> = new Set<RunStatus>([
  "paused",
  "failed",
  "waiting-approval",
  "waiting-input",
  "waiting-external",
]);

/** How often an action reads the task again after another instance's write won the version race. */
const CONFLICT_ATTEMPTS = 3;

/**
 * Operators steer a task: pause, resume, retry the failed node, restart from an earlier node. Each action is
 * one machine event committed under the task's lock and optimistic version, so it is written whole or not at
 * all, and of two operators acting at once one wins and the other is told the state it met. Binding-neutral:
 * the OpenWOP runs API, the host's own routes and the console call these.
 */
export class TaskSteering {
  constructor(private readonly options: TaskSteeringOptions) {}

  async pause(
    taskId: string,
    principal: Principal,
    request: { reason?: string; drainPolicy?: DrainPolicy } = {},
  ): Promise<TaskRecord> {
    const drainPolicy = request.drainPolicy ?? "drain-current-node";
    const record = await this.act(taskId, principal, (live, status) => {
      if (!PAUSABLE.has(status))
        throw stateError(taskId, status, status === "paused" ? "it is already paused" : `it is ${status}`, "paused");
      return {
        type: "PAUSE",
        at: this.options.now(),
        by: principal.id,
        drainPolicy,
        ...(request.reason !== undefined ? { reason: request.reason } : {}),
        statusMessage: pauseMessage(live.record, request.reason),
      };
    });
    if (drainPolicy === "immediate") this.options.abortInFlight(taskId);
    return record;
  }

  async resume(taskId: string, principal: Principal, request: { reason?: string } = {}): Promise<TaskRecord> {
    const record = await this.act(taskId, principal, (_live, status) => {
      if (status !== "paused") throw stateError(taskId, status, `it is ${status}, not paused`, "resumed");
      return {
        type: "UNPAUSE",
        at: this.options.now(),
        by: principal.id,
        ...(request.reason !== undefined ? { reason: request.reason } : {}),
      };
    });
    this.options.kick(taskId);
    return record;
  }

  /** A failed task runs its failed node again. */
  async retry(taskId: string, principal: Principal): Promise<TaskRecord> {
    const record = await this.act(taskId, principal, (live, status) => {
      if (status !== "failed")
        throw stateError(taskId, status, `it is ${status}; only a failed task can be retried`, "retried");
      const nodeId = live.actor.getSnapshot().context.error?.nodeId;
      if (nodeId === undefined)
        throw stateError(
          taskId,
          status,
          "it failed outside any node, so there is no failed node to run again; restart it from a named node",
          "retried",
        );
      return { type: "RETRY", at: this.options.now(), by: principal.id, nodeId };
    });
    this.options.kick(taskId);
    return record;
  }

  /** The task goes on from `nodeId`, a node it has already reached: a new visit; the history stays. */
  async restart(taskId: string, principal: Principal, nodeId: string, reason?: string): Promise<TaskRecord> {
    const record = await this.act(taskId, principal, async (live, status) => {
      const context = live.actor.getSnapshot().context;
      const pinned = await this.options.versions.ofTask(live.record);
      if (!pinned.workflow) throw unwalkable(pinned, taskId);
      const workflow = pinned.workflow;
      if (!findNode(workflow, nodeId))
        throw invalidParams(
          `workflow "${workflow.id}" has no node "${nodeId}"; its nodes: ${workflow.nodes.map((n) => n.id).join(", ")}`,
          { taskId, nodeId },
        );
      const reached = Object.keys(context.visits).filter((id) => (context.visits[id] ?? 0) > 0);
      if (context.cursor !== null && !reached.includes(context.cursor)) reached.push(context.cursor);
      if (!reached.includes(nodeId))
        throw invalidParams(
          `task ${taskId} has not reached node "${nodeId}" yet; restart it from a node it has reached: ${reached.join(", ") || "none"}`,
          { taskId, nodeId },
        );
      if (!RESTARTABLE.has(status)) {
        const why =
          status === "running" || status === "pending"
            ? `it is ${status}; pause it first, then restart it`
            : `it is ${status}`;
        throw stateError(taskId, status, why, "restarted");
      }
      return {
        type: "RESTART",
        at: this.options.now(),
        by: principal.id,
        nodeId,
        ...(reason !== undefined ? { reason } : {}),
      };
    });
    this.options.kick(taskId);
    return record;
  }

  /**
   * A waiting or paused task goes on in another version of its workflow, from the node `request.nodes` maps its
   * current node to: a new visit there, as a restart (a gate asks again). Refused, with nothing changed, when the
   * version is not stored, the mapping leaves out the current node, or the target node is missing or of another
   * kind. One MOVE event carrying the principal, committed under the task's version like any transition.
   */
  async move(taskId: string, principal: Principal, request: MoveRequest): Promise<TaskRecord> {
    const { versions, now } = this.options;
    const record = await this.act(taskId, principal, async (live, status) =>
      moveEventFor({
        live,
        status,
        from: await versions.ofTask(live.record),
        to: await versions.find(live.record.workflowId, request.toVersion),
        request,
        by: principal.id,
        at: now(),
      }),
    );
    this.options.kick(taskId);
    return record;
  }

  /**
   * Under the task's lock: `decide` reads the task as stored and answers the one event to commit, or throws
   * why not. Another instance's write between our read and our commit (a version conflict) makes it read
   * again, so a race ends in one success and one refusal naming the state the loser met.
   */
  private async act(
    taskId: string,
    principal: Principal,
    decide: (live: LiveTask, status: RunStatus) => TaskEvent | Promise<TaskEvent>,
  ): Promise<TaskRecord> {
    const { repository } = this.options;
    for (let attempt = 1; ; attempt++) {
      try {
        return await repository.withLock(taskId, async () => {
          let live = await repository.load(taskId, principal.tenant);
          let event: TaskEvent;
          try {
            event = await decide(live, runStatusOf(live.actor.getSnapshot()));
          } catch (err) {
            // A refusal read off the copy in memory may be stale (another instance acted since, and this one has
            // not written to the task): it is decided again on the task as stored before anyone is told.
            if (live.staged.length > 0) throw err;
            repository.passivate(taskId);
            live = await repository.load(taskId, principal.tenant);
            event = await decide(live, runStatusOf(live.actor.getSnapshot()));
          }
          return repository.commit(taskId, event);
        });
      } catch (err) {
        if (attempt < CONFLICT_ATTEMPTS && err instanceof DomainError && err.code === "conflict") continue;
        throw err;
      }
    }
  }
}

function pauseMessage(record: TaskRecord, reason: string | undefined): Message {
  const why = reason ? ` (${reason})` : "";
  return {
    messageId: randomUUID(),
    role: "agent",
    taskId: record.taskId,
    contextId: record.contextId,
    parts: [
      {
        kind: "text",
        text: `Paused by an operator${why}. It runs nothing and takes no reply until it is resumed.`,
      },
    ],
  };
}
