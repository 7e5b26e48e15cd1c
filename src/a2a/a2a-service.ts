import type { Message, PushNotificationConfig, StreamEvent, Task, TaskStatusUpdate } from "../domain/a2a-types.js";
import { DomainError, invalidParams } from "../domain/errors.js";
import { isFinalA2AState, isTerminalA2AState } from "../domain/run-status.js";
import { requireScope, type Principal } from "../auth/principal.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { CommittedTransition, TransitionHook } from "../engine/transition-hook.js";
import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import type { RunEvent, TaskRecord } from "../store/task-store.js";
import type { AgentCard } from "./agent-card.js";
import { SubscriptionQueue } from "./subscription-queue.js";
import { taskView, type HistoryLimit } from "./task-view.js";

export interface SendParams {
  message: Message;
  /** false = return as soon as the task is committed (0.3 `blocking:false`, 1.0 `returnImmediately`). */
  blocking: boolean;
  history?: HistoryLimit;
  pushNotificationConfig?: PushNotificationConfig;
  metadata?: Record<string, unknown>;
}

export interface CallContext {
  principal: Principal;
  /** Abort when the caller goes away (streams stop, nothing else is undone). */
  signal?: AbortSignal;
}

export interface A2AServiceOptions {
  supervisor: TaskSupervisor;
  hook: TransitionHook;
  catalog: WorkflowCatalog;
  card: AgentCard;
  /** Updates a subscriber may fall behind before it is dropped. */
  subscriberBuffer: number;
  /** A blocking send that has not reached a final state by then returns the task as it is. */
  blockingTimeoutMs: number;
}

/**
 * The version-neutral A2A operations. Protocol bindings (JSON-RPC, gRPC/Connect, HTTP+JSON, any A2A version)
 * decode their wire shapes into these calls and encode the results; none of them holds task logic.
 */
export class A2AService {
  constructor(private readonly options: A2AServiceOptions) {}

  get agentCard(): AgentCard {
    return this.options.card;
  }

  async sendMessage(params: SendParams, ctx: CallContext): Promise<Task> {
    const record = await this.accept(params, ctx);
    const settled = params.blocking ? await this.waitUntilFinal(record, ctx) : record;
    return this.view(settled, params.history);
  }

  /** The Task first, then every status and artifact update in commit order, until a final state. */
  async *streamMessage(params: SendParams, ctx: CallContext): AsyncGenerator<StreamEvent> {
    const record = await this.accept(params, ctx);
    yield* this.observe(record, ctx, params.history);
  }

  async getTask(taskId: string, history: HistoryLimit, ctx: CallContext): Promise<Task> {
    requireScope(ctx.principal, "runs:read");
    return this.view(await this.options.supervisor.get(taskId, ctx.principal.tenant), history);
  }

  async cancelTask(taskId: string, ctx: CallContext): Promise<Task> {
    requireScope(ctx.principal, "runs:cancel");
    const record = await this.options.supervisor.cancel(taskId, ctx.principal);
    return this.view(await this.waitUntil(record, ctx, (r) => isTerminalA2AState(r.a2a.state), this.options.blockingTimeoutMs), undefined);
  }

  /** Re-attach to a task: read-only, it never re-runs anything. A terminal task answers its Task and closes. */
  async *subscribe(taskId: string, ctx: CallContext): AsyncGenerator<StreamEvent> {
    requireScope(ctx.principal, "runs:read");
    const record = await this.options.supervisor.get(taskId, ctx.principal.tenant);
    yield* this.observe(record, ctx, undefined);
  }

  async getA2ATaskState(taskId: string, ctx: CallContext) {
    requireScope(ctx.principal, "runs:read");
    return (await this.options.supervisor.get(taskId, ctx.principal.tenant)).a2a;
  }

  pushNotificationsUnsupported(): never {
    throw new DomainError("push-not-supported", "Push Notification is not supported by this agent yet (capabilities.pushNotifications is false)");
  }

  // ------------------------------------------------------------------------------------------

  private async accept(params: SendParams, ctx: CallContext): Promise<TaskRecord> {
    const { message } = params;
    if (message.role !== "user") throw invalidParams(`message.role must be "user" (got "${message.role}")`);
    if (params.pushNotificationConfig) this.pushNotificationsUnsupported();
    const supervisor = this.options.supervisor;
    if (message.taskId) {
      requireScope(ctx.principal, "approvals:respond");
      const existing = await supervisor.get(message.taskId, ctx.principal.tenant);
      if (message.contextId && message.contextId !== existing.contextId) {
        throw invalidParams(`message.contextId "${message.contextId}" does not match the contextId of task ${existing.taskId}`, { taskId: existing.taskId });
      }
      return supervisor.reply(existing.taskId, message, ctx.principal);
    }
    requireScope(ctx.principal, "runs:create");
    const skillId = skillIdOf(message, params.metadata) ?? this.options.catalog.defaultWorkflowId;
    return supervisor.createTask({ workflowId: skillId, message, ...(message.contextId ? { contextId: message.contextId } : {}), principal: ctx.principal });
  }

