import { DomainError } from "../domain/errors.js";
import type { TaskContext } from "../machine/task-context.js";
import { runStatusOf } from "../machine/task-projection.js";
import type { Logger } from "../observability/logger.js";
import { LeaseLostError } from "../store/task-store.js";
import { ShutdownSignal } from "./in-flight-work.js";
import {
  failureMessage,
  type NodeEffect,
  type NodeExecutor,
  type NodeExecutors,
  type NodeOutcome,
} from "./nodes/node-executor.js";
import { POISON_EXHAUSTED, type RecoverySettings } from "./recovery-settings.js";
import type { LiveTask, TaskRepository } from "./task-repository.js";
import type { WorkflowVersions } from "./workflow-versions.js";
import type { WorkScheduler } from "./work-scheduler.js";
import { findNode, nextStep } from "./workflow-engine.js";
import type { NodeBase, WorkflowNode } from "../workflows/workflow-types.js";

export interface TaskDriverOptions {
  repository: TaskRepository;
  /** The definition each task walks (its pinned version), and what of it this instance lacks. */
  versions: WorkflowVersions;
  executors: NodeExecutors;
  logger: Logger;
  now(): string;
  /** Poison work: how many executions of one node may die with their instance. */
  recovery: RecoverySettings;
  /** Admits node effects in fair turns by tenant, and runs suspects alone. */
  scheduler: WorkScheduler;
}

/** What a task does after a locked section: an effect to run outside the lock, look again (true), or rest (false). */
export type Next = boolean | NodeEffect;

/** A bound on transitions staged in one locked section, so a workflow that loops without effects cannot spin. */
const MAX_STAGED_STEPS = 64;

/**
 * Advances tasks: at most one driver loop per task, which alone runs the task's node effects. Under the
 * task's lock the driver stages every transition it can decide without an effect and writes them in one
 * store call (`advance`); node work that takes time runs after the lock is released, so cancels and replies
 * can commit meanwhile, and its result is staged with whatever follows it. A task with nothing to do now is
 * passivated.
 */
export class TaskDriver {
  private readonly loops = new Map<string, { again: boolean; done: Promise<void> }>();
  /** The tenant of each task being advanced here: its effects queue in that tenant's turn. */
  private readonly tenants = new Map<string, string>();
  /** Effects that need no turn: a suspect's wait to run alone, and an effect already admitted before its first write. */
  private readonly unqueued = new WeakSet<NodeEffect>();
  private stopping = false;
  /**
   * Tasks whose current node needs what this instance lacks: left to an instance that has it (the lease scan skips
   * them here). A kick still looks at them (a move may have taken the task elsewhere in its workflow).
   */
  readonly left = new Set<string>();

  constructor(private readonly options: TaskDriverOptions) {}

  /**
   * Makes sure one loop advances the task; a second kick while it runs makes it look again. `first` is the
   * effect an `advance` under the caller's lock returned (a new task's first node): the loop runs it first.
   */
  kick(taskId: string, first?: NodeEffect): void {
    if (this.stopping) {
      // A new task written as we stop (its handler cut short by the shutdown): its lease goes back, as a
      // loop's would, so the instance that takes it over does not count a crash.
      if (first) void this.release(taskId);
      return;
    }
    const existing = this.loops.get(taskId);
    if (existing) {
      existing.again = true;
      return;
    }
    const state = { again: false, done: Promise.resolve() };
    const { logger, repository } = this.options;
    state.done = (async () => {
      try {
        let next: Next = first ?? (await this.reloading(() => this.step(taskId)));
        for (;;) {
          if (this.stopping) break;
          if (typeof next === "function") {
            const effect = next;
            next = await this.reloading(() => this.finish(taskId, effect));
            continue;
          }
          if (!next) {
            if (!state.again) break;
            state.again = false;
          }
          next = await this.reloading(() => this.step(taskId));
        }
      } catch (err) {
        if (err instanceof LeaseLostError)
          logger.warn(
            { taskId, owner: repository.leaseSettings.instanceId },
            "task lease lost: another instance drives this task now",
          );
        else if (!(err instanceof ShutdownSignal)) logger.error({ err, taskId }, "task driver stopped on an error");
      } finally {
        // A lease still held here (the task is runnable but has nothing to do now, or we stop) goes back.
        await this.release(taskId);
        this.options.scheduler.release(taskId);
        this.tenants.delete(taskId);
        this.loops.delete(taskId);
        if (state.again && !this.stopping) this.kick(taskId);
      }
    })();
    this.loops.set(taskId, state);
  }

