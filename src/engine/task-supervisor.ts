import { randomUUID } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import type { A2ATaskState, Message } from "../domain/a2a-types.js";
import { DomainError, invalidParams, taskNotFound } from "../domain/errors.js";
import { isTerminalRunStatus, type RunStatus } from "../domain/run-status.js";
import { applyTaskEvent, createTaskActor, restoreTaskActor, type TaskActor } from "../machine/task-actor.js";
import { taskMachine } from "../machine/task-machine.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskEvent } from "../machine/task-events.js";
import { runStatusOf, stateMetaOf, type TaskSnapshot } from "../machine/task-projection.js";
import type { Logger } from "../observability/logger.js";
import { StaleWriteError, type TaskRecord, type TaskRecordChanges, type TaskStore } from "../store/task-store.js";
import { buildPeerInterrupt, CROSS_PROTOCOL_CANCEL, peerTaskToCancel, type PeerProgress } from "./a2a-invoke.js";
import { A2AInvokeRunner, DEFAULT_A2A_INVOKE_SETTINGS } from "./a2a-invoke-runner.js";
import type { TransitionHook } from "./transition-hook.js";
import { logEventsFor } from "./transition-log.js";
import { classifyReply, type IdempotencySeed } from "./message-idempotency.js";
import type { WorkflowCatalog } from "./workflow-catalog.js";
import {
  buildInterrupt,
  feedbackFor,
  firstNodeOf,
  idempotencyKeyOf,
  interpretReply,
  nextStep,
  nodeAfter,
  resumeValueFromMessage,
  runInputOf,
  SYSTEM_TIMEOUT,
} from "./workflow-engine.js";
import { HandlerError, type A2AInvokeNode, type HandlerResult, type TaskHandler, type TaskNode } from "./workflow-types.js";

export interface SupervisorOptions {
  store: TaskStore;
  catalog: WorkflowCatalog;
  handlers: Record<string, TaskHandler>;
  hook: TransitionHook;
  logger: Logger;
  /** How long a terminal task stays readable. */
  retentionMs: number;
  timerPollMs: number;
  clock?: () => Date;
  /** Runs `a2a.invoke` nodes. Without it such nodes fail with `external_call_failed` (no client configured). */
  peerInvoker?: A2AInvokeRunner;
}

interface LiveTask {
  actor: TaskActor;
  record: TaskRecord;
}

class ShutdownSignal extends Error {}

/**
 * Owns the live task actors. Every state change goes through `commit`: apply the event to the actor, write
 * the snapshot and its log events in one store write, then publish to the transition hook. Tasks that
 * wait (for input, a timer, or an operator) are passivated: their actor is stopped and dropped, and
 * rehydrated from the store when a reply, cancel or timer arrives.
 */
export class TaskSupervisor {
  private readonly live = new Map<string, LiveTask>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly drivers = new Map<string, { again: boolean; done: Promise<void> }>();
  private readonly inFlightHandlers = new Map<string, AbortController>();
  private timerLoop: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly clock: () => Date;
  private readonly peerInvoker: A2AInvokeRunner;

  constructor(private readonly options: SupervisorOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.peerInvoker = options.peerInvoker ?? new A2AInvokeRunner(undefined, DEFAULT_A2A_INVOKE_SETTINGS, options.logger, this.clock);
  }

  get store(): TaskStore {
    return this.options.store;
  }

  /** Number of tasks holding an actor in memory (waiting tasks do not). */
  liveTaskCount(): number {
    return this.live.size;
  }

  // ---------------------------------------------------------------- lifecycle

  /** Resumes every non-terminal task from the store and starts the durable timer scheduler. */
  async start(): Promise<{ resumed: number }> {
    const active = await this.options.store.listActive();
    let resumed = 0;
    for (const record of active) {
      if (record.status === "pending" || record.status === "running" || record.status === "cancelling") {
        this.kick(record.taskId);
        resumed++;
      }
    }
    this.scheduleTimerPoll();
    return { resumed };
  }

