import { randomUUID } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import type { Message } from "../domain/a2a-types.js";
import { DomainError, invalidParams } from "../domain/errors.js";
import { isTerminalRunStatus } from "../domain/run-status.js";
import { runStatusOf, stateMetaOf } from "../machine/task-projection.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import { assertGeneration, type TaskRecord } from "../domain/task-record.js";
import { LeaseLostError } from "../store/task-store.js";
import { InFlightWork, ShutdownSignal } from "./in-flight-work.js";
import { LeaseKeeper } from "./lease-keeper.js";
import { classifyReply, type IdempotencySeed } from "./message-idempotency.js";
import { failureMessage, stillRunning, type NodeProgressPort } from "./nodes/node-executor.js";
import type { TaskContext } from "../machine/task-context.js";
import { TaskDriver } from "./task-driver.js";
import { admitCreation } from "./task-admission.js";
import { DEFAULT_RECOVERY_SETTINGS } from "./recovery-settings.js";
import { TaskRepository } from "./task-repository.js";
import { TaskSteering } from "./task-steering.js";
import { TimerScheduler } from "./timer-scheduler.js";
import { WorkScheduler } from "./work-scheduler.js";
import { unwalkable, type WorkflowVersions } from "./workflow-versions.js";
import type { SupervisorOptions } from "./supervisor-options.js";
import type { WorkflowCatalog } from "./workflow-catalog.js";
import { firstNodeOf, interpretReply, resumeValueFromMessage } from "./workflow-engine.js";

type Reply = { message: Message } | { nodeId: string; resumeValue: Record<string, unknown>; interruptId?: string };

/**
 * The engine's front door: the operations on tasks (create, reply, resolve, cancel) and its lifecycle. The
 * work is done by its parts: the task repository (load, commit, passivate: the only user of the store), the
 * driver (steps a running task through its nodes, one executor per node kind) and the timer scheduler.
 * Readers use `reads`, never the store.
 */
export class TaskSupervisor implements NodeProgressPort {
  /** Committed tasks and their event logs, for readers. */
  readonly reads: TaskReadPort;
  /** Operator actions: pause, resume, retry, restart from a node. */
  readonly steering: TaskSteering;
  private readonly repository: TaskRepository;
  private readonly driver: TaskDriver;
  private readonly timers: TimerScheduler;
  private readonly leases: LeaseKeeper;
  private readonly inFlight = new InFlightWork();
  private readonly clock: () => Date;

  constructor(private readonly options: SupervisorOptions) {
    const clock = (this.clock = options.clock ?? (() => new Date()));
    const now = () => clock().toISOString();
    const repository =
      (this.reads =
      this.repository =
        new TaskRepository({
          store: options.store,
          hook: options.hook,
          retentionMs: options.retentionMs,
          clock,
          ...(options.leases ? { leases: options.leases } : {}),
        }));
    const executors = options.catalog.kinds.executors(
      { repository, inFlight: this.inFlight, logger: options.logger, now, clock },
      options.services,
    );
    this.driver = new TaskDriver({
      repository,
      versions: options.versions,
      executors,
      logger: options.logger,
      now,
      recovery: options.recovery ?? DEFAULT_RECOVERY_SETTINGS,
      scheduler: new WorkScheduler({
        ...options.work,
        ...(options.workAdmitted ? { admitted: options.workAdmitted } : {}),
      }),
    });
    this.timers = new TimerScheduler({
      repository,
      pollMs: options.timerPollMs,
      clock,
      logger: options.logger,
      kick: (taskId) => this.driver.kick(taskId),
      resolveInterrupt: (taskId, principal, nodeId, resumeValue) =>
        this.resolveInterrupt(taskId, principal, nodeId, resumeValue),
    });
    this.steering = new TaskSteering({
      repository,
      versions: options.versions,
      now,
      kick: (taskId) => this.driver.kick(taskId),
      abortInFlight: (taskId) => this.inFlight.abort(taskId, new DomainError("unsupported-operation", "task paused")),
    });
    this.leases = new LeaseKeeper({
      repository,
      logger: options.logger,
      clock,
      kick: (taskId) => this.driver.kick(taskId),
      cancelled: (taskId) => this.abortCancelled(taskId),
      left: this.driver.left,
    });
  }

