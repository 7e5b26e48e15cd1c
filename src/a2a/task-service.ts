import type {
  A2ATaskState,
  Message,
  PushNotificationConfig,
  StreamEvent,
  Task,
  TaskPushNotificationConfig,
} from "../domain/a2a-types.js";
import { DomainError, invalidParams } from "../domain/errors.js";
import { isFinalA2AState, isTerminalA2AState } from "../domain/run-status.js";
import type { CallContext } from "../auth/call-context.js";
import { requireScope, type Principal } from "../auth/principal.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { TaskObserver } from "../engine/task-observer.js";
import type { StreamGate } from "../engine/task-admission.js";
import type { LiveIterable } from "../domain/live-stream.js";
import { parseStreamCursor } from "../domain/stream-cursor.js";
import type { StatelessSkills } from "../engine/stateless-skill.js";
import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import type { PushConfigService } from "../push/push-config-service.js";
import type { PushDeadLetter } from "../store/push-config-store.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { TaskRecord } from "../domain/task-record.js";
import { GenerationWaits, generationPassed } from "./generation-waits.js";
import type { TaskSizeLimits } from "../store/task-size-limits.js";
import { CallerStoreCalls } from "../store/store-call-budget.js";
import { decodePageToken, encodePageToken, pageSizeOf, type ListTasksQuery, type TaskPage } from "./task-list.js";
import type { AgentCard } from "./agent-card.js";
import { taskView, type HistoryLimit } from "./task-view.js";
import { historyInHead } from "../engine/task-history.js";
import { linkTraceContext } from "../observability/spans.js";
import { messageTraceContext } from "../domain/trace-context.js";
import { TaskStreams, type Opened } from "./task-streams.js";
import { MessageAdmission, skillIdOf, type SendParams } from "./message-admission.js";

export type { SendParams };

/** A2A_LONG_POLL_MAX_MS's default. */
export const DEFAULT_LONG_POLL_MAX_MS = 30_000;
/** A long-poll answers this long before the caller's deadline, so the answer still reaches it. */
const DEADLINE_MARGIN_MS = 50;

/** What `message/send` answers: the Task, or a Message for a stateless skill (A2A "Message or Task"). */
export type SendResult = Extract<StreamEvent, { kind: "task" | "message" }>;

export interface TaskServiceOptions {
  supervisor: TaskSupervisor;
  /** Committed tasks (reads never go through the supervisor's store). */
  reads: TaskReadPort;
  /** Waits and streams; its buffer is how far a subscriber may fall behind before it is dropped. */
  observer: TaskObserver;
  catalog: WorkflowCatalog;
  card: AgentCard;
  /** A blocking send that has not reached a final state by then returns the task as it is. */
  blockingTimeoutMs: number;
  /**
   * BLOCKING_FIRST_WRITE_MS: how long a blocking send's new task may run its pure work before its first
   * write, so a task that ends (or waits for input) by then is stored in one write; 0 writes it at once.
   */
  firstWriteWindowMs?: number;
  /** A caller's message over `maxMessageBytes` is refused before anything is looked up or stored. */
  sizeLimits: TaskSizeLimits;
  /** Push-config registration and reads (answers push-not-supported when push is disabled). */
  push: PushConfigService;
  /** MAX_INPUT_DEPTH: a message whose data or metadata nests deeper is refused before anything is stored. */
  maxInputDepth: number;
  /** Issues the signed resolve token shown as `metadata.openwop.interruptToken` (none when it returns undefined). */
  interruptToken?: (record: TaskRecord, context: TaskContext, principal: Principal) => string | undefined;
  /** Answers messages for stateless skills (`stateless: true`) without creating a task. */
  stateless?: StatelessSkills;
  /** STORE_TIMEOUT_MS: the longest a call waits for one store operation (the caller's deadline may cut it shorter). */
  storeTimeoutMs?: number;
  /**
   * STREAM_RESUME_MAX_EVENTS: how many log events a resumed subscription replays at most; a cursor further
   * behind gets the Task snapshot first instead (marked `metadata.openwop.resume: "snapshot"`).
   */
  resumeMaxEvents?: number;
  /** A2A_LONG_POLL_MAX_MS: the longest a GetTask with `currentGeneration` waits (the caller's deadline may cut it shorter). */
  longPollMaxMs?: number;
  /** The streams limit of TENANT_LIMITS (message streams and subscriptions); absent: unlimited. */
  streamGate?: StreamGate;
}