  /** Stops taking work; in-flight handlers are aborted and re-run after the next start (at-least-once). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timerLoop);
    for (const controller of this.inFlightHandlers.values()) controller.abort(new ShutdownSignal("shutting down"));
    await Promise.allSettled([...this.drivers.values()].map((d) => d.done));
    await Promise.allSettled([...this.locks.values()]);
    for (const live of this.live.values()) live.actor.stop();
    this.live.clear();
  }

  // ---------------------------------------------------------------- operations

  /** With `idempotency`, the store refuses a second live task with the same key (DuplicateIdempotencyKeyError). */
  async createTask(args: { workflowId: string; message: Message; contextId?: string; principal: Principal; taskId?: string; idempotency?: IdempotencySeed }): Promise<TaskRecord> {
    const workflow = this.options.catalog.get(args.workflowId);
    if (!workflow) {
      throw invalidParams(`unknown skill "${args.workflowId}"; this agent offers: ${this.options.catalog.ids().join(", ")}`, { skillId: args.workflowId });
    }
    const taskId = args.taskId ?? randomUUID();
    const contextId = args.contextId ?? randomUUID();
    const at = this.now();
    const message: Message = { ...args.message, taskId, contextId };
    const actor = createTaskActor({ taskId, contextId, workflowId: workflow.id, tenant: args.principal.tenant, firstNode: firstNodeOf(workflow), message });
    const snapshot = actor.getSnapshot();
    const events = logEventsFor({ event: { type: "CREATED", at }, after: snapshot, firstSequence: 0 });
    const record: TaskRecord = {
      taskId,
      tenant: args.principal.tenant,
      contextId,
      workflowId: workflow.id,
      version: events.length - 1,
      createdAt: at,
      ...this.changesFor(snapshot, at),
      ...(args.idempotency ? { idempotencyKey: args.idempotency.key, requestFingerprint: args.idempotency.fingerprint } : {}),
    };
    await this.withLock(taskId, async () => {
      await this.options.store.create(record, events);
      this.live.set(taskId, { actor, record });
      this.options.hook.publish({ record, context: snapshot.context, events });
    });
    this.kick(taskId);
    return record;
  }

  async get(taskId: string, tenant: string): Promise<TaskRecord> {
    const record = this.live.get(taskId)?.record ?? (await this.options.store.get(taskId));
    if (!record || record.tenant !== tenant) throw taskNotFound(taskId);
    return record;
  }

  /** The machine context of a stored record (history, artifacts, interrupt). */
  contextOf(record: TaskRecord): TaskContext {
    return (record.snapshot as { context: TaskContext }).context;
  }

  /** A caller's message to an existing task: resolves its pending interrupt. */
  async reply(taskId: string, message: Message, principal: Principal): Promise<TaskRecord> {
    return this.resolve(taskId, principal, { message });
  }

  /** Resolves the pending interrupt with an explicit resume value (REST interrupts API, tokens, timeouts). */
  async resolveInterrupt(
    taskId: string,
    principal: Principal,
    nodeId: string,
    resumeValue: Record<string, unknown>,
    options: { interruptId?: string } = {},
  ): Promise<TaskRecord> {
    return this.resolve(taskId, principal, { nodeId, resumeValue, ...(options.interruptId ? { interruptId: options.interruptId } : {}) });
  }

  async cancel(taskId: string, principal: Principal, reason = "cancelled by the caller"): Promise<TaskRecord> {
    const record = await this.withLock(taskId, async () => {
      const live = await this.loadLive(taskId, principal.tenant);
      const status = runStatusOf(live.actor.getSnapshot());
      if (isTerminalRunStatus(status)) {
        throw new DomainError("task-not-cancelable", `Task cannot be canceled: it is already ${status}`, { taskId, status });
      }
      if (status === "cancelling") return live.record;
      return this.commit(taskId, { type: "CANCEL", at: this.now(), reason, cancelledBy: principal.id });
    });
    this.inFlightHandlers.get(taskId)?.abort(new DomainError("unsupported-operation", "task cancelled"));
    this.kick(taskId);
    return record;
  }

  // ---------------------------------------------------------------- internals