  /** The workflow versions tasks are pinned to (console, runs API). */
  get versions(): WorkflowVersions {
    return this.options.versions;
  }

  /** This instance's lease owner id (logs, run snapshots). */
  get instanceId(): string {
    return this.repository.leaseSettings.instanceId;
  }

  /** Why this instance must take no work (its lease heartbeat is failing), or undefined (readiness). */
  leaseProblem(): string | undefined {
    return this.leases.problem;
  }

  /** Number of tasks holding an actor in memory (waiting tasks do not). */
  liveTaskCount(): number {
    return this.repository.liveCount();
  }

  /**
   * Resumes the runnable tasks no live instance holds (their lease is free or expired; the others are taken
   * over by the lease heartbeat once it expires), then starts the heartbeat and the durable timer scheduler.
   */
  async start(): Promise<{ resumed: number }> {
    const resumed = await this.leases.scan();
    this.leases.start();
    this.timers.start();
    return { resumed };
  }

  /** Stops taking work; in-flight node work is aborted and re-runs after the next start (at-least-once). */
  async stop(): Promise<void> {
    this.timers.stop();
    // The driver's loops give their leases back as they end, so other instances take over at once.
    this.leases.stop();
    const driverStopped = this.driver.stop();
    this.inFlight.abortAll(new ShutdownSignal("shutting down"));
    await driverStopped;
    await this.repository.close();
  }

  /**
   * With `idempotency`, the store refuses a second live task with the same key (DuplicateIdempotencyKeyError).
   * `firstWriteWithinMs` (a creator that waits for the end: a blocking send): the task's pure work may run
   * before its first write for that long (TaskDriver.advance), and the answer is the task as written, often
   * already final; without it, the task as of run.created.
   */
  async createTask(args: {
    workflowId: string;
    message: Message;
    contextId?: string;
    principal: Principal;
    taskId?: string;
    idempotency?: IdempotencySeed;
    firstWriteWithinMs?: number;
    admitted?: true; // already admitted by `admit` (the caller holds what it answered)
  }): Promise<TaskRecord> {
    const { catalog } = this.options;
    const workflow = catalog.get(args.workflowId);
    if (!workflow) {
      throw invalidParams(`unknown skill "${args.workflowId}"; this agent offers: ${catalog.ids().join(", ")}`, {
        skillId: args.workflowId,
      });
    }
    // Admitted before anything is written (unless the caller was, ahead of a write of its own); given back once created.
    const admitted = args.admitted ? undefined : await this.admit(args);
    return this.create(workflow, args).finally(() => admitted?.());
  }

  /** Tenant limits and overload shedding on a creation (engine/task-admission.ts): throws the refusal. */
  admit(args: Parameters<typeof admitCreation>[2]): Promise<() => void> {
    const gate = this.options.admission;
    return gate ? admitCreation(gate, this.options.store, args) : Promise.resolve(() => {});
  }

  private async create(
    workflow: NonNullable<ReturnType<WorkflowCatalog["get"]>>,
    args: Parameters<TaskSupervisor["createTask"]>[0],
  ): Promise<TaskRecord> {
    const taskId = args.taskId ?? randomUUID();
    const contextId = args.contextId ?? randomUUID();
    // The new task and what it does before its first effect or wait (started, node.started of a pure
    // handler, an approval gate's interrupt) reach the store in one write; the creator is answered with the
    // task as of run.created, and streams follow its log from there.
    // The driver's section: the creating write takes the task's lease (epoch 1) when the task is runnable.
    let created: TaskRecord | undefined;
    const section = this.repository.withLock(
      taskId,
      async () => {
        created = this.repository.stageCreate({
          taskId,
          contextId,
          workflowId: workflow.id,
          ...versionField(this.options.versions.deployedVersion(workflow.id)),
          tenant: args.principal.tenant,
          firstNode: firstNodeOf(workflow),
          message: { ...args.message, taskId, contextId },
          at: this.now(),
          ...(args.idempotency ? { idempotency: args.idempotency } : {}),
        });
        const live = await this.repository.load(taskId);
        const next = await this.driver.advance(taskId, live, args.firstWriteWithinMs);
        return { record: args.firstWriteWithinMs ? live.record : created, next };
      },
      { fenced: true },
    );
    let outcome: Awaited<typeof section>;
    try {
      outcome = await section;
    } catch (err) {
      // Only a stored task has a lease to lose: the creating write went through, then (this instance stalled
      // past the lease TTL before its next write, e.g. node.started of a handler with effects) another instance
      // took the task over. The task exists and is driven there: the creator gets it, not an error to retry.
      if (!(err instanceof LeaseLostError) || !created) throw err;
      this.options.logger.warn(
        { taskId, owner: this.repository.leaseSettings.instanceId },
        "task lease lost right after creating the task: another instance drives it now",
      );
      return created;
    }
    // A new task has no driver loop yet: the one started here runs its first effect.
    if (outcome.next !== false) this.driver.kick(taskId, typeof outcome.next === "function" ? outcome.next : undefined);
    return outcome.record;
  }