/**
 * The version-neutral A2A operations. Protocol bindings (JSON-RPC, gRPC/Connect, HTTP+JSON, any A2A version)
 * decode their wire shapes into these calls and encode the results; none of them holds task logic.
 */
export class TaskService {
  /** Store calls bounded by the caller's deadline and STORE_TIMEOUT_MS. */
  private readonly storeCalls: CallerStoreCalls;
  /** Long-polls (`currentGeneration`) waiting for a commit; those on one task and generation share one wait. */
  private readonly generationWaits: GenerationWaits;
  /** Message streams and re-attaching subscriptions. */
  private readonly streams: TaskStreams;
  /** A caller's message taken in: a reply to its task, or a new task created once. */
  private readonly admission: MessageAdmission;

  constructor(private readonly options: TaskServiceOptions) {
    this.storeCalls = new CallerStoreCalls(options.storeTimeoutMs);
    const { supervisor, reads, catalog, push, sizeLimits, maxInputDepth } = options;
    this.admission = new MessageAdmission({
      supervisor,
      reads,
      catalog,
      push,
      sizeLimits,
      maxInputDepth,
      storeCalls: this.storeCalls,
    });
    this.streams = new TaskStreams({
      observer: options.observer,
      view: (record, history, ctx) => this.view(record, history, ctx),
      ...(options.resumeMaxEvents !== undefined ? { resumeMaxEvents: options.resumeMaxEvents } : {}),
      ...(options.streamGate ? { gate: options.streamGate } : {}),
    });
    this.generationWaits = new GenerationWaits(options.observer, options.longPollMaxMs ?? DEFAULT_LONG_POLL_MAX_MS);
  }

  /** Long-polls waiting now (a caller gone is no longer counted), and the observer waits they share. */
  get longPollsWaiting(): { callers: number; waits: number } {
    return this.generationWaits.waiting;
  }

  get agentCard(): AgentCard {
    return this.options.card;
  }

  /** A2A `message/send`: a Message for a stateless skill, else the Task. */
  async send(params: SendParams, ctx: CallContext): Promise<SendResult> {
    const answer = await this.statelessAnswer(params, ctx);
    return answer ? { kind: "message", message: answer } : { kind: "task", task: await this.sendMessage(params, ctx) };
  }

  /** Always a task, also for a stateless skill (then a durable run of it, as the OpenWOP runs API starts). */
  async sendMessage(params: SendParams, ctx: CallContext): Promise<Task> {
    const record = await this.admission.accept(params, ctx, params.blocking ? this.firstWriteWindow(ctx) : 0);
    // A task stored at its end (or a repeat of a finished one) needs no wait, and no read to start one.
    const settled =
      params.blocking && !isFinalA2AState(record.a2a.state) ? await this.waitUntilFinal(record, ctx) : record;
    return this.view(settled, params.history, ctx);
  }

  /**
   * The Task first, then every status and artifact update in commit order, until a final state: a terminal
   * one, or an interrupt (A2A §3.1.2, §11.7; the reply is a new send, which streams the rest). A stateless
   * skill's answer is its one Message.
   */
  streamMessage(params: SendParams, ctx: CallContext): AsyncGenerator<StreamEvent> & LiveIterable<StreamEvent> {
    const open = async (): Promise<Opened> => {
      const answer = await this.statelessAnswer(params, ctx);
      if (answer) return { kind: "message", message: answer };
      return { start: await this.admission.accept(params, ctx), history: params.history, endsAt: isFinalA2AState };
    };
    return this.streams.stream(open, ctx);
  }

  /**
   * `afterGeneration` (A2A 1.1 draft `currentGeneration`): a long-poll. The task is answered at once when its
   * generation already exceeds it or it is terminal (it will not change again); otherwise when the next commit
   * (of any instance) takes it past, or as it is at A2A_LONG_POLL_MAX_MS or the caller's deadline.
   */
  async getTask(
    taskId: string,
    history: HistoryLimit,
    ctx: CallContext,
    options: { afterGeneration?: number } = {},
  ): Promise<Task> {
    requireScope(ctx.principal, "runs:read");
    const read = () => this.storeCalls.read(ctx, () => this.options.reads.get(taskId, ctx.principal.tenant));
    let record = await read();
    const after = options.afterGeneration;
    if (after !== undefined && !generationPassed(record, after)) {
      const waitMs = Math.min(
        this.options.longPollMaxMs ?? DEFAULT_LONG_POLL_MAX_MS,
        ctx.deadline !== undefined ? Math.max(0, ctx.deadline - Date.now() - DEADLINE_MARGIN_MS) : Infinity,
      );
      const changed = await this.generationWaits.wait(record, after, waitMs, ctx.signal);
      // Nothing passed it in time: the task as it is now (one more read), unless nobody is there to answer.
      record = changed ?? (ctx.signal?.aborted ? record : await read());
    }
    return this.view(record, history, ctx);
  }

