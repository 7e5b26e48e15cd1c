import { DomainError } from "../domain/errors.js";
import { runStatusOf } from "../machine/task-projection.js";
import type { Logger } from "../observability/logger.js";
import { ShutdownSignal } from "./in-flight-work.js";
import { failureMessage, type NodeEffect, type NodeExecutor, type NodeExecutors } from "./nodes/node-executor.js";
import type { LiveTask, TaskRepository } from "./task-repository.js";
import type { WorkflowCatalog } from "./workflow-catalog.js";
import { findNode, nextStep } from "./workflow-engine.js";
import type { WorkflowNode } from "./workflow-types.js";

export interface TaskDriverOptions {
  repository: TaskRepository;
  catalog: WorkflowCatalog;
  executors: NodeExecutors;
  logger: Logger;
  now(): string;
}

/**
 * Advances tasks one step at a time: at most one driver loop per task. Each step decides and commits under
 * the task's lock; node work that takes time runs after the lock is released, so cancels and replies can
 * commit meanwhile. A task with nothing to do now is passivated.
 */
export class TaskDriver {
  private readonly loops = new Map<string, { again: boolean; done: Promise<void> }>();
  private stopping = false;

  constructor(private readonly options: TaskDriverOptions) {}

  /** Makes sure one loop advances the task; a second kick while it runs makes it look again. */
  kick(taskId: string): void {
    if (this.stopping) return;
    const existing = this.loops.get(taskId);
    if (existing) {
      existing.again = true;
      return;
    }
    const state = { again: false, done: Promise.resolve() };
    state.done = (async () => {
      try {
        for (;;) {
          const progressed = await this.step(taskId);
          if (this.stopping) break;
          if (!progressed) {
            if (!state.again) break;
            state.again = false;
          }
        }
      } catch (err) {
        if (!(err instanceof ShutdownSignal)) this.options.logger.error({ err, taskId }, "task driver stopped on an error");
      } finally {
        this.loops.delete(taskId);
      }
    })();
    this.loops.set(taskId, state);
  }

  /** Takes no more kicks and waits for the running loops (their in-flight work is aborted by the caller). */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled([...this.loops.values()].map((loop) => loop.done));
  }

  /** One step of the run. Returns false when the task has nothing to do now (and is passivated). */
  private async step(taskId: string): Promise<boolean> {
    const { repository } = this.options;
    const decision = await repository.withLock(taskId, async (): Promise<boolean | NodeEffect> => {
      const live = await repository.load(taskId).catch((err: unknown) => {
        if (err instanceof DomainError && err.code === "task-not-found") return undefined;
        throw err;
      });
      if (!live) return false;
      const progressed = await this.decide(taskId, live);
      if (progressed === false) repository.passivate(taskId);
      return progressed;
    });
    if (typeof decision === "boolean") return decision;
    await decision();
    return true;
  }

  /** Under the lock: what the task does now, by its status and (when running) the kind of its current node. */
  private async decide(taskId: string, live: LiveTask): Promise<boolean | NodeEffect> {
    const { repository, catalog } = this.options;
    const snapshot = live.actor.getSnapshot();
    const status = runStatusOf(snapshot);
    const at = this.options.now();
    if (status === "pending") {
      await repository.commit(taskId, { type: "START", at });
      return true;
    }
    if (status === "cancelling") {
      // The node being cancelled may have work to undo elsewhere (a peer's task), after our commit.
      const workflow = catalog.get(live.record.workflowId);
      const node = workflow && snapshot.context.cursor !== null ? findNode(workflow, snapshot.context.cursor) : undefined;
      const undo = node && workflow ? this.executorOf(node).onCancelled?.({ taskId, node, context: snapshot.context, workflow }) : undefined;
      await repository.commit(taskId, { type: "CANCELLED", at });
      return undo ?? true;
    }
    if (status !== "running") return false;
    const workflow = catalog.ofTask(live.record);
    const step = nextStep(snapshot.context, workflow);
    if (step.type === "complete") {
      await repository.commit(taskId, { type: "COMPLETE", at });
      return true;
    }
    if (step.type === "fail") {
      await repository.commit(taskId, { type: "FAIL", at, error: step.error, statusMessage: failureMessage(live.record, step.error.code) });
      return true;
    }
    const node = findNode(workflow, snapshot.context.cursor!)!;
    return this.executorOf(node).step({ taskId, node, step, live, workflow, at });
  }

  private executorOf(node: WorkflowNode): NodeExecutor<WorkflowNode> {
    return this.options.executors[node.kind] as NodeExecutor<WorkflowNode>;
  }
}