  /**
   * Progress a node learns from outside its run (a2a.invoke: a peer's push to its receiver): under the task's lock and without the lease
   * (the version check alone, like a reply or a cancel), `decide` reads the task as stored and answers the
   * NODE_PROGRESS to commit, or nothing (a duplicate, a replay, a run that moved on). Resolves once the commit is
   * stored; a concurrent write makes it read again. Nothing is driven from here: the instance holding the task's
   * lease hears of the commit and acts on it.
   */
  async commitNodeProgress<T>(
    taskId: string,
    decide: (
      context: TaskContext,
      running: (nodeId: string) => boolean,
    ) => { commit?: { nodeId: string; progress: Record<string, unknown> }; answer: T },
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.repository.withLock(taskId, async () => {
          const live = await this.repository.load(taskId);
          const decision = decide(live.actor.getSnapshot().context, (nodeId) => stillRunning(live, nodeId));
          if (decision.commit)
            await this.repository.commit(taskId, {
              type: "NODE_PROGRESS",
              at: this.now(),
              nodeId: decision.commit.nodeId,
              progress: decision.commit.progress,
            });
          return decision.answer;
        });
      } catch (err) {
        if (attempt < 3 && err instanceof DomainError && err.code === "conflict") continue;
        throw err;
      }
    }
  }

  /** `ifGeneration` (A2A 1.1 draft `ifGenerationMatch`): refused unless the task is at that generation when the reply commits. */
  async reply(
    taskId: string,
    message: Message,
    principal: Principal,
    options: { ifGeneration?: number } = {},
  ): Promise<TaskRecord> {
    return this.resolve(taskId, principal, { message }, options.ifGeneration);
  }

  /** Resolves the pending interrupt with an explicit resume value (REST interrupts API, tokens, timeouts). */
  async resolveInterrupt(
    taskId: string,
    principal: Principal,
    nodeId: string,
    resumeValue: Record<string, unknown>,
    options: { interruptId?: string } = {},
  ): Promise<TaskRecord> {
    return this.resolve(taskId, principal, {
      nodeId,
      resumeValue,
      ...(options.interruptId ? { interruptId: options.interruptId } : {}),
    });
  }

  async cancel(taskId: string, principal: Principal, reason = "cancelled by the caller"): Promise<TaskRecord> {
    const { repository } = this;
    const record = await repository.withLock(taskId, async () => {
      const live = await repository.load(taskId, principal.tenant);
      const status = runStatusOf(live.actor.getSnapshot());
      if (isTerminalRunStatus(status)) {
        throw new DomainError("task-not-cancelable", `Task cannot be canceled: it is already ${status}`, {
          taskId,
          status,
        });
      }
      if (status === "cancelling") return live.record;
      return repository.commit(taskId, { type: "CANCEL", at: this.now(), reason, cancelledBy: principal.id });
    });
    this.abortCancelled(taskId);
    return record;
  }

  /** A cancelled task's node work stops; the driver then finishes the cancel. */
  private abortCancelled(taskId: string): void {
    this.inFlight.abort(taskId, new DomainError("unsupported-operation", "task cancelled"));
    this.driver.kick(taskId);
  }

  // ------------------------------------------------------------------------------------------

  private async resolve(
    taskId: string,
    principal: Principal,
    reply: Reply,
    ifGeneration?: number,
  ): Promise<TaskRecord> {
    const { repository } = this;
    const record = await repository.withLock(taskId, async () => {
      const live = await repository.load(taskId, principal.tenant);
      const snapshot = live.actor.getSnapshot();
      const status = runStatusOf(snapshot);
      const interrupt = snapshot.context.interrupt;
      // A message already received (same messageId, same content) is a retry: it changes nothing.
      const earlier = "message" in reply ? await repository.historyMessage(live, reply.message.messageId) : undefined;
      if ("message" in reply && classifyReply(earlier ? [earlier] : [], taskId, reply.message) === "repeat")
        return live.record;
      // Under the lock, before anything is staged: two replies racing on one gate cannot both pass.
      if (ifGeneration !== undefined) assertGeneration(live.record, ifGeneration);
      if (isTerminalRunStatus(status)) {
        throw new DomainError(
          "unsupported-operation",
          `Task ${taskId} is in a terminal state (${stateMetaOf(snapshot).a2aState}) and cannot be modified; this operation is not supported`,
          { taskId, status },
        );
      }
      if (status === "paused") {
        throw new DomainError(
          "run-state-conflict",
          `Task ${taskId} is paused by an operator and takes no reply until it is resumed; send it again then`,
          { taskId, runId: taskId, runStatus: status },
        );
      }
      if (!interrupt) {
        throw new DomainError(
          "unsupported-operation",
          `Task ${taskId} is ${status} and is not waiting for input; this operation is not supported now`,
          { taskId, status },
        );
      }
      if ("nodeId" in reply && reply.nodeId !== interrupt.nodeId) {
        throw new DomainError("not-found", `node "${reply.nodeId}" has no pending interrupt in run ${taskId}`, {
          nodeId: reply.nodeId,
        });
      }
      // A signed token names one interrupt: a later interrupt on the same node (refine loop) is not its to answer.
      if ("nodeId" in reply && reply.interruptId !== undefined && reply.interruptId !== interrupt.interruptId) {
        throw new DomainError(
          "interrupt-already-resolved",
          `interrupt ${reply.interruptId} of run ${taskId} is no longer pending`,
          { nodeId: reply.nodeId, interruptId: reply.interruptId },
        );
      }
      // The gate's own version reads the reply, whatever is deployed now.
      const pinned = await this.options.versions.ofTask(live.record);
      const lacking = pinned.lacking(interrupt.nodeId);
      if (!pinned.workflow || lacking)
        throw lacking
          ? new DomainError("unavailable", `Task ${taskId} cannot take the reply on this instance: ${lacking}`, {
              taskId,
            })
          : unwalkable(pinned, taskId);
      const workflow = pinned.workflow;
      const at = this.now();
      const message = "message" in reply ? { ...reply.message, taskId, contextId: live.record.contextId } : undefined;
      const resumeValue =
        "resumeValue" in reply
          ? reply.resumeValue
          : resumeValueFromMessage(reply.message, interrupt, workflow, this.options.catalog.kinds);
      const outcome = interpretReply(
        workflow,
        snapshot.context,
        interrupt,
        resumeValue,
        { decidedBy: principal.id, decidedAt: at },
        this.options.catalog.kinds,
      );
      if (outcome.type === "ask") {
        const statusMessage: Message = {
          messageId: randomUUID(),
          role: "agent",
          taskId,
          contextId: live.record.contextId,
          parts: [
            { kind: "text", text: `Question recorded for "${interrupt.nodeId}"; the approval is still pending.` },
          ],
        };
        return repository.commit(taskId, {
          type: "ASK",
          at,
          question: outcome.question,
          askedBy: principal.id,
          statusMessage,
          ...(message ? { message } : {}),
        });
      }
      return repository.commit(taskId, {
        type: "RESUME",
        at,
        nodeId: interrupt.nodeId,
        resumeValue,
        resolvedBy: principal.id,
        next: outcome.next,
        output: outcome.output,
        ...(outcome.artifacts ? { artifacts: outcome.artifacts } : {}),
        ...(outcome.progress ? { progress: outcome.progress } : {}),
        ...(message ? { message } : {}),
        ...(outcome.thenFail
          ? { fail: outcome.thenFail, statusMessage: failureMessage(live.record, outcome.thenFail.code) }
          : {}),
      });
    });
    this.driver.kick(taskId);
    return record;
  }

  private now(): string {
    return this.clock().toISOString();
  }
}

function versionField(version: string | undefined): { workflowVersion?: string } {
  return version !== undefined ? { workflowVersion: version } : {};
}

export type { Principal };