  private view(record: TaskRecord, history: HistoryLimit): Task {
    return taskView(record, this.options.supervisor.contextOf(record), history);
  }

  private waitUntilFinal(record: TaskRecord, ctx: CallContext): Promise<TaskRecord> {
    return this.waitUntil(record, ctx, (r) => isFinalA2AState(r.a2a.state), this.options.blockingTimeoutMs);
  }

  /** Resolves with the first committed record that satisfies `done` (or the latest one at the timeout). */
  private async waitUntil(start: TaskRecord, ctx: CallContext, done: (r: TaskRecord) => boolean, timeoutMs: number): Promise<TaskRecord> {
    let latest = start;
    let resolve!: (r: TaskRecord) => void;
    const settled = new Promise<TaskRecord>((r) => (resolve = r));
    const unsubscribe = this.options.hook.onTask(start.taskId, ({ record }) => {
      if (record.version > latest.version) latest = record;
      if (done(record)) resolve(record);
    });
    const timer = setTimeout(() => resolve(latest), timeoutMs);
    const onAbort = () => resolve(latest);
    ctx.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      // Catch what committed between the operation and the subscription.
      const current = await this.options.supervisor.get(start.taskId, ctx.principal.tenant);
      if (current.version > latest.version) latest = current;
      if (done(latest)) return latest;
      return await settled;
    } finally {
      clearTimeout(timer);
      unsubscribe();
      ctx.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Streams a task from `start`: the Task as of that commit, then every A2A update after it. Live commits
   * arrive through the transition hook; any sequence the hook did not deliver (another process wrote it,
   * or it happened before we subscribed) is read from the store, so nothing is skipped or repeated.
   */
  private async *observe(start: TaskRecord, ctx: CallContext, history: HistoryLimit): AsyncGenerator<StreamEvent> {
    const { supervisor, hook } = this.options;
    const queue = new SubscriptionQueue<CommittedTransition>(this.options.subscriberBuffer);
    const unsubscribe = hook.onTask(start.taskId, (t) => queue.push(t));
    const onAbort = () => queue.close();
    ctx.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      yield { kind: "task", task: this.view(start, history) };
      if (isFinalA2AState(start.a2a.state)) return;
      let next = start.version + 1;
      const emit = function* (events: RunEvent[]): Generator<StreamEvent, boolean> {
        for (const event of events) {
          if (event.sequence < next) continue;
          next = event.sequence + 1;
          for (const update of updatesOf(start, event)) {
            yield update;
            if (update.kind === "status-update" && update.final) return true;
          }
        }
        return false;
      };
      if (yield* emit(await supervisor.store.readEvents(start.taskId, next))) return;
      for (;;) {
        const transition = await queue.next();
        if (!transition) return;
        const first = transition.events[0];
        if (first && first.sequence > next) {
          if (yield* emit(await supervisor.store.readEvents(start.taskId, next, first.sequence - next))) return;
        }
        if (yield* emit(transition.events)) return;
      }
    } finally {
      unsubscribe();
      ctx.signal?.removeEventListener("abort", onAbort);
    }
  }
}

function updatesOf(task: TaskRecord, event: RunEvent): StreamEvent[] {
  const updates: StreamEvent[] = [];
  if (event.a2a?.artifact) {
    updates.push({ kind: "artifact-update", taskId: task.taskId, contextId: task.contextId, artifact: event.a2a.artifact, append: false, lastChunk: true });
  }
  if (event.a2a?.status) {
    const update: TaskStatusUpdate = {
      kind: "status-update",
      taskId: task.taskId,
      contextId: task.contextId,
      status: event.a2a.status,
      final: isFinalA2AState(event.a2a.status.state),
      ...(event.a2a.metadata ? { metadata: event.a2a.metadata } : {}),
    };
    updates.push(update);
  }
  return updates;
}

function skillIdOf(message: Message, metadata: Record<string, unknown> | undefined): string | undefined {
  for (const source of [message.metadata, metadata]) {
    const value = source?.["skillId"];
    if (typeof value === "string" && value.length > 0) return value;
  }
  return undefined;
}