  /** Takes no more kicks and waits for the running loops (their in-flight work is aborted by the caller). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.options.scheduler.stop();
    await Promise.allSettled([...this.loops.values()].map((loop) => loop.done));
  }

  /**
   * Under the task's lock: stages every transition the task makes without an effect, then writes them in
   * one store call before answering (commit before notify, and before effect). Passivates a task with
   * nothing to do now.
   *
   * `firstWriteWithinMs`, for a new task whose creator waits for its end (a blocking send): its local effects
   * (pure handlers, which act on nothing outside this host) run here, under the creating lock, before the
   * task's first write, for at most that long. A task that ends or waits for input within it is stored in
   * ONE write, still before anyone is answered; nobody else knows its id until then. A crash before the write
   * leaves nothing (the caller's retry with the same messageId runs it again); after it, the retry finds the
   * task by its idempotency key. Past the window, or when an effect fails or its node reaches outside (it
   * flushes first), the task is written as it stands and the effect still running goes to the driver loop.
   */
  async advance(taskId: string, live: LiveTask, firstWriteWithinMs = 0): Promise<Next> {
    const { repository, scheduler } = this.options;
    this.tenants.set(taskId, live.record.tenant);
    let next = await this.stageSteps(taskId, live);
    if (firstWriteWithinMs > 0)
      next = await this.runBeforeFirstWrite(taskId, live, next, Date.now() + firstWriteWithinMs);
    await repository.flush(taskId);
    // A suspect keeps the instance alone until the store no longer shows its node started (it ended, failed,
    // waits or was cancelled), so no other work can die with it while a death would still be charged to it.
    const { suspect, nodeStarted } = live.actor.getSnapshot().context;
    if (scheduler.holds(taskId) && (next === false || !(suspect && nodeStarted))) scheduler.release(taskId);
    if (next === false) {
      repository.passivate(taskId);
      this.tenants.delete(taskId);
    }
    return next;
  }

  /** Stages transitions while the task moves without an effect (at most MAX_STAGED_STEPS). */
  private async stageSteps(taskId: string, live: LiveTask): Promise<Next> {
    let next: Next = true;
    for (let i = 0; i < MAX_STAGED_STEPS && next === true; i++) next = await this.decide(taskId, live);
    return next;
  }