  private async resolve(
    taskId: string,
    principal: Principal,
    reply: { message: Message } | { nodeId: string; resumeValue: Record<string, unknown>; interruptId?: string },
  ): Promise<TaskRecord> {
    const record = await this.withLock(taskId, async () => {
      const live = await this.loadLive(taskId, principal.tenant);
      const snapshot = live.actor.getSnapshot();
      const status = runStatusOf(snapshot);
      const interrupt = snapshot.context.interrupt;
      // A message already received (same messageId, same content) is a retry: it changes nothing.
      if ("message" in reply && classifyReply(snapshot.context.history, taskId, reply.message) === "repeat") return live.record;
      if (isTerminalRunStatus(status)) {
        throw new DomainError("unsupported-operation", `Task ${taskId} is in a terminal state (${stateMetaOf(snapshot).a2aState}) and cannot be modified; this operation is not supported`, { taskId, status });
      }
      if (!interrupt) {
        throw new DomainError("unsupported-operation", `Task ${taskId} is ${status} and is not waiting for input; this operation is not supported now`, { taskId, status });
      }
      if ("nodeId" in reply && reply.nodeId !== interrupt.nodeId) {
        throw new DomainError("not-found", `node "${reply.nodeId}" has no pending interrupt in run ${taskId}`, { nodeId: reply.nodeId });
      }
      // A signed token names one interrupt: a later interrupt on the same node (refine loop) is not its to answer.
      if ("nodeId" in reply && reply.interruptId !== undefined && reply.interruptId !== interrupt.interruptId) {
        throw new DomainError("interrupt-already-resolved", `interrupt ${reply.interruptId} of run ${taskId} is no longer pending`, { nodeId: reply.nodeId, interruptId: reply.interruptId });
      }
      const workflow = this.workflowOf(live.record);
      const at = this.now();
      const message = "message" in reply ? { ...reply.message, taskId, contextId: live.record.contextId } : undefined;
      const resumeValue = "resumeValue" in reply ? reply.resumeValue : resumeValueFromMessage(reply.message, interrupt, workflow);
      const outcome = interpretReply(workflow, snapshot.context, interrupt, resumeValue, { decidedBy: principal.id, decidedAt: at });
      if (outcome.type === "ask") {
        const statusMessage: Message = {
          messageId: randomUUID(),
          role: "agent",
          taskId,
          contextId: live.record.contextId,
          parts: [{ kind: "text", text: `Question recorded for "${interrupt.nodeId}"; the approval is still pending.` }],
        };
        return this.commit(taskId, { type: "ASK", at, question: outcome.question, askedBy: principal.id, statusMessage, ...(message ? { message } : {}) });
      }
      return this.commit(taskId, {
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
        ...(outcome.thenFail ? { fail: outcome.thenFail, statusMessage: this.failureMessage(live.record, outcome.thenFail.code) } : {}),
      });
    });
    this.kick(taskId);
    return record;
  }

  /** Applies one event and commits it. Must run under the task's lock. */
  private async commit(taskId: string, event: TaskEvent): Promise<TaskRecord> {
    const live = await this.loadLive(taskId);
    const { before, after } = applyTaskEvent(live.actor, event);
    const events = logEventsFor({ event, before, after, firstSequence: live.record.version + 1 });
    const changes = this.changesFor(after, event.at);
    try {
      await this.options.store.commit(taskId, live.record.version, changes, events);
    } catch (err) {
      // The actor already moved; forget it so the next access rehydrates the committed state.
      this.forget(taskId);
      if (err instanceof StaleWriteError) {
        throw new DomainError("conflict", `Task ${taskId} was changed concurrently; retry the request`, { taskId }, { cause: err });
      }
      throw err;
    }
    live.record = { ...live.record, ...changes, version: events[events.length - 1]!.sequence };
    this.options.hook.publish({ record: live.record, context: after.context, events });
    return live.record;
  }

  private changesFor(snapshot: TaskSnapshot, at: string): TaskRecordChanges {
    const status = runStatusOf(snapshot);
    const meta = stateMetaOf(snapshot);
    const { context } = snapshot;
    const a2a: A2ATaskState = {
      taskId: context.taskId,
      runId: context.taskId,
      contextId: context.contextId,
      state: meta.a2aState,
      ...(meta.interruptKind ? { interruptKind: meta.interruptKind } : {}),
      updatedAt: at,
    };
    return {
      status,
      a2a,
      snapshot: snapshotForStore(snapshot),
      updatedAt: at,
      expireAt: isTerminalRunStatus(status) ? new Date(Date.parse(at) + this.options.retentionMs).toISOString() : null,
      timerDueAt: context.timer?.dueAt ?? null,
    };
  }