  async cancelTask(taskId: string, ctx: CallContext): Promise<Task> {
    requireScope(ctx.principal, "runs:cancel");
    const record = await this.storeCalls.bounded(ctx, () => this.options.supervisor.cancel(taskId, ctx.principal));
    return this.view(
      await this.waitUntil(record, ctx, (r) => isTerminalA2AState(r.a2a.state), this.options.blockingTimeoutMs),
      undefined,
      ctx,
    );
  }

  /**
   * Re-attach to a task: read-only, it never re-runs anything. The stream stays open through interrupts and
   * ends only at a terminal state (OpenWOP RFC 0100, A2A 1.0 §3.1.6): whoever re-attaches to a task waiting
   * for input sees the reply's effect and the rest of the run on the same stream. A terminal task answers its
   * Task and closes, or, with `terminal: "refuse"` (A2A 1.0 SubscribeToTask), is refused as an unsupported
   * operation.
   */
  subscribe(
    taskId: string,
    ctx: CallContext,
    options: { terminal?: "task" | "refuse" } = {},
  ): AsyncGenerator<StreamEvent> & LiveIterable<StreamEvent> {
    const open = async (): Promise<Opened> => {
      requireScope(ctx.principal, "runs:read");
      // A Last-Event-ID that is not a cursor is refused before the task is read.
      const cursor = ctx.resumeFrom === undefined ? undefined : parseStreamCursor(ctx.resumeFrom);
      const record = await this.storeCalls.read(ctx, () => this.options.reads.get(taskId, ctx.principal.tenant));
      if (cursor)
        return {
          start: record,
          history: undefined,
          endsAt: isTerminalA2AState,
          ...this.streams.resumeOf(record, cursor),
        };
      if (options.terminal === "refuse" && isTerminalA2AState(record.a2a.state)) {
        throw new DomainError(
          "unsupported-operation",
          `Task ${taskId} is in a terminal state (${record.a2a.state}) and cannot be subscribed to; this operation is not supported (read it with GetTask)`,
          { taskId, state: record.a2a.state },
        );
      }
      return { start: record, history: undefined, endsAt: isTerminalA2AState };
    };
    return this.streams.stream(open, ctx);
  }

  /** A page of the caller's tenant's tasks, newest first (A2A 1.0 ListTasks). */
  async listTasks(query: ListTasksQuery, ctx: CallContext): Promise<TaskPage> {
    requireScope(ctx.principal, "runs:read");
    const pageSize = pageSizeOf(query.pageSize);
    const after = query.pageToken ? decodePageToken(query.pageToken) : undefined;
    const page = await this.storeCalls.read(ctx, () =>
      this.options.reads.list({
        tenant: ctx.principal.tenant,
        ...(query.contextId ? { contextId: query.contextId } : {}),
        ...(query.state ? { state: query.state } : {}),
        ...(query.statusTimestampAfter ? { updatedAtOrAfter: query.statusTimestampAfter } : {}),
        ...(after ? { after } : {}),
        limit: pageSize + 1,
      }),
    );
    const records = page.records.slice(0, pageSize);
    const last = records.at(-1);
    return {
      tasks: await Promise.all(
        records.map(async (r) => {
          const task = await this.view(r, query.history, ctx);
          return query.includeArtifacts ? task : { ...task, artifacts: [] };
        }),
      ),
      nextPageToken: page.records.length > pageSize && last ? encodePageToken(last) : "",
      pageSize,
      totalSize: page.total,
    };
  }

  /** The durable read model; `pushConfig` shows the task's push target (url and token fingerprint only). */
  async getA2ATaskState(taskId: string, ctx: CallContext): Promise<A2ATaskState> {
    requireScope(ctx.principal, "runs:read");
    const record = await this.storeCalls.read(ctx, () => this.options.reads.get(taskId, ctx.principal.tenant));
    const pushConfig = await this.storeCalls.bounded(ctx, () => this.options.push.stateView(record));
    return { ...record.a2a, ...(pushConfig ? { pushConfig } : {}) };
  }

  // ---------------------------------------------------------------- push notification configs
  // Registering a webhook (and reading its secrets back) is webhook management: scope webhooks:manage.