  /** `advance`'s window: local effects of a task not yet stored, each outcome staged with what follows it. */
  private async runBeforeFirstWrite(taskId: string, live: LiveTask, first: Next, deadline: number): Promise<Next> {
    let next = first;
    while (typeof next === "function" && next.local && !live.stored) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      // Only in a free turn: else the effect waits for its tenant's turn in the driver loop.
      const running = this.options.scheduler.tryRun(live.record.tenant, next);
      if (!running) break;
      const ended = await endsWithin(running, remaining);
      // Still running, or failed: the task is written as it stands, and the driver loop takes the effect over.
      if (!ended) return this.withoutTurn(() => running);
      ended.outcome?.(live);
      next = await this.stageSteps(taskId, live);
    }
    return next;
  }

  /**
   * Another instance committed to the task (a reply, a cancel) since we loaded it: our write lost the version
   * race and the task was dropped from memory, so look again from the store.
   */
  private async reloading(work: () => Promise<Next>): Promise<Next> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof DomainError && err.code === "conflict") return true;
      throw err;
    }
  }

  private async release(taskId: string): Promise<void> {
    const { repository, logger } = this.options;
    if (!repository.holdsLease(taskId)) return;
    await repository
      .withLock(taskId, () => repository.releaseLease(taskId))
      .catch((err: unknown) => logger.warn({ err, taskId }, "task lease release failed; it expires on its own"));
  }

  /** One locked section: load the task and advance it; first the task's lease, unless another instance holds it. */
  private async step(taskId: string): Promise<Next> {
    const { repository } = this.options;
    if (!repository.holdsLease(taskId) && !(await repository.acquireLease(taskId))) {
      // Not runnable, or another instance drives it: what a caller's write left in memory goes.
      await repository.withLock(taskId, async () => repository.passivate(taskId));
      return false;
    }
    return repository.withLock(
      taskId,
      async (): Promise<Next> => {
        const live = await repository.load(taskId).catch((err: unknown) => {
          if (err instanceof DomainError && err.code === "task-not-found") return undefined;
          throw err;
        });
        if (!live) return false;
        return this.advance(taskId, live);
      },
      { fenced: true },
    );
  }

  /** Runs a node's effect outside the lock, then stages its outcome and what follows it in one locked section. */
  private async finish(taskId: string, effect: NodeEffect): Promise<Next> {
    const { scheduler } = this.options;
    const outcome =
      this.unqueued.has(effect) || scheduler.holds(taskId)
        ? await effect()
        : await scheduler.run(this.tenants.get(taskId) ?? "", effect);
    if (!outcome) return true;
    const { repository } = this.options;
    return repository.withLock(
      taskId,
      async () => {
        const live = await repository.load(taskId);
        outcome(live);
        return this.advance(taskId, live);
      },
      { fenced: true },
    );
  }

  /** Under the lock: stages what the task does now, by its status and (when running) the kind of its current node. */
  private async decide(taskId: string, live: LiveTask): Promise<Next> {
    const { repository, versions } = this.options;
    const snapshot = live.actor.getSnapshot();
    const status = runStatusOf(snapshot);
    const at = this.options.now();
    // Asked once per acquired lease, whatever the task does now: only a node already started counts.
    const holderDied = repository.takeLeaseFromDeadHolder(taskId);
    if (status === "pending") {
      repository.stage(live, { type: "START", at });
      return true;
    }
    if (status === "cancelling") {
      // The node being cancelled may have work to undo elsewhere (a peer's task), after our commit.
      const pinned = await versions.ofTask(live.record).catch(() => undefined);
      const { cursor } = snapshot.context;
      const workflow = cursor !== null && !pinned?.lacking(cursor) ? pinned?.workflow : undefined;
      const node = workflow && cursor !== null ? findNode(workflow, cursor) : undefined;
      const undo =
        node && workflow
          ? this.executorOf(node).onCancelled?.({ taskId, node, context: snapshot.context, workflow })
          : undefined;
      repository.stage(live, { type: "CANCELLED", at });
      return undo ?? true;
    }
    if (status !== "running") return false;
    const pinned = await versions.ofTask(live.record);
    const { cursor } = snapshot.context;
    const lacking = cursor !== null ? pinned.lacking(cursor) : undefined;
    if (lacking || !pinned.workflow) return this.leave(taskId, live, cursor, lacking, at);
    this.left.delete(taskId);
    const workflow = pinned.workflow;
    const step = nextStep(snapshot.context, workflow, versions.kinds);
    if (step.type === "complete") {
      repository.stage(live, { type: "COMPLETE", at });
      return true;
    }
    if (step.type === "fail") {
      repository.stage(live, {
        type: "FAIL",
        at,
        error: step.error,
        statusMessage: failureMessage(live.record, step.error.code),
      });
      return true;
    }
    // Nothing to do until something kicks the task again (a timer, a reply, a push): it is passivated.
    if (step.type === "wait") return false;
    const node = findNode(workflow, snapshot.context.cursor!)!;
    if (holderDied && cutShort(snapshot.context, node.id) && this.poisoned(taskId, live, node, at)) return true;
    // A suspect runs only alone on this instance: first wait for that, outside the lock, then look again.
    if (live.actor.getSnapshot().context.suspect && !this.options.scheduler.holds(taskId))
      return this.withoutTurn(() => this.options.scheduler.alone(taskId));
    return this.executorOf(node).step({ taskId, node, step, live, workflow, at });
  }

  private withoutTurn(effect: () => Promise<NodeOutcome | void>): NodeEffect {
    this.unqueued.add(effect);
    return effect;
  }

  /**
   * The current node needs what this instance lacks (a handler, peer, variable or node kind of the task's version):
   * the task is not failed. It is marked blocked with the reason (once per node and reason), stays runnable, and its
   * lease goes back, so an instance that has what it needs takes it; this one's lease scan skips it.
   */
  private leave(taskId: string, live: LiveTask, cursor: string | null, reason: string | undefined, at: string): Next {
    const { repository, logger } = this.options;
    if (cursor === null) {
      // Nothing left to run: the run ends whichever definition it walked.
      repository.stage(live, { type: "COMPLETE", at });
      return true;
    }
    const why = reason ?? `node "${cursor}" cannot be read on this instance`;
    const { blocked } = live.actor.getSnapshot().context;
    if (blocked?.nodeId !== cursor || blocked.reason !== why) {
      const instance = repository.leaseSettings.instanceId;
      repository.stage(live, { type: "BLOCK", at, nodeId: cursor, reason: why, instance });
      logger.warn(
        { taskId, nodeId: cursor, workflowId: live.record.workflowId, workflowVersion: live.record.workflowVersion },
        `task blocked: ${why}; it waits for an instance that has it`,
      );
    }
    this.left.add(taskId);
    return false;
  }

  /**
   * The node was started and never finished, and its lease was taken from a holder that never gave it back:
   * that execution died with its instance (out of memory, a native crash, SIGKILL). If it was not run alone,
   * other work may have run beside it and killed the instance: it is not charged, it becomes a suspect and runs
   * again alone. If it ran alone (a suspect), the death is its own and is counted (`crashes`); at
   * RECOVERY_MAX_ATTEMPTS the run fails instead of killing one more instance. Staged before the node runs again, so a death during that run
   * finds it recorded. A SIGTERM releases the lease and a handler's retry keeps it, so neither counts here.
   */
  private poisoned(taskId: string, live: LiveTask, node: WorkflowNode, at: string): boolean {
    const { repository, logger, recovery } = this.options;
    const charged = live.actor.getSnapshot().context.suspect === true;
    const crashes = repository.stage(live, { type: "NODE_INTERRUPTED", at, nodeId: node.id }).context.crashes ?? 0;
    if (!charged || crashes < recovery.maxAttempts) {
      logger.warn(
        { taskId, nodeId: node.id, charged, crashes, maxAttempts: recovery.maxAttempts },
        charged
          ? "node killed its instance while running alone; running it again alone"
          : "node was running when its instance died, not alone; running it again alone before charging it",
      );
      return false;
    }
    const error = {
      code: POISON_EXHAUSTED,
      message: `node "${node.id}" was running alone when its instance died ${crashes} times (RECOVERY_MAX_ATTEMPTS ${recovery.maxAttempts}); it is not run again`,
      nodeId: node.id,
    };
    logger.error(
      { taskId, nodeId: node.id, crashes, maxAttempts: recovery.maxAttempts },
      "poison work: the node killed its instance too often; the run fails",
    );
    repository.stage(live, { type: "FAIL", at, error, statusMessage: failureMessage(live.record, error.code) });
    return true;
  }

  private executorOf(node: WorkflowNode): NodeExecutor<NodeBase> {
    return this.options.executors[node.kind]!;
  }
}

/**
 * Whether a holder's death cut an execution of the node short: the node was started, and it is not resting on its
 * own durable timer. A delay runs nothing while its timer waits (its holder died at most firing the timer), so the
 * death is not its doing: it is not interrupted, nor made a suspect run alone, and its timer fires as it would have.
 * An interruption would also leave it unstarted, and the machine completes only a started node: it would never end.
 */
function cutShort(context: TaskContext, nodeId: string): boolean {
  return context.nodeStarted && context.timer?.nodeId !== nodeId;
}

/** The effect's outcome when it ends well within `ms`; undefined when it runs longer or fails (its promise keeps the failure). */
async function endsWithin(
  running: ReturnType<NodeEffect>,
  ms: number,
): Promise<{ outcome: NodeOutcome | void } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([
      running.then(
        (outcome) => ({ outcome }),
        () => undefined,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
