import { randomUUID } from "node:crypto";
import type { Message } from "../../domain/a2a-types.js";
import type { TaskContext } from "../../machine/task-context.js";
import { runStatusOf } from "../../machine/task-projection.js";
import type { Logger } from "../../observability/logger.js";
import type { TaskRecord } from "../../domain/task-record.js";
import type { InFlightWork } from "../in-flight-work.js";
import type { LiveTask, TaskRepository } from "../task-repository.js";
import { nodeAfter, type Step } from "../workflow-walk.js";
import type { HandlerResult, NodeBase, WorkflowDefinition } from "../../workflows/workflow-types.js";

/**
 * Work a node runs after the task's lock is released (a handler, a peer call); its node.started is already
 * stored. It may answer its outcome, which the driver stages under the lock with whatever follows it, so
 * the result and the next transitions reach the store in one write. `local`: the work acts on nothing
 * outside this host (a pure handler), so a new task whose creator waits for its end may run it before the
 * task's first write (TaskDriver.advance's `firstWriteWithinMs`).
 */
export type NodeEffect = (() => Promise<NodeOutcome | void>) & { readonly local?: boolean };

/** Marks an effect as acting on nothing outside this host (see NodeEffect). */
export function localEffect(effect: () => Promise<NodeOutcome | void>): NodeEffect {
  return Object.assign(effect, { local: true });
}

/** Under the task's lock, after an effect: stages what the effect came to (or nothing, if the task moved on meanwhile). */
export type NodeOutcome = (live: LiveTask) => void;

/** One step of a running task whose cursor is at `node`, seen under the task's lock. */
export interface NodeStep<N extends NodeBase, P = unknown> {
  taskId: string;
  node: N;
  /** The kind's `run` decision for this node, with its payload (e.g. a delay node: start its timer, or fire it). */
  step: Extract<Step<P>, { type: "run" }>;
  live: LiveTask;
  workflow: WorkflowDefinition;
  at: string;
}

/**
 * How one kind of workflow node runs. `step` runs under the task's lock and stages what the node does now
 * (`repository.stage`; the driver writes it); it answers `true` (the task moved), `false` (nothing to do
 * now: the task is passivated) or an effect that the driver runs outside the lock (so a cancel can commit
 * meanwhile), after writing everything staged. An effect with consequences outside this host flushes what
 * came before it first, so its node.started is a write of its own. Effects run at least once: after a
 * crash between node.started and the result, the node runs again.
 */
export interface NodeExecutor<N extends NodeBase, P = unknown> {
  step(args: NodeStep<N, P>): Promise<boolean | NodeEffect>;
  /** Under the lock, as the run is cancelled at this node: work to run once CANCELLED is committed. */
  onCancelled?(args: {
    taskId: string;
    node: N;
    context: TaskContext;
    workflow: WorkflowDefinition;
  }): NodeEffect | undefined;
}

/** One executor per node kind (the registry in node-registry.ts), by kind name. */
export type NodeExecutors = Readonly<Record<string, NodeExecutor<NodeBase>>>;

/** What executors share: the repository (commits under the task's lock), in-flight work, the clock. */
export interface NodeRuntime {
  repository: TaskRepository;
  inFlight: InFlightWork;
  logger: Logger;
  now(): string;
  clock: () => Date;
}

/** The agent status message of a failed run. */
export function failureMessage(record: TaskRecord, code: string): Message {
  return {
    messageId: randomUUID(),
    role: "agent",
    taskId: record.taskId,
    contextId: record.contextId,
    parts: [{ kind: "text", text: `The run failed (${code}).` }],
  };
}

/**
 * Under the lock: stages a node's result (a handler's or a service's) as its completion: artifacts without an id
 * get `<nodeId>.<index>`, and the run goes on to `next` (default: the node after it).
 */
export function stageNodeCompleted(
  repository: TaskRepository,
  live: LiveTask,
  workflow: WorkflowDefinition,
  nodeId: string,
  at: string,
  result: HandlerResult | undefined,
  next = nodeAfter(workflow, nodeId),
): void {
  const artifacts = (result?.artifacts ?? []).map((a, i) => ({
    artifactId: a.artifactId ?? `${nodeId}.${i}`,
    name: a.name,
    ...(a.description ? { description: a.description } : {}),
    parts: a.parts,
  }));
  repository.stage(live, { type: "NODE_COMPLETED", at, nodeId, output: result?.output ?? null, artifacts, next });
}

/**
 * Under the lock: whether the run is still running `nodeId` (not cancelled, moved on, or paused `immediate`).
 * A pause with `drain-current-node` lets the node that was running finish: its outcome is still recorded.
 */
export function stillRunning(live: LiveTask, nodeId: string): boolean {
  const snapshot = live.actor.getSnapshot();
  const status = runStatusOf(snapshot);
  const runs = status === "running" || (status === "paused" && snapshot.context.paused?.drain === true);
  return runs && snapshot.context.cursor === nodeId && snapshot.context.nodeStarted;
}

/**
 * Commits a node's progress from outside its run (a peer's push to a2a.invoke's receiver): under the task's lock
 * and without the lease, `decide` reads the task as stored and answers the NODE_PROGRESS to commit, or nothing.
 * TaskSupervisor.commitNodeProgress implements it.
 */
export interface NodeProgressPort {
  commitNodeProgress<T>(
    taskId: string,
    decide: (
      context: TaskContext,
      running: (nodeId: string) => boolean,
    ) => { commit?: { nodeId: string; progress: Record<string, unknown> }; answer: T },
  ): Promise<T>;
}