  private async loadLive(taskId: string, tenant?: string): Promise<LiveTask> {
    let live = this.live.get(taskId);
    if (!live) {
      const record = await this.options.store.get(taskId);
      if (!record) throw taskNotFound(taskId);
      live = { actor: restoreTaskActor(record.snapshot), record };
      this.live.set(taskId, live);
    }
    if (tenant !== undefined && live.record.tenant !== tenant) throw taskNotFound(taskId);
    return live;
  }

  private forget(taskId: string): void {
    this.live.get(taskId)?.actor.stop();
    this.live.delete(taskId);
  }

  private workflowOf(record: TaskRecord) {
    const workflow = this.options.catalog.get(record.workflowId);
    if (!workflow) throw new DomainError("internal", `workflow ${record.workflowId} of task ${record.taskId} is no longer loaded`);
    return workflow;
  }

  /** Serializes everything that touches one task. */
  private withLock<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(taskId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(taskId, tail);
    void tail.then(() => {
      if (this.locks.get(taskId) === tail) this.locks.delete(taskId);
    });
    return run;
  }

  private now(): string {
    return this.clock().toISOString();
  }

  private failureMessage(record: TaskRecord, code: string): Message {
    return { messageId: randomUUID(), role: "agent", taskId: record.taskId, contextId: record.contextId, parts: [{ kind: "text", text: `The run failed (${code}).` }] };
  }

  // ---------------------------------------------------------------- the driver