  /** Create or replace (upsert by config id; without one, a new config: `PushConfigService.set`). The URL is checked before the task is looked up. */
  async setPushConfig(
    taskId: string,
    config: PushNotificationConfig,
    ctx: CallContext,
    path?: string,
  ): Promise<TaskPushNotificationConfig> {
    requireScope(ctx.principal, "webhooks:manage");
    return this.storeCalls.bounded(ctx, () => this.options.push.set(taskId, config, ctx.principal, path));
  }

  /** Without a config id: the config whose id is the task id. */
  async getPushConfig(
    taskId: string,
    configId: string | undefined,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig> {
    requireScope(ctx.principal, "webhooks:manage");
    return this.storeCalls.bounded(ctx, () => this.options.push.get(taskId, configId, ctx.principal));
  }

  async listPushConfigs(taskId: string, ctx: CallContext): Promise<TaskPushNotificationConfig[]> {
    requireScope(ctx.principal, "webhooks:manage");
    return this.storeCalls.bounded(ctx, () => this.options.push.list(taskId, ctx.principal));
  }

  async deletePushConfig(taskId: string, configId: string, ctx: CallContext): Promise<void> {
    requireScope(ctx.principal, "webhooks:manage");
    return this.storeCalls.bounded(ctx, () => this.options.push.delete(taskId, configId, ctx.principal));
  }

  /** Pushes given up on, newest first (operators; the caller's tenant only). */
  async pushDeadLetters(filter: { taskId?: string; limit: number }, ctx: CallContext): Promise<PushDeadLetter[]> {
    requireScope(ctx.principal, "webhooks:manage");
    return this.storeCalls.bounded(ctx, () => this.options.push.deadLetters(ctx.principal, filter));
  }

  // ------------------------------------------------------------------------------------------

  /** A new message to a stateless skill: its answer (nothing is stored). Undefined for every other message. */
  private async statelessAnswer(params: SendParams, ctx: CallContext): Promise<Message | undefined> {
    const { message } = params;
    // Every send and stream comes here first: the message's own trace context is the one to follow (interop.md).
    linkTraceContext(messageTraceContext(message));
    const stateless = this.options.stateless;
    if (message.taskId || !stateless) return undefined;
    const workflow = this.options.catalog.get(
      skillIdOf(message, params.metadata) ?? this.options.catalog.defaultWorkflowId,
    );
    if (!workflow?.stateless) return undefined;
    if (message.role !== "user") throw invalidParams(`message.role must be "user" (got "${message.role}")`);
    requireScope(ctx.principal, "runs:create");
    if (params.pushNotificationConfig) {
      throw invalidParams(
        `skill "${workflow.id}" answers with a Message and creates no task, so there is nothing to notify about; send it without a push notification config`,
      );
    }
    return stateless.answer(workflow, message, ctx.signal ?? new AbortController().signal, ctx.principal.tenant);
  }

  /** How long a blocking send's new task may run before its first write: the window, within the caller's wait and deadline. */
  private firstWriteWindow(ctx: CallContext): number {
    const window = Math.min(this.options.firstWriteWindowMs ?? 0, this.options.blockingTimeoutMs);
    return ctx.deadline === undefined ? window : Math.min(window, ctx.deadline - Date.now() - DEADLINE_MARGIN_MS);
  }

  /** The Task as of `record`; a history longer than the head's window of newest messages is read from the log. */
  private async view(record: TaskRecord, history: HistoryLimit, ctx: CallContext): Promise<Task> {
    const context = this.options.reads.contextOf(record);
    // Mostly the head's window holds it: only a read of the log needs the caller's store budget.
    const messages =
      historyInHead(context, history) ??
      (await this.storeCalls.read(ctx, () => this.options.reads.historyOf(record, history)));
    const interruptToken = this.options.interruptToken?.(record, context, ctx.principal);
    return taskView(record, context, messages, interruptToken ? { interruptToken } : {});
  }

  private waitUntilFinal(record: TaskRecord, ctx: CallContext): Promise<TaskRecord> {
    return this.waitUntil(record, ctx, (r) => isFinalA2AState(r.a2a.state), this.options.blockingTimeoutMs);
  }

  private waitUntil(
    start: TaskRecord,
    ctx: CallContext,
    until: (r: TaskRecord) => boolean,
    timeoutMs: number,
  ): Promise<TaskRecord> {
    return this.options.observer.waitUntil({
      taskId: start.taskId,
      tenant: ctx.principal.tenant,
      start,
      until,
      timeoutMs,
      signal: ctx.signal,
    });
  }
}