  /** Makes sure one driver advances the task; a second kick while it runs makes it look again. */
  kick(taskId: string): void {
    if (this.stopping) return;
    const existing = this.drivers.get(taskId);
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
        this.drivers.delete(taskId);
      }
    })();
    this.drivers.set(taskId, state);
  }

  /** One step of the run. Returns false when the task has nothing to do now (and is passivated). */
  private async step(taskId: string): Promise<boolean> {
    type Work = { run: TaskNode; context: TaskContext } | { invoke: A2AInvokeNode; context: TaskContext } | { cancelPeer: PeerProgress };
    const decision = await this.withLock(taskId, async (): Promise<Work | boolean> => {
      const live = await this.loadLive(taskId).catch((err: unknown) => {
        if (err instanceof DomainError && err.code === "task-not-found") return undefined;
        throw err;
      });
      if (!live) return false;
      const snapshot = live.actor.getSnapshot();
      const status: RunStatus = runStatusOf(snapshot);
      const at = this.now();
      if (status === "pending") return !!(await this.commit(taskId, { type: "START", at }));
      if (status === "cancelling") {
        // A live remote task of an a2a.invoke node is cancelled too (after our commit, best effort).
        const peer = peerTaskToCancel(snapshot.context, this.options.catalog.get(live.record.workflowId), (nodeId) => idempotencyKeyOf(snapshot.context, nodeId));
        await this.commit(taskId, { type: "CANCELLED", at });
        return peer ? { cancelPeer: peer } : true;
      }
      if (status !== "running") {
        this.forget(taskId);
        return false;
      }
      const workflow = this.workflowOf(live.record);
      const step = nextStep(snapshot.context, workflow);
      switch (step.type) {
        case "complete":
          await this.commit(taskId, { type: "COMPLETE", at });
          return true;
        case "fail":
          await this.commit(taskId, { type: "FAIL", at, error: step.error, statusMessage: this.failureMessage(live.record, step.error.code) });
          return true;
        case "interrupt": {
          const built = buildInterrupt(step.node, snapshot.context, at, { interruptId: randomUUID(), messageId: randomUUID() });
          await this.commit(taskId, { type: "INTERRUPT", at, ...built });
          return true;
        }
        case "start-delay":
          await this.commit(taskId, { type: "NODE_STARTED", at, nodeId: step.node.id });
          await this.commit(taskId, {
            type: "TIMER_SET",
            at,
            timer: { nodeId: step.node.id, purpose: "delay", dueAt: new Date(Date.parse(at) + step.node.durationMs).toISOString() },
          });
          return true;
        case "wait-timer": {
          const timer = snapshot.context.timer!;
          if (Date.parse(timer.dueAt) > this.clock().getTime()) {
            this.forget(taskId);
            return false;
          }
          await this.commit(taskId, { type: "NODE_COMPLETED", at, nodeId: timer.nodeId, output: { firedAt: at }, artifacts: [], next: nodeAfter(workflow, timer.nodeId) });
          return true;
        }
        case "run-task": {
          const record = await this.commit(taskId, { type: "NODE_STARTED", at, nodeId: step.node.id });
          return { run: step.node, context: this.contextOf(record) };
        }
        case "invoke-peer": {
          const record = await this.commit(taskId, { type: "NODE_STARTED", at, nodeId: step.node.id });
          return { invoke: step.node, context: this.contextOf(record) };
        }
      }
    });
    if (typeof decision === "boolean") return decision;
    if ("cancelPeer" in decision) await this.peerInvoker.cancelPeer(decision.cancelPeer, `run ${taskId} was cancelled`);
    else if ("invoke" in decision) await this.invokePeer(taskId, decision.invoke, decision.context);
    else await this.runHandler(taskId, decision.run, decision.context);
    return true;
  }

  /**
   * Runs an a2a.invoke node outside the lock (so cancel can commit meanwhile; cancel aborts it), committing
   * the peer's progress as it comes, then commits what the peer's task came to.
   */
  private async invokePeer(taskId: string, node: A2AInvokeNode, context: TaskContext): Promise<void> {
    const controller = new AbortController();
    this.inFlightHandlers.set(taskId, controller);
    let outcome: Awaited<ReturnType<A2AInvokeRunner["run"]>>;
    try {
      outcome = await this.peerInvoker.run({
        taskId,
        node,
        context,
        signal: controller.signal,
        record: (progress) =>
          this.withLock(taskId, async () => {
            if (!(await this.stillRunning(taskId, node.id))) return false;
            await this.commit(taskId, { type: "NODE_PROGRESS", at: this.now(), nodeId: node.id, progress: progress as unknown as Record<string, unknown> });
            return true;
          }),
      });
    } finally {
      this.inFlightHandlers.delete(taskId);
    }
    if (controller.signal.reason instanceof ShutdownSignal) throw controller.signal.reason;
    if (outcome.type === "stopped") return;
    await this.withLock(taskId, async () => {
      if (!(await this.stillRunning(taskId, node.id))) return; // cancelled or paused meanwhile; dropped
      const at = this.now();
      const live = await this.loadLive(taskId);
      const workflow = this.workflowOf(live.record);
      switch (outcome.type) {
        case "complete":
          await this.commit(taskId, { type: "NODE_COMPLETED", at, nodeId: node.id, output: outcome.output, artifacts: outcome.artifacts, next: nodeAfter(workflow, node.id) });
          return;
        case "interrupt": {
          const peer = { agentCardUrl: outcome.agentCardUrl, task: outcome.task, ...(outcome.subkind ? { subkind: outcome.subkind } : {}) };
          const built = buildPeerInterrupt(node, live.actor.getSnapshot().context, at, { interruptId: randomUUID(), messageId: randomUUID() }, peer);
          await this.commit(taskId, { type: "INTERRUPT", at, ...built });
          return;
        }
        case "fail":
          await this.commit(taskId, { type: "FAIL", at, error: outcome.error, statusMessage: this.failureMessage(live.record, outcome.error.code) });
          return;
        case "cancel":
          // A cancel on the peer's side wins too: our run goes to cancelled (the driver commits CANCELLED next).
          await this.commit(taskId, { type: "CANCEL", at, reason: CROSS_PROTOCOL_CANCEL, cancelledBy: `a2a-peer:${outcome.agentCardUrl}` });
          return;
      }
    });
  }

  /** Under the lock: whether the run is still running `nodeId` (not cancelled, paused or moved on). */
  private async stillRunning(taskId: string, nodeId: string): Promise<boolean> {
    const snapshot = (await this.loadLive(taskId)).actor.getSnapshot();
    return runStatusOf(snapshot) === "running" && snapshot.context.cursor === nodeId && snapshot.context.nodeStarted;
  }

  /** Runs a task node's handler outside the lock (so cancel can commit meanwhile), then commits its result. */
  private async runHandler(taskId: string, node: TaskNode, context: TaskContext): Promise<void> {
    const workflow = this.options.catalog.get(context.workflowId)!;
    const handler = this.options.handlers[node.handler];
    const controller = new AbortController();
    this.inFlightHandlers.set(taskId, controller);
    let result: HandlerResult | undefined;
    let failure: { code: string; message: string; retryable: boolean } | undefined;
    try {
      if (!handler) throw new HandlerError("handler_missing", `no handler named "${node.handler}" is registered`);
      result = await handler({
        taskId,
        runId: taskId,
        nodeId: node.id,
        idempotencyKey: idempotencyKeyOf(context, node.id),
        attempt: context.attempt,
        params: node.params ?? {},
        input: runInputOf(context),
        outputs: context.outputs,
        feedback: feedbackFor(context, workflow, node.id),
        signal: controller.signal,
      });
    } catch (err) {
      if (controller.signal.aborted) {
        if (controller.signal.reason instanceof ShutdownSignal) throw controller.signal.reason;
        return; // cancelled: the driver's next step commits CANCELLED
      }
      failure =
        err instanceof HandlerError
          ? { code: err.code, message: err.message, retryable: err.retryable }
          : { code: "handler_error", message: `handler "${node.handler}" threw: ${(err as Error)?.message ?? String(err)}`, retryable: false };
      this.options.logger.warn({ err, taskId, nodeId: node.id }, "task handler failed");
    } finally {
      this.inFlightHandlers.delete(taskId);
    }
    if (controller.signal.aborted) return;
    await this.withLock(taskId, async () => {
      const at = this.now();
      const status = runStatusOf((await this.loadLive(taskId)).actor.getSnapshot());
      if (status !== "running") return; // cancelled or paused while the handler ran; its result is dropped
      if (failure) {
        const maxAttempts = node.retry?.maxAttempts ?? 1;
        if (failure.retryable && context.attempt < maxAttempts) return; // the next step starts the node again
        const error = { code: failure.code, message: failure.message, nodeId: node.id };
        const live = await this.loadLive(taskId);
        await this.commit(taskId, { type: "FAIL", at, error, statusMessage: this.failureMessage(live.record, error.code) });
        return;
      }
      const artifacts = (result?.artifacts ?? []).map((a, i) => ({
        artifactId: a.artifactId ?? `${node.id}.${i}`,
        name: a.name,
        ...(a.description ? { description: a.description } : {}),
        parts: a.parts,
      }));
      await this.commit(taskId, { type: "NODE_COMPLETED", at, nodeId: node.id, output: result?.output ?? null, artifacts, next: nodeAfter(workflow, node.id) });
    });
  }

  // ---------------------------------------------------------------- durable timers

  private scheduleTimerPoll(): void {
    if (this.stopping) return;
    this.timerLoop = setTimeout(() => {
      void this.fireDueTimers()
        .catch((err: unknown) => this.options.logger.error({ err }, "timer scheduler failed"))
        .finally(() => this.scheduleTimerPoll());
    }, this.options.timerPollMs);
    this.timerLoop.unref();
  }

  /** Timers are stored with their due time, so they fire after a restart too. */
  async fireDueTimers(): Promise<void> {
    const due = await this.options.store.dueTimers(this.clock(), 100);
    for (const taskId of due) {
      const record = await this.options.store.get(taskId);
      if (!record) continue;
      const timer = this.contextOf(record).timer;
      if (timer?.purpose === "interrupt-timeout") await this.expireInterrupt(record).catch((err: unknown) => this.options.logger.warn({ err, taskId }, "interrupt timeout failed"));
      else this.kick(taskId);
    }
  }

  /** An approval gate that times out is auto-rejected; a clarification that times out fails the run. */
  private async expireInterrupt(record: TaskRecord): Promise<void> {
    const system: Principal = { tenant: record.tenant, id: SYSTEM_TIMEOUT, scopes: "*" };
    const interrupt = this.contextOf(record).interrupt;
    if (!interrupt) return;
    if (interrupt.kind === "approval") {
      await this.resolveInterrupt(record.taskId, system, interrupt.nodeId, { action: "reject", reason: "timeout" });
      return;
    }
    await this.withLock(record.taskId, async () => {
      const error = { code: `${interrupt.kind}_timeout`, message: `no answer for "${interrupt.nodeId}" before its deadline`, nodeId: interrupt.nodeId };
      await this.commit(record.taskId, { type: "FAIL", at: this.now(), error, statusMessage: this.failureMessage(record, error.code) });
    });
    this.kick(record.taskId);
  }
}

/** The persisted XState snapshot as plain JSON (no class instances), so every store keeps it the same way. */
function snapshotForStore(snapshot: TaskSnapshot): unknown {
  return JSON.parse(JSON.stringify(taskMachine.getPersistedSnapshot(snapshot)));
}

export type { Principal };
